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

// unlinkFile removes the file, link or special file p, never a directory
// (os.Remove falls back to rmdir: a file swapped for an empty directory
// after it was checked would go).
func unlinkFile(p string) error {
	if err := syscall.Unlink(p); err != nil {
		if err == syscall.EISDIR || err == syscall.EPERM {
			if fi, lerr := os.Lstat(p); lerr == nil && fi.IsDir() {
				return &os.PathError{Op: "remove", Path: p, Err: ErrIsDir}
			}
		}
		return &os.PathError{Op: "remove", Path: p, Err: err}
	}
	return nil
}
