//go:build unix

package fsutil

import "syscall"

const (
	oNoCTTY   = syscall.O_NOCTTY
	oNoFollow = syscall.O_NOFOLLOW
	oNonblock = syscall.O_NONBLOCK
)
