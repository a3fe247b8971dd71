package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Boot writes the files of the stack the root runs and removes, in every
// place of that stack, the files of ours no longer wanted, and nothing
// else: a file of our name without our header is someone else's.
func TestRenderReplacesOnlyOurStaleFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/lib/systemd/system/NetworkManager.service", "[Install]\nWantedBy=multi-user.target\n")
	write(t, root, "/usr/sbin/NetworkManager", "")
	os.MkdirAll(filepath.Join(root, "etc/systemd/system/multi-user.target.wants"), 0o755)
	os.Symlink("/lib/systemd/system/NetworkManager.service", filepath.Join(root, "etc/systemd/system/multi-user.target.wants/NetworkManager.service"))
	const (
		keyfile = "/run/NetworkManager/system-connections/seedkeeper-eth0.nmconnection"
		stale   = "/run/NetworkManager/system-connections/seedkeeper-old.nmconnection"
		theirs  = "/run/NetworkManager/system-connections/seedkeeper-mine.nmconnection"
		other   = "/run/NetworkManager/system-connections/Wired connection 1.nmconnection"
	)
	write(t, root, stale, netcfg.Header+"\n[connection]\n")
	write(t, root, theirs, "[connection]\nid=mine\n")
	write(t, root, other, netcfg.Header+"\n[connection]\n")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01", DHCP4: true}}}
	e := &Env{Root: sysroot.Root(root)}
	e.init()

	res := &NetResult{}
	if _, err := e.renderNetworkd(cfg, func(i *netcfg.Interface) bool { return i.ID == "eth0" }, awaited{}, res); err != nil {
		t.Fatal(err)
	}
	if res.files == nil || res.files.Stack != netcfg.NetworkManager {
		t.Fatalf("rendered for %q", res.Stack)
	}
	present := func(p string) bool { _, err := os.Lstat(filepath.Join(root, p)); return err == nil }
	if !present(keyfile) || !present("/run/NetworkManager/conf.d/50-seedkeeper.conf") || present(stale) || !present(theirs) || !present(other) {
		t.Errorf("after the first render: rendered %q removed %q", res.Rendered, res.Removed)
	}
	if !slices.Equal(res.Removed, []string{"seedkeeper-old.nmconnection"}) {
		t.Errorf("removed %q", res.Removed)
	}

	// The NIC is gone from the configuration: its keyfile and the
	// drop-in go.
	res = &NetResult{}
	if _, err := e.renderNetworkd(&netcfg.Config{}, nil, awaited{}, res); err != nil {
		t.Fatal(err)
	}
	if present(keyfile) || present("/run/NetworkManager/conf.d/50-seedkeeper.conf") || !present(theirs) || !present(other) {
		t.Errorf("after the second render: removed %q", res.Removed)
	}
	if !slices.Equal(res.Removed, []string{"seedkeeper-eth0.nmconnection", "/run/NetworkManager/conf.d/50-seedkeeper.conf"}) {
		t.Errorf("removed %q", res.Removed)
	}
}

// A file at the very path boot writes that is not seedkeeper's (a
// person's keyfile of seedkeeper's name, without its header) is neither
// replaced nor removed; the status says it was left alone.
func TestRenderLeavesSomeoneElsesFileAtOurPath(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/lib/systemd/system/systemd-networkd.service", "[Install]\nWantedBy=multi-user.target\n")
	os.MkdirAll(filepath.Join(root, "etc/systemd/system/multi-user.target.wants"), 0o755)
	os.Symlink("/lib/systemd/system/systemd-networkd.service", filepath.Join(root, "etc/systemd/system/multi-user.target.wants/systemd-networkd.service"))
	const theirs = "/run/systemd/network/05-seedkeeper-eth0.network"
	const mine = "[Match]\nName=eth0\n[Network]\nAddress=192.0.2.9/24\n"
	write(t, root, theirs, mine)
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "eth0", Name: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01", DHCP4: true}}}
	e := &Env{Root: sysroot.Root(root)}
	e.init()
	res := &NetResult{}
	if _, err := e.renderNetworkd(cfg, func(i *netcfg.Interface) bool { return i.ID == "eth0" }, awaited{}, res); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, theirs)); err != nil || string(b) != mine {
		t.Errorf("a person's %s was replaced: %q, %v (rendered %q)", theirs, b, err, res.Rendered)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, theirs) }) {
		t.Errorf("the notes %q do not say %s was left alone", res.Notes, theirs)
	}
}

