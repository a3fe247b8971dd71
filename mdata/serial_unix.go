//go:build linux || freebsd || openbsd || netbsd || darwin || dragonfly

package mdata

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// On Unix the port is one non-blocking descriptor wrapped in an os.File,
// so Go's poller gives reads and writes their deadlines and Close unblocks
// them; the descriptor also holds the port's lock and carries its termios.
// No serial library is needed for that.

// Open opens the port, takes its lock (see lockPort), puts it in raw mode
// and discards what the kernel had buffered before we came.
func (s serialTransport) Open(ctx context.Context) (Conn, error) {
	path := string(s)
	release, err := lockPath(ctx, path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		release()
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, permanent(fmt.Errorf("opening %s: %w", path, fs.ErrNotExist))
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return nil, permanent(fmt.Errorf("opening %s: %w", path, fs.ErrPermission))
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := makeRaw(fd); err != nil {
		unix.Close(fd)
		release()
		if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) {
			return nil, permanent(fmt.Errorf("%s is not a serial port: %w", path, err))
		}
		return nil, permanent(fmt.Errorf("setting raw mode on %s: %w", path, err))
	}
	// A non-blocking descriptor goes to the poller.
	c := &serialConn{File: os.NewFile(uintptr(fd), path), path: path, unlockPath: release}
	if err := c.lock(ctx); err != nil {
		c.File.Close()
		release()
		return nil, err
	}
	c.held = true
	c.control(flushInput)
	return c, nil
}

// serialConn is the port: an os.File over its non-blocking descriptor.
type serialConn struct {
	*os.File
	path       string
	mu         sync.Mutex
	held       bool // the lock (in process and fcntl) is ours
	unlockPath func()
}

// control runs fn on the descriptor without putting it in blocking mode
// (as File.Fd would), so that the poller keeps it.
func (c *serialConn) control(fn func(fd int) error) error {
	rc, err := c.File.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// lock takes the port's write lock over the whole file, waiting for other
// holders (mdata-client, cloud-init, another seedkeeper) for as long as
// ctx allows.
//
// The wait polls the non-blocking lock rather than sleeping in F_SETLKW:
// a blocked F_SETLKW cannot be cancelled, and an abandoned waiter would
// hold a descriptor (and, with classic locks, could later release the
// lock a live session holds) for as long as the other holder keeps it.
func (c *serialConn) lock(ctx context.Context) error {
	for {
		err := c.control(func(fd int) error {
			fl := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
			return unix.FcntlFlock(uintptr(fd), lockCmd, &fl)
		})
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("locking %s: %w", c.path, err)
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// lockPoll is how often a held port is tried again.
const lockPoll = 20 * time.Millisecond

// unlock lets go of the port's lock, in the kernel and in this process,
// keeping the port open.
func (c *serialConn) unlock() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held {
		return
	}
	c.control(func(fd int) error {
		fl := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: 0, Len: 0}
		return unix.FcntlFlock(uintptr(fd), lockCmd, &fl)
	})
	c.held = false
	c.unlockPath()
}

// relock takes the lock again after unlock, waiting as Open does.
func (c *serialConn) relock(ctx context.Context) error {
	release, err := lockPath(ctx, c.path)
	if err != nil {
		return err
	}
	if err := c.lock(ctx); err != nil {
		release()
		return err
	}
	c.mu.Lock()
	c.held, c.unlockPath = true, release
	c.mu.Unlock()
	return nil
}

// Write writes all of p (the reference client once lost frames to short
// writes, mdata-client PR #25); os.File already loops on short writes and
// waits for room through the poller, within the write deadline.
func (c *serialConn) Write(p []byte) (int, error) { return c.File.Write(p) }

// Close closes the port, which drops its lock, and lets the next client in
// this process have it.
func (c *serialConn) Close() error {
	err := c.File.Close()
	c.mu.Lock()
	held := c.held
	c.held = false
	c.mu.Unlock()
	if held {
		c.unlockPath()
	}
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// makeRaw puts the port in raw mode as the reference client does
// (cfmakeraw, 8 data bits, receiver on, modem lines ignored), with HUPCL
// cleared so that closing the port does not hang up the line, and keeps
// the speed the port has.
func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON | unix.IXOFF
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB | unix.HUPCL
	t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, ioctlSetTermios, t)
}
