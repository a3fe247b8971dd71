//go:build !linux

package mdatatest

import (
	"fmt"
	"runtime"
)

// NewPTY is only implemented on Linux.
func NewPTY() (*PTY, error) {
	return nil, fmt.Errorf("mdatatest: ptys are not supported on %s", runtime.GOOS)
}
