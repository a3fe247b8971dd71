//go:build !linux

package mdatatest

import (
	"fmt"

	"github.com/seedkeeper/seedkeeper/internal/goos"
)

// NewPTY is only implemented on Linux.
func NewPTY() (*PTY, error) {
	return nil, fmt.Errorf("mdatatest: %w", goos.Unsupported("ptys"))
}
