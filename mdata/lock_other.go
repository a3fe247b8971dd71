//go:build !(linux || freebsd || openbsd || netbsd || darwin || dragonfly)

package mdata

import (
	"context"
	"time"
)

// On systems without fcntl locks (Windows) the serial port itself is
// exclusive: a second open of a COM port fails. Clients in this process
// still take turns.
type portLock struct{ unlockPath func() }

func lockPort(ctx context.Context, path string) (*portLock, error) {
	release, err := lockPath(ctx, path)
	if err != nil {
		return nil, err
	}
	return &portLock{unlockPath: release}, nil
}

func (*portLock) fixTermios() error { return nil }
func (l *portLock) release()        { l.unlockPath() }

// write is not available here: the port's own Write is used.
func (*portLock) write(p []byte, deadline time.Time, closed func() bool) (int, error) {
	return 0, errNoLockWrite
}
