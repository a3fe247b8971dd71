package netcfg

import (
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/stacks"
)

// Networkd is systemd-networkd (also what netplan renders for on Ubuntu
// and newer Debian): files in /run/systemd/network. Not /run/systemd/netif
// for Running: systemd's tmpfiles make it on every system, networkd or
// not; networkd writes the state file.
var Networkd = register(&Stack{
	Name: "networkd", Title: "systemd-networkd", Unit: "systemd-networkd.service",
	Running: "/run/systemd/netif/state",
	render:  renderNetworkdFiles,
	keys:    except(Noted, "v2 dhcp6-overrides: use-routes use-mtu send-hostname hostname"),
	ahead: func(c *Config, owned, absent func(*Interface) bool, drivers []string) (*StackFiles, error) {
		files, notes, err := renderNetworkdAwaited(c, owned, absent, drivers)
		return &StackFiles{Dir: networkdDir, Files: files, Mode: 0o644, Notes: notes}, err
	},
	duties: networkdDuties,
})

var networkdDuties = stacks.Duties{
	Places: networkdPlaces, Reload: reloadNetworkd,
	Netplan: func(string) (string, string, bool) {
		return "systemd-networkd gives it seedkeeper's file, which sorts before netplan's", "", true
	},
}

// networkdDir is where seedkeeper writes systemd-networkd's files: the
// runtime directory, which outranks /usr/lib and loses to /etc, so that a
// person's own file in /etc/systemd/network still wins.
const networkdDir = "/run/systemd/network"

// renderNetworkdFiles renders the files and their notes as views of one
// plan of the owned links (Config.Plan), made once: networkd configures
// every owned link, and the global DNS is placed among them all.
func renderNetworkdFiles(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	plans, _ := c.Plan(owned)
	all := make([]*LinkPlan, len(plans))
	for i := range plans {
		all[i] = &plans[i]
	}
	placeDNS(all, c.DNS)
	files, err := networkdFiles(all)
	if err != nil {
		return nil, err
	}
	return &StackFiles{Dir: networkdDir, Files: files, Mode: 0o644, Notes: UnappliedBy("networkd", interfacesOf(all))}, nil
}

func networkdPlaces(string) ([]stacks.Place, error) {
	return []stacks.Place{{Dir: networkdDir, Match: func(n string) bool {
		return strings.HasPrefix(n, networkdPrefix+"seedkeeper-") || strings.HasPrefix(n, legacyNetworkdPrefix+"seedkeeper-")
	}}}, nil
}

// reloadNetworkd asks a running networkd to reload its files over D-Bus.
func reloadNetworkd(root string, _ map[string][]byte) stacks.Reload {
	switch {
	case !exists(root, "/run/systemd/netif"):
		return stacks.Reload{Note: "systemd-networkd is not running; files are in place for when it starts"}
	case !exists(root, systemBus):
		// Early in boot (before dbus.socket) networkd reads the files
		// when it starts: nothing to ask.
		return stacks.Reload{Note: "no system D-Bus yet; systemd-networkd will read the files when it starts"}
	}
	return stacks.Reload{Steps: []stacks.ReloadStep{{Bus: &stacks.BusCall{
		Dest: "org.freedesktop.network1", Path: "/org/freedesktop/network1", Method: "org.freedesktop.network1.Manager.Reload",
	}}}}
}
