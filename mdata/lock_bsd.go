//go:build freebsd || openbsd || netbsd || darwin || dragonfly

package mdata

import "golang.org/x/sys/unix"

// Classic fcntl record locks, the ones mdata-client takes.
const (
	lockCmd = unix.F_SETLK

	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)

// flushInput discards what the kernel received before we came (tcflush
// TCIFLUSH: TIOCFLUSH with FREAD).
func flushInput(fd int) error { return unix.IoctlSetPointerInt(fd, unix.TIOCFLUSH, unix.TCIFLUSH) }