// An upgraded install finds the files seedkeeper wrote under its old
// "10-" name: boot replaces them with the "05-" ones, which sort before
// netplan's, and leaves no second file for the NIC; a "10-" file without
// seedkeeper's header stays.
func TestRenderReplacesTheOldNetworkdNames(t *testing.T) {
	root := t.TempDir()
	const (
		old    = "/run/systemd/network/10-seedkeeper-eth0.network"
		oldDev = "/run/systemd/network/10-seedkeeper-bond0.netdev"
		theirs = "/run/systemd/network/10-seedkeeper-mine.network"
		netpl  = "/run/systemd/network/10-netplan-all-en.network"
	)
	write(t, root, old, netcfg.Header+"\n[Match]\nMACAddress=52:54:00:00:00:01\n")
	write(t, root, oldDev, netcfg.Header+"\n[NetDev]\nName=bond0\n")
	write(t, root, theirs, "[Match]\nName=eth9\n")
	write(t, root, netpl, "[Match]\nName=en*\n[Network]\nDHCP=yes\n")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01", DHCP4: true}}}
	e := &Env{Root: sysroot.Root(root)}
	e.init()
	res := &NetResult{}
	if _, err := e.renderNetworkd(cfg, nil, awaited{}, res); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(root, "/run/systemd/network"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"05-seedkeeper-eth0.network", "10-netplan-all-en.network", "10-seedkeeper-mine.network"}
	if !slices.Equal(names, want) {
		t.Errorf("%s holds %q, want %q", "/run/systemd/network", names, want)
	}
	if !slices.Equal(res.Removed, []string{"10-seedkeeper-bond0.netdev", "10-seedkeeper-eth0.network"}) {
		t.Errorf("removed %q", res.Removed)
	}
}

// On a netplan image, boot says which of netplan's entries also match an
// owned NIC and what takes the NIC instead; a NIC seedkeeper does not own
// is not named, and no netplan file is changed.
func TestRenderNamesNetplansEntriesOnOwnedNICs(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/lib/systemd/system/systemd-networkd.service", "[Install]\nWantedBy=multi-user.target\n")
	os.MkdirAll(filepath.Join(root, "etc/systemd/system/multi-user.target.wants"), 0o755)
	os.Symlink("/lib/systemd/system/systemd-networkd.service", filepath.Join(root, "etc/systemd/system/multi-user.target.wants/systemd-networkd.service"))
	write(t, root, "/usr/lib/systemd/system-generators/netplan", "")
	const yaml = "network:\n  version: 2\n  ethernets:\n    all-en: {match: {name: 'en*'}, dhcp4: true}\n    all-eth: {match: {name: 'eth*'}, dhcp4: true}\n"
	write(t, root, "/etc/netplan/90-default.yaml", yaml)
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Name: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01", DHCP4: true},
		{ID: "eth1", Name: "eth1", Kind: netcfg.Physical, MAC: "52:54:00:00:00:02", DHCP4: true},
	}}
	e := &Env{Root: sysroot.Root(root)}
	e.init()
	res := &NetResult{}
	if _, err := e.renderNetworkd(cfg, func(i *netcfg.Interface) bool { return i.ID == "eth0" }, awaited{}, res); err != nil {
		t.Fatal(err)
	}
	want := []string{"/etc/netplan/90-default.yaml entry all-eth (match name eth*) also matches eth0, which seedkeeper owns: systemd-networkd gives it seedkeeper's file, which sorts before netplan's"}
	if !slices.Equal(res.Netplan, want) {
		t.Errorf("netplan notes %q, want %q", res.Netplan, want)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/netplan/90-default.yaml")); err != nil || string(b) != yaml {
		t.Errorf("netplan's file changed: %q, %v", b, err)
	}
}

// On an image that runs NetworkManager while netplan's entry renders for
// networkd, netplan's udev rule marks the NIC unmanaged: boot says that
// seedkeeper's profile is not used there, and how to fix it.
func TestRenderSaysNetplanKeepsNetworkManagerOff(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/lib/systemd/system/NetworkManager.service", "[Install]\nWantedBy=multi-user.target\n")
	write(t, root, "/usr/sbin/NetworkManager", "")
	os.MkdirAll(filepath.Join(root, "etc/systemd/system/multi-user.target.wants"), 0o755)
	os.Symlink("/lib/systemd/system/NetworkManager.service", filepath.Join(root, "etc/systemd/system/multi-user.target.wants/NetworkManager.service"))
	write(t, root, "/usr/lib/systemd/system-generators/netplan", "")
	write(t, root, "/etc/netplan/90-default.yaml", "network:\n  version: 2\n  ethernets:\n    all-eth: {match: {name: 'eth*'}, dhcp4: true}\n    nm-eth: {match: {macaddress: '52:54:00:00:00:01'}, renderer: NetworkManager}\n")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "eth0", Name: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01", DHCP4: true}}}
	e := &Env{Root: sysroot.Root(root)}
	e.init()
	res := &NetResult{}
	if _, err := e.renderNetworkd(cfg, nil, awaited{}, res); err != nil {
		t.Fatal(err)
	}
	if len(res.Netplan) != 2 || !strings.Contains(res.Netplan[0], "entry all-eth (match name eth*) also matches eth0") || !strings.Contains(res.Netplan[0], "marks the NICs it matches unmanaged for NetworkManager") ||
		!strings.Contains(res.Netplan[1], "entry nm-eth") || !strings.Contains(res.Netplan[1], "of higher autoconnect-priority") {
		t.Errorf("netplan notes %q", res.Netplan)
	}
}
