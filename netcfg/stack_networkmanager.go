package netcfg

import (
	"path"
	"strings"
)

// NetworkManager (RHEL-family images, desktops): keyfiles in
// /run/NetworkManager/system-connections, and a drop-in in
// /run/NetworkManager/conf.d.
var NetworkManager = &Stack{
	Name: "networkmanager", Title: "NetworkManager", Unit: "NetworkManager.service",
	Programs: []string{"/usr/sbin/NetworkManager"},
	render:   renderNetworkManagerFiles, places: networkManagerPlaces, reload: reloadNetworkManager,
	ahead: RenderNetworkManagerAwaited,
}

func renderNetworkManagerFiles(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	files, skipped, err := RenderNetworkManager(c, owned)
	if err != nil {
		return nil, err
	}
	links, _, _, _ := physicalPlan(c, owned)
	sf := &StackFiles{Dir: NMConnectionDir, Files: files, Mode: 0o600, Skipped: skipped, Notes: UnappliedBy("networkmanager", links)}
	if conf := RenderNMConf(c, owned); conf != nil {
		sf.Extra = map[string][]byte{NMConfFile: conf}
	}
	return sf, nil
}

func networkManagerPlaces(string) ([]Place, error) {
	return []Place{
		{Dir: NMConnectionDir, match: func(n string) bool {
			return strings.HasPrefix(n, "seedkeeper-") && strings.HasSuffix(n, ".nmconnection")
		}},
		{Dir: path.Dir(NMConfFile), match: func(n string) bool { return n == path.Base(NMConfFile) }},
	}, nil
}

// reloadNetworkManager: "nmcli general reload conf" reads the drop-in and
// "nmcli connection reload" the keyfiles; NetworkManager then
// autoconnects the profiles by MAC.
func reloadNetworkManager(root string, _ *StackFiles) Reload {
	// Not /run/NetworkManager: the keyfiles just written made it. No
	// system bus (early boot) means NetworkManager has not started.
	if !exists(root, systemBus) {
		return Reload{Note: "no system D-Bus yet; NetworkManager reads the keyfiles when it starts"}
	}
	return Reload{Steps: []ReloadStep{
		{Command: []string{"nmcli", "general", "reload", "conf"}},
		{Command: []string{"nmcli", "connection", "reload"}},
	}}
}
