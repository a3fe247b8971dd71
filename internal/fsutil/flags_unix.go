//go:build unix

package fsutil

import (
	"os"
	"syscall"
)

const (
	oNoCTTY   = syscall.O_NOCTTY
	oNoFollow = syscall.O_NOFOLLOW
	oNonblock = syscall.O_NONBLOCK
)

// devOf returns the device a file is on.
func devOf(fi os.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true //nolint:unconvert // Dev is 32 bits on some systems
}
