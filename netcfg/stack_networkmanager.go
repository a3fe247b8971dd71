package netcfg

import (
	"path"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/stacks"
)

// NetworkManager (RHEL-family images, desktops): keyfiles in
// /run/NetworkManager/system-connections, and a drop-in in
// /run/NetworkManager/conf.d.
var NetworkManager = register(&Stack{
	Name: "networkmanager", Title: "NetworkManager", Unit: "NetworkManager.service",
	Programs: []string{"/usr/sbin/NetworkManager"},
	render:   renderNetworkManagerFiles, ahead: networkManagerAhead,
	keys: and(stackedDevices,
		except(Noted,
			"v2 match: driver",
			"v2 dhcp4-overrides: use-ntp use-domains use-mtu",
			"v2 dhcp6-overrides: use-ntp use-domains use-mtu"),
		// A link NetworkManager does not wait for is its default.
		except(NotApplicable, "v2 link: optional")),
	duties: networkManagerDuties,
})

var networkManagerDuties = stacks.Duties{
	Places: networkManagerPlaces, Reload: reloadNetworkManager,
	Netplan: networkManagerNetplan,
}

// networkManagerNetplan: netplan's udev rule for an entry rendered for
// networkd sets NM_UNMANAGED=1 on the NICs it matches, and NetworkManager
// then never activates seedkeeper's profile there.
func networkManagerNetplan(renderer string) (why, fix string, ok bool) {
	if renderer == "networkd" {
		return "netplan renders it for systemd-networkd and marks the NICs it matches unmanaged for NetworkManager, so NetworkManager never activates seedkeeper's profiles on them",
			"set renderer: NetworkManager for that entry in its netplan file, or narrow its match", false
	}
	return "NetworkManager activates seedkeeper's profile, of higher autoconnect-priority, and allows no other profile on it", "", true
}

// renderNetworkManagerFiles renders the profiles, their notes and the
// drop-in as views of one plan (physicalPlan), made once.
func renderNetworkManagerFiles(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	plans, links, skipped := physicalPlan(c, owned)
	files, err := nmKeyfiles(links)
	if err != nil {
		return nil, err
	}
	sf := &StackFiles{Dir: nmConnectionDir, Files: files, Mode: 0o600, Skipped: skipped,
		Notes: append(UnappliedBy("networkmanager", interfacesOf(links)), nmUnwritten(links)...)}
	if conf := renderNMConf(plans, links); conf != nil {
		sf.Extra = map[string][]byte{nmConfFile: conf}
	}
	return sf, nil
}

// networkManagerAhead writes the profiles of the NICs that are not
// present (renderNetworkManagerAwaited) and a drop-in that keeps
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
func networkManagerAhead(c *Config, owned, absent func(*Interface) bool, drivers []string) (*StackFiles, error) {
	files, notes, written := renderNMAwaited(c, owned, absent, drivers)
	if len(written) == 0 {
		return &StackFiles{Dir: nmConnectionDir, Files: files, Mode: 0o600, Notes: notes}, nil
	}
	var macs []string
	for _, l := range written {
		macs = appendNew(macs, "mac:"+l.MAC)
	}
	conf := Header + "\n[device-seedkeeper-ahead]\nmatch-device=" + strings.Join(macs, ";") + "\nkeep-configuration=no\n"
	return &StackFiles{Dir: nmConnectionDir, Files: files, Mode: 0o600, Extra: map[string][]byte{nmAheadConfFile: []byte(conf)}, Notes: notes}, nil
}

func networkManagerPlaces(string) ([]stacks.Place, error) {
	return []stacks.Place{
		{Dir: nmConnectionDir, Match: func(n string) bool {
			return strings.HasPrefix(n, "seedkeeper-") && strings.HasSuffix(n, ".nmconnection")
		}},
		{Dir: path.Dir(nmConfFile), Match: func(n string) bool { return n == path.Base(nmConfFile) || n == path.Base(nmAheadConfFile) }},
	}, nil
}

// reloadNetworkManager: "nmcli general reload conf" reads the drop-in and
// "nmcli connection reload" the keyfiles; NetworkManager then
// autoconnects the profiles by MAC.
func reloadNetworkManager(root string, _ map[string][]byte) stacks.Reload {
	// Not /run/NetworkManager: the keyfiles just written made it. No
	// system bus (early boot) means NetworkManager has not started.
	if !exists(root, systemBus) {
		return stacks.Reload{Note: "no system D-Bus yet; NetworkManager reads the keyfiles when it starts"}
	}
	return stacks.Reload{Steps: []stacks.ReloadStep{
		{Command: []string{"nmcli", "general", "reload", "conf"}},
		{Command: []string{"nmcli", "connection", "reload"}},
	}}
}
