//go:build !linux

package agent

import (
	"context"
	"errors"
	"runtime"

	"github.com/seedkeeper/seedkeeper/internal/stacks"
)

// callSystemBus: the stacks that are asked over D-Bus exist only on Linux.
func callSystemBus(ctx context.Context, c stacks.BusCall) error {
	return errors.New("D-Bus calls are not supported on " + runtime.GOOS)
}
