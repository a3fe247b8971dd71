//go:build linux

package agent

import (
	"context"

	"github.com/godbus/dbus/v5"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
)

// callSystemBus makes a method call without arguments on the system D-Bus.
func callSystemBus(ctx context.Context, c stacks.BusCall) error {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Object(c.Dest, dbus.ObjectPath(c.Path)).CallWithContext(ctx, c.Method, 0).Err
}
