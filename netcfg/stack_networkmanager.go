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
	ahead: networkManagerAhead,
}

func renderNetworkManagerFiles(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	files, skipped, err := RenderNetworkManager(c, owned)
	if err != nil {
		return nil, err
	}
	links := plainLinks(c, owned)
	sf := &StackFiles{Dir: NMConnectionDir, Files: files, Mode: 0o600, Skipped: skipped,
		Notes: append(UnappliedBy("networkmanager", links), nmUnwritten(c, owned)...)}
	if conf := RenderNMConf(c, owned); conf != nil {
		sf.Extra = map[string][]byte{NMConfFile: conf}
	}
	return sf, nil
}

// networkManagerAhead writes the profiles of the NICs that are not
// present (RenderNetworkManagerAwaited) and a drop-in that keeps
// NetworkManager from taking such a NIC, once it appears, as configured
// by someone else: the watch may have renamed it and applied its
// addresses before NetworkManager is done waiting for udev, and
// NetworkManager then activates an in-memory "external" connection on it
// and never seedkeeper's profile (a DHCP NIC would get no lease). With
// keep-configuration=no it activates the best profile for the NIC,
// seedkeeper's. The drop-in names the MACs only: a NIC of that MAC but a
// driver the allowlist lacks is not kept as it is either, and gets the
// image's own profile as a new NIC does (a device match cannot say
// "and of these drivers").
func networkManagerAhead(c *Config, owned, absent func(*Interface) bool, drivers []string) (*Ahead, error) {
	files, notes, written := renderNMAwaited(c, owned, absent, drivers)
	if len(written) == 0 {
		return &Ahead{Files: files, Notes: notes}, nil
	}
	var macs []string
	for _, l := range written {
		macs = appendNew(macs, "mac:"+l.MAC)
	}
	conf := Header + "\n[device-seedkeeper-ahead]\nmatch-device=" + strings.Join(macs, ";") + "\nkeep-configuration=no\n"
	return &Ahead{Files: files, Extra: map[string][]byte{NMAheadConfFile: []byte(conf)}, Notes: notes}, nil
}

func networkManagerPlaces(string) ([]Place, error) {
	return []Place{
		{Dir: NMConnectionDir, match: func(n string) bool {
			return strings.HasPrefix(n, "seedkeeper-") && strings.HasSuffix(n, ".nmconnection")
		}},
		{Dir: path.Dir(NMConfFile), match: func(n string) bool { return n == path.Base(NMConfFile) || n == path.Base(NMAheadConfFile) }},
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
