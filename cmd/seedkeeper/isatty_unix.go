//go:build linux || freebsd || openbsd || netbsd || darwin || dragonfly

package main

import "golang.org/x/sys/unix"

func isatty(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	return err == nil
}
