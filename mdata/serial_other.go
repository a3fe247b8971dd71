//go:build !(linux || freebsd || openbsd || netbsd || darwin || dragonfly)

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

// Where there is no poller for serial ports and no fcntl lock (Windows),
// go.bug.st/serial does the work: the port is exclusive there (a second
// open of a COM port fails), and clients in this process take turns.

func (s serialTransport) Open(ctx context.Context) (Conn, error) {
	path := string(s)
	release, err := lockPath(ctx, path)
	if err != nil {
		return nil, err
	}
	port, err := serial.Open(path, &serial.Mode{BaudRate: 9600})
	if err != nil {
		release()
		var pe *serial.PortError
		if errors.As(err, &pe) && pe.Code() == serial.PermissionDenied {
			return nil, permanent(fmt.Errorf("opening %s: %w", path, os.ErrPermission))
		}
		return nil, classifyOpen(fmt.Errorf("opening %s: %w", path, err))
	}
	port.ResetInputBuffer()
	return &serialConn{port: port, release: release}, nil
}

// serialConn adapts a go.bug.st/serial port, which has read timeouts, to
// the Conn interface, which has read deadlines.
type serialConn struct {
	port    serial.Port
	release func()

	mu       sync.Mutex
	deadline time.Time
	closed   bool
}

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

// SetWriteDeadline is accepted and not enforced: the library's writes
// have no deadline here.
func (c *serialConn) SetWriteDeadline(t time.Time) error { return nil }

// Write writes all of p (the reference client once lost frames to short
// writes, mdata-client PR #25).
func (c *serialConn) Write(p []byte) (int, error) {
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
	c.release()
	return err
}
