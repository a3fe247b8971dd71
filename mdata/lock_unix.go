//go:build linux || freebsd || openbsd || netbsd || darwin || dragonfly

package mdata

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"golang.org/x/sys/unix"
)

// portLock is a second descriptor on the serial port that holds the
// port's fcntl write lock and is used to adjust its termios.
type portLock struct {
	fd   int
	path string
	orig *unix.Termios
	once sync.Once
}

// lockPort opens path and takes a write lock over the whole file, waiting
// for other holders (mdata-client, cloud-init, another seedkeeper) for as
// long as ctx allows.
func lockPort(ctx context.Context, path string) (*portLock, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
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
		return nil, permanent(fmt.Errorf("%s is not a serial port: %w", path, err))
	}
	lk := &portLock{fd: fd, path: path, orig: orig}

	fl := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	err = unix.FcntlFlock(uintptr(fd), lockCmd, &fl)
	if err == nil {
		return lk, nil
	}
	if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
		unix.Close(fd)
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// Someone else holds the port. Wait for the kernel to hand it over,
	// in a goroutine so the context can end the wait.
	done := make(chan error, 1)
	go func() {
		for {
			fl := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
			err := unix.FcntlFlock(uintptr(fd), lockWaitCmd, &fl)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			done <- err
			return
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		return lk, nil
	case <-ctx.Done():
		// Closing the descriptor once the wait ends releases the lock
		// it may have won.
		go func() { <-done; unix.Close(fd) }()
		return nil, ctx.Err()
	}
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
	l.once.Do(func() { unix.Close(l.fd) })
}
