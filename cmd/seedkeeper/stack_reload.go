package main

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// reloadStack asks the running network stack to read the files just
// written: networkd over D-Bus; NetworkManager with "nmcli general reload
// conf" and "nmcli connection reload" (it then autoconnects the profiles
// by MAC); ifupdown by
// starting ifup@NAME.service for each rendered interface (outside our
// sandbox, as udev does for allow-hotplug). A stack that is not running
// yet reads the files when it starts.
func reloadStack(ctx context.Context, log *slog.Logger, stack netcfg.Stack, dir string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	run := func(name string, args ...string) bool {
		if b, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			log.Warn("network: "+name+" failed", "args", strings.Join(args, " "), "err", err, "output", strings.TrimSpace(string(b)))
			return false
		}
		log.Info("network: ran " + name + " " + strings.Join(args, " "))
		return true
	}
	switch {
	case stack == netcfg.StackNetworkManager:
		// Not /run/NetworkManager: the keyfiles just written made it. No
		// system bus (early boot) means NetworkManager has not started.
		if _, err := os.Stat("/run/dbus/system_bus_socket"); err != nil {
			log.Info("network: no system D-Bus yet; NetworkManager reads the keyfiles when it starts")
			return false
		}
		return run("nmcli", "general", "reload", "conf") && run("nmcli", "connection", "reload")
	case stack == netcfg.StackIfupdown:
		if _, err := os.Stat("/run/network/ifstate"); err != nil {
			log.Info("network: ifupdown has not run yet; networking.service reads the stanzas")
			return false
		}
		names := ifupdownNames(filepath.Join(dir, netcfg.IfupdownFile))
		if len(names) == 0 {
			return false
		}
		ok := true
		for _, n := range names {
			ok = run("systemctl", "start", "--no-block", "ifup@"+n+".service") && ok
		}
		return ok
	default:
		return reloadNetworkd(ctx, log)
	}
}

// ifupdownNames lists the interfaces of seedkeeper's stanza file that
// ifupdown has not brought up yet.
func ifupdownNames(file string) []string {
	state, _ := os.ReadFile("/run/network/ifstate")
	up := map[string]bool{}
	for _, l := range strings.Split(string(state), "\n") {
		if n, _, ok := strings.Cut(l, "="); ok {
			up[n] = true
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "auto" && !up[f[1]] {
			names = append(names, f[1])
		}
	}
	return names
}
