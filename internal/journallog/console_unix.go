//go:build unix

package journallog

import (
	"io"
	"syscall"
)

// OpenConsole opens /dev/console for writing, never as the controlling
// terminal and without blocking: a line the console cannot take now is
// dropped, not waited for (the descriptor stays out of Go's poller, which
// would wait); nil when it cannot be opened.
func OpenConsole() io.Writer {
	fd, err := syscall.Open("/dev/console", syscall.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return consoleFD(fd)
}

type consoleFD int

// Write writes b once; what the console does not take now is dropped.
func (c consoleFD) Write(b []byte) (int, error) {
	n, err := syscall.Write(int(c), b)
	if err == syscall.EAGAIN {
		return len(b), nil
	}
	return n, err
}
