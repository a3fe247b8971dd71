//go:build !(linux || freebsd || openbsd || netbsd || darwin || dragonfly)

package mdata

import "context"

// On systems without fcntl locks (Windows) the serial port itself is
// exclusive: a second open of a COM port fails.
type portLock struct{}

func lockPort(ctx context.Context, path string) (*portLock, error) { return &portLock{}, nil }

func (*portLock) fixTermios() error { return nil }
func (*portLock) release()          {}
