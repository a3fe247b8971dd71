package mdata

import "golang.org/x/sys/unix"

// Open file description locks conflict with the classic fcntl record locks
// that mdata-client (F_SETLKW) and cloud-init (lockf) take, but belong to
// our descriptor rather than to the process: closing some other descriptor
// on the port cannot drop them, and two goroutines exclude each other.
const (
	lockCmd     = unix.F_OFD_SETLK
	lockWaitCmd = unix.F_OFD_SETLKW

	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)

func restoreSpeed(t, orig *unix.Termios) {
	const speedBits = unix.CBAUD | unix.CBAUDEX
	t.Cflag = t.Cflag&^speedBits | orig.Cflag&speedBits
	t.Ispeed, t.Ospeed = orig.Ispeed, orig.Ospeed
}
