//go:build freebsd || openbsd || netbsd || darwin || dragonfly

package main

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TIOCGETA
