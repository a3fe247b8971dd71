//go:build !linux

package hotplug

import (
	"errors"
	"log/slog"
	"runtime"
)

func newSource(int, *slog.Logger) (linkSource, error) {
	return nil, errors.New("hotplug: watching links is not supported on " + runtime.GOOS)
}
