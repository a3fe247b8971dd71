//go:build unix

package journallog

import (
	"io"
	"os"
	"syscall"
)

// OpenConsole opens /dev/console for writing, never as the controlling
// terminal and without blocking (a line the console cannot take now is
// dropped, not waited for); nil when it cannot be opened.
func OpenConsole() io.Writer {
	f, err := os.OpenFile("/dev/console", os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	return f
}
