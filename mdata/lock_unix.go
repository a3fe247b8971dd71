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

// portLock is a second descriptor on the serial port that holds the
// port's fcntl write lock and is used to adjust its termios.
type portLock struct {
	fd         int
	path       string
	orig       *unix.Termios
	once       sync.Once
	unlockPath func()
}

// lockPort opens path and takes a write lock over the whole file, waiting
// for other holders (mdata-client, cloud-init, another seedkeeper) for as
// long as ctx allows. Within this process a lock per path comes first, so
// two clients here never contend through the kernel.
//
// The wait polls the non-blocking lock rather than sleeping in F_SETLKW:
// a blocked F_SETLKW cannot be cancelled, and an abandoned waiter would
// hold a descriptor (and, with classic locks, could later release the
// lock a live session holds) for as long as the other holder keeps it.
func lockPort(ctx context.Context, path string) (*portLock, error) {
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
	orig, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		unix.Close(fd)
		release()
		return nil, permanent(fmt.Errorf("%s is not a serial port: %w", path, err))
	}
	lk := &portLock{fd: fd, path: path, orig: orig, unlockPath: release}
	for {
		fl := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		err := unix.FcntlFlock(uintptr(fd), lockCmd, &fl)
		if err == nil {
			return lk, nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EINTR) {
			lk.release()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			lk.release()
			return nil, ctx.Err()
		}
	}
}

// lockPoll is how often a held port is tried again.
const lockPoll = 20 * time.Millisecond

// write writes p to the port through the lock's descriptor, which is
// non-blocking, waiting for room until deadline (zero: no deadline) and
// giving up as soon as closed reports true. A write blocked in the kernel
// could not be interrupted by closing the port.
func (l *portLock) write(p []byte, deadline time.Time, closed func() bool) (int, error) {
	done := 0
	for done < len(p) {
		if closed() {
			return done, os.ErrClosed
		}
		n, err := unix.Write(l.fd, p[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == nil || errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EAGAIN):
			return done, err
		}
		wait := 100 * time.Millisecond
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return done, deadlineError{}
			}
			wait = min(wait, left)
		}
		fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLOUT}}
		if _, err := unix.Poll(fds, int(wait.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return done, err
		}
	}
	return done, nil
}

// fixTermios finishes raw mode the way the reference client does: HUPCL
// cleared, so that closing the port does not hang up the line, and the
// speed the port had before we opened it.
func (l *portLock) fixTermios() error {
	t, err := unix.IoctlGetTermios(l.fd, ioctlGetTermios)
	if err != nil {
		return err
	}
	t.Cflag &^= unix.HUPCL
	restoreSpeed(t, l.orig)
	return unix.IoctlSetTermios(l.fd, ioctlSetTermios, t)
}

func (l *portLock) release() {
	l.once.Do(func() {
		unix.Close(l.fd)
		l.unlockPath()
	})
}
