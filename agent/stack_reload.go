package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// reloadStack asks the running network stack to read the files just
// written: networkd over D-Bus; NetworkManager with "nmcli general reload
// conf" and "nmcli connection reload" (it then autoconnects the profiles
// by MAC); ifupdown by starting ifup@NAME.service for each rendered
// interface (outside our sandbox, as udev does for allow-hotplug). A stack
// that is not running yet reads the files when it starts.
func (e *Env) reloadStack(ctx context.Context, stack netcfg.Stack, dir string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	run := func(name string, args ...string) bool {
		if b, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			e.Log.Warn("network: "+name+" failed", "args", strings.Join(args, " "), "err", err, "output", strings.TrimSpace(string(b)))
			return false
		}
		e.Log.Info("network: ran " + name + " " + strings.Join(args, " "))
		return true
	}
	switch stack {
	case netcfg.StackNetworkManager:
		// Not /run/NetworkManager: the keyfiles just written made it. No
		// system bus (early boot) means NetworkManager has not started.
		if _, err := os.Stat(e.Root.Path("/run/dbus/system_bus_socket")); err != nil {
			e.Log.Info("network: no system D-Bus yet; NetworkManager reads the keyfiles when it starts")
			return false
		}
		return run("nmcli", "general", "reload", "conf") && run("nmcli", "connection", "reload")
	case netcfg.StackIfupdown:
		if _, err := os.Stat(e.Root.Path("/run/network/ifstate")); err != nil {
			e.Log.Info("network: ifupdown has not run yet; networking.service reads the stanzas")
			return false
		}
		names := e.ifupdownNames(filepath.Join(dir, netcfg.IfupdownFile))
		if len(names) == 0 {
			return false
		}
		ok := true
		for _, n := range names {
			ok = run("systemctl", "start", "--no-block", "ifup@"+n+".service") && ok
		}
		return ok
	default:
		return reloadNetworkd(ctx, e.Log)
	}
}

// ifupdownNames lists the interfaces of seedkeeper's stanza file (file,
// inside the root) that ifupdown has not brought up yet. Neither file is
// read through a symbolic link.
func (e *Env) ifupdownNames(file string) []string {
	state, _ := fsutil.ReadFileNoFollow(context.Background(), e.Root.Path("/run/network/ifstate"), fsutil.SmallFile)
	up := map[string]bool{}
	for _, l := range strings.Split(string(state), "\n") {
		if n, _, ok := strings.Cut(l, "="); ok {
			up[n] = true
		}
	}
	b, err := fsutil.ReadFileNoFollow(context.Background(), e.Root.Path(file), fsutil.SmallFile)
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
