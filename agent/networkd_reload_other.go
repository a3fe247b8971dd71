//go:build !linux

package agent

import (
	"context"
	"log/slog"
)

// reloadNetworkd: systemd-networkd exists only on Linux.
func reloadNetworkd(ctx context.Context, log *slog.Logger) bool { return false }
