//go:build linux

package agent

import (
	"context"
	"log/slog"
	"os"

	"github.com/godbus/dbus/v5"
)

// reloadNetworkd asks a running systemd-networkd to reload its files, over
// D-Bus. It reports whether it did; without networkd there is nothing to do.
func reloadNetworkd(ctx context.Context, log *slog.Logger) bool {
	if _, err := os.Stat("/run/systemd/netif"); err != nil {
		log.Info("network: systemd-networkd is not running; files are in place for when it starts")
		return false
	}
	if _, err := os.Stat("/run/dbus/system_bus_socket"); err != nil {
		// Early in boot (before dbus.socket) networkd reads the files
		// when it starts: nothing to ask.
		log.Info("network: no system D-Bus yet; systemd-networkd will read the files when it starts")
		return false
	}
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		log.Warn("network: cannot reach D-Bus to reload systemd-networkd", "err", err)
		return false
	}
	defer conn.Close()
	obj := conn.Object("org.freedesktop.network1", "/org/freedesktop/network1")
	if call := obj.CallWithContext(ctx, "org.freedesktop.network1.Manager.Reload", 0); call.Err != nil {
		log.Warn("network: systemd-networkd reload failed", "err", call.Err)
		return false
	}
	log.Info("network: systemd-networkd reloaded")
	return true
}
