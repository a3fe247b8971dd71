//go:build freebsd || openbsd || netbsd || darwin || dragonfly

package mdata

import "golang.org/x/sys/unix"

// Classic fcntl record locks, the ones mdata-client takes.
const (
	lockCmd     = unix.F_SETLK
	lockWaitCmd = unix.F_SETLKW

	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)

func restoreSpeed(t, orig *unix.Termios) {
	t.Ispeed, t.Ospeed = orig.Ispeed, orig.Ospeed
}
