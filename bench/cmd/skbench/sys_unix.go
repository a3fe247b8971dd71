//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSS is the peak RSS of a finished child in KiB (Linux reports
// ru_maxrss in KiB), or 0 when the system does not say.
func maxRSS(st *os.ProcessState) int64 {
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
