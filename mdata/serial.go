package mdata

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.bug.st/serial"
)

// Serial returns a transport over a serial port, such as /dev/ttyS1 in a
// KVM or bhyve guest. Each Open takes the port's fcntl write lock, the lock
// mdata-client and cloud-init take, so the three never interleave.
func Serial(path string) Transport { return serialTransport(path) }

type serialTransport string

func (s serialTransport) String() string { return "serial:" + string(s) }
func (s serialTransport) Shared() bool   { return true }

func (s serialTransport) Open(ctx context.Context) (Conn, error) {
	path := string(s)
	lk, err := lockPort(ctx, path)
	if err != nil {
		return nil, err
	}
	port, err := serial.Open(path, &serial.Mode{BaudRate: 9600})
	if err != nil {
		lk.release()
		var pe *serial.PortError
		if errors.As(err, &pe) && pe.Code() == serial.PermissionDenied {
			return nil, permanent(fmt.Errorf("opening %s: %w", path, os.ErrPermission))
		}
		return nil, classifyOpen(fmt.Errorf("opening %s: %w", path, err))
	}
	if err := lk.fixTermios(); err != nil {
		port.Close()
		lk.release()
		return nil, permanent(fmt.Errorf("setting raw mode on %s: %w", path, err))
	}
	port.ResetInputBuffer()
	return &serialConn{port: port, lock: lk}, nil
}

// serialConn adapts a go.bug.st/serial port, which has read timeouts, to
// the Conn interface, which has read deadlines.
type serialConn struct {
	port serial.Port
	lock *portLock

	mu       sync.Mutex
	deadline time.Time
	wdl      time.Time // write deadline
	closed   bool
}

// errNoLockWrite: the platform has no lock descriptor to write through.
var errNoLockWrite = errors.New("no lock descriptor to write through")

// deadlineError is returned by reads past the deadline; it matches
// os.ErrDeadlineExceeded like a net.Conn's.
type deadlineError struct{}

func (deadlineError) Error() string   { return "i/o timeout" }
func (deadlineError) Timeout() bool   { return true }
func (deadlineError) Temporary() bool { return true }
func (deadlineError) Is(target error) bool {
	return target == os.ErrDeadlineExceeded
}

func (c *serialConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return nil
}

func (c *serialConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	dl := c.deadline
	c.mu.Unlock()
	timeout := serial.NoTimeout
	if !dl.IsZero() {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return 0, deadlineError{}
		}
	}
	if err := c.port.SetReadTimeout(timeout); err != nil {
		return 0, err
	}
	n, err := c.port.Read(p)
	if n == 0 && err == nil {
		return 0, deadlineError{}
	}
	return n, err
}

func (c *serialConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.mu.Unlock()
	return nil
}

func (c *serialConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Write writes all of p (the reference client once lost frames to short
// writes, mdata-client PR #25), through the lock's non-blocking descriptor
// so that the write deadline and Close can end a write the host does not
// drain.
func (c *serialConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	dl := c.wdl
	c.mu.Unlock()
	n, err := c.lock.write(p, dl, c.isClosed)
	if !errors.Is(err, errNoLockWrite) {
		return n, err
	}
	total := 0
	for total < len(p) {
		n, err := c.port.Write(p[total:])
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, fmt.Errorf("serial write made no progress")
		}
	}
	return total, nil
}

func (c *serialConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.port.Close()
	c.lock.release()
	return err
}
