package mdata

import "golang.org/x/sys/unix"

// Open file description locks conflict with the classic fcntl record locks
// that mdata-client (F_SETLKW) and cloud-init (lockf) take, but belong to
// our descriptor rather than to the process: closing some other descriptor
// on the port cannot drop them, and two goroutines exclude each other.
const (
	lockCmd = unix.F_OFD_SETLK

	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)

// flushInput discards what the kernel received before we came (tcflush
// TCIFLUSH).
func flushInput(fd int) error { return unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH) }
