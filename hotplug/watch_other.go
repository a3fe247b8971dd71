//go:build !linux

package hotplug

import (
	"fmt"
	"log/slog"

	"github.com/seedkeeper/seedkeeper/internal/goos"
)

func newSource(int, *slog.Logger) (linkSource, error) {
	return nil, fmt.Errorf("hotplug: %w", goos.Unsupported("watching links"))
}
