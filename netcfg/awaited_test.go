package netcfg

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// awaitedCfg has, beside a present NIC (up), NICs that are not present:
// one by MAC (hot, to be eth2), one by MAC that gets a new MAC (newmac), one by name
// only (byname), one by MAC and an allowed match driver (vm), one whose
// match driver is not allowed (mlx), and a bond member (m0).
const awaitedCfg = `version: 2
ethernets:
  up: {match: {macaddress: "52:54:00:00:00:01"}, dhcp4: true}
  hot: {match: {macaddress: "52:54:00:5e:ed:03"}, set-name: eth2, addresses: [10.0.3.20/24], mtu: 1400}
  newmac: {match: {macaddress: "52:54:00:00:00:04"}, macaddress: "52:54:00:00:00:aa", dhcp4: true, optional: true}
  byname: {match: {name: "ens9"}, dhcp4: true}
  vm: {match: {macaddress: "52:54:00:00:00:06", driver: vmxnet3}, addresses: [10.0.6.2/24]}
  mlx: {match: {macaddress: "52:54:00:00:00:07", driver: mlx5_core}, dhcp4: true}
  m0: {match: {macaddress: "52:54:00:00:00:08"}}
bonds:
  bond0: {interfaces: [m0], addresses: [10.0.8.2/24]}
nameservers: {addresses: [192.0.2.53]}
`

func renderAwaited(t *testing.T, drivers ...string) (map[string][]byte, []string) {
	t.Helper()
	return renderAwaitedBy(t, renderNetworkdAwaited, drivers...)
}

type aheadFunc func(c *Config, owned, absent func(*Interface) bool, drivers []string) (map[string][]byte, []string, error)

func renderAwaitedBy(t *testing.T, render aheadFunc, drivers ...string) (map[string][]byte, []string) {
	t.Helper()
	c, err := Parse([]byte(awaitedCfg))
	if err != nil {
		t.Fatal(err)
	}
	owned := func(i *Interface) bool { return i.ID == "up" }
	absent := func(i *Interface) bool { return i.ID != "up" && i.ID != "bond0" }
	files, notes, err := render(c, owned, absent, drivers)
	if err != nil {
		t.Fatal(err)
	}
	again, notes2, err := render(c, owned, absent, drivers)
	if err != nil || !reflect.DeepEqual(files, again) || !slices.Equal(notes, notes2) {
		t.Fatalf("not deterministic: %v", err)
	}
	return files, notes
}

func TestRenderNetworkdAwaited(t *testing.T) {
	files, notes := renderAwaited(t, "vmxnet3", "virtio_net", "e1000", "virtio_net")
	if got, want := slices.Sorted(maps.Keys(files)), []string{"05-seedkeeper-hot.network", "05-seedkeeper-newmac.network", "05-seedkeeper-vm.network"}; !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	// The allowed drivers as networkd's list, sorted and once each; the
	// NIC's own settings; no global DNS (the owned NIC carries it).
	want := Header + `

[Match]
MACAddress=52:54:00:5e:ed:03
Type=ether
Driver=e1000 virtio_net vmxnet3

[Link]
MTUBytes=1400

[Network]
KeepConfiguration=static
DHCP=no
Address=10.0.3.20/24
`
	if got := string(files["05-seedkeeper-hot.network"]); got != want {
		t.Errorf("hot:\n%s\nwant:\n%s", got, want)
	}
	newmac := string(files["05-seedkeeper-newmac.network"])
	for _, w := range []string{"[Match]\nPermanentMACAddress=52:54:00:00:00:04\nType=ether\nDriver=e1000 virtio_net vmxnet3\n", "MACAddress=52:54:00:00:00:aa\n", "RequiredForOnline=no\n", "DHCP=ipv4\n"} {
		if !strings.Contains(newmac, w) {
			t.Errorf("newmac lacks %q:\n%s", w, newmac)
		}
	}
	if vm := string(files["05-seedkeeper-vm.network"]); !strings.Contains(vm, "[Match]\nMACAddress=52:54:00:00:00:06\nType=ether\nDriver=vmxnet3\n\n") {
		t.Errorf("vm: want its own match driver only:\n%s", vm)
	}
	for _, b := range files {
		if strings.Contains(string(b), "192.0.2.53") || strings.Contains(string(b), "Name=") {
			t.Errorf("a file written ahead has global DNS or a name match:\n%s", b)
		}
	}
	wantNotes(t, notes,
		"eth2: not present; 05-seedkeeper-hot.network written ahead (MAC 52:54:00:5e:ed:03, drivers e1000 virtio_net vmxnet3)",
		"byname: not present; no networkd file until it appears: it is matched by name or driver, not by MAC",
		"mlx: not present; no networkd file until it appears: its match driver mlx5_core is not allowed",
		"m0: not present; no networkd file until it appears: a member of bond0, which is built live first",
	)
}

// NetworkManager's profile written ahead is the one the watch writes
// once the NIC is owned (same file, same UUID, so the watch's render
// replaces it and allowed-connections names it), bound to the permanent
// MAC and to the allowed drivers.
func TestRenderNetworkManagerAwaited(t *testing.T) {
	files, notes := renderAwaitedBy(t, renderNetworkManagerAwaited, "vmxnet3", "virtio_net", "e1000", "virtio_net")
	if got, want := slices.Sorted(maps.Keys(files)), []string{"seedkeeper-hot.nmconnection", "seedkeeper-newmac.nmconnection", "seedkeeper-vm.nmconnection"}; !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	want := Header + `

[connection]
id=seedkeeper-hot
uuid=` + nmUUID("hot") + `
type=ethernet
autoconnect=true
autoconnect-priority=100

[match]
driver=e1000;virtio_net;vmxnet3;

[ethernet]
mac-address=52:54:00:5E:ED:03
mtu=1400

[ipv4]
method=manual
address1=10.0.3.20/24

[ipv6]
method=ignore
`
	if got := string(files["seedkeeper-hot.nmconnection"]); got != want {
		t.Errorf("hot:\n%s\nwant:\n%s", got, want)
	}
	newmac := string(files["seedkeeper-newmac.nmconnection"])
	for _, w := range []string{"[match]\ndriver=e1000;virtio_net;vmxnet3;\n", "\nmac-address=52:54:00:00:00:04\ncloned-mac-address=52:54:00:00:00:AA\n", "[ipv4]\nmethod=auto\n"} {
		if !strings.Contains(newmac, w) {
			t.Errorf("newmac lacks %q:\n%s", w, newmac)
		}
	}
	if vm := string(files["seedkeeper-vm.nmconnection"]); !strings.Contains(vm, "[match]\ndriver=vmxnet3;\n\n") {
		t.Errorf("vm: want its own match driver only:\n%s", vm)
	}
	for _, b := range files {
		if strings.Contains(string(b), "192.0.2.53") || strings.Contains(string(b), "interface-name") {
			t.Errorf("a profile written ahead has global DNS or a name match:\n%s", b)
		}
	}
	// Once owned, the watch writes the same file with the same UUID,
	// without the driver match (the live plan has checked the driver).
	c := mustParse(t, awaitedCfg)
	owned, _, err := renderNetworkManager(c, func(i *Interface) bool { return i.ID == "hot" })
	if err != nil {
		t.Fatal(err)
	}
	if got := string(owned["seedkeeper-hot.nmconnection"]); got != strings.Replace(want, "[match]\ndriver=e1000;virtio_net;vmxnet3;\n\n", "", 1) {
		t.Errorf("the owned NIC's profile is not the one written ahead, less its driver match:\n%s", got)
	}
	wantNotes(t, notes,
		"eth2: not present; seedkeeper-hot.nmconnection written ahead (MAC 52:54:00:5e:ed:03, drivers e1000 virtio_net vmxnet3)",
		"byname: not present; no NetworkManager profile until it appears: it is matched by name or driver, not by MAC",
		"mlx: not present; no NetworkManager profile until it appears: its match driver mlx5_core is not allowed",
		"m0: not present; no NetworkManager profile until it appears: a member of bond0, which is built live first",
	)
}

// An allowlist that allows nothing, or one with a name that is not a
// driver's (a glob would widen networkd's match), writes nothing ahead.
func TestRenderNetworkdAwaitedClosedAllowlist(t *testing.T) {
	for _, tc := range []struct {
		drivers []string
		why     string
	}{
		{nil, "the hotplug allowlist allows no driver"},
		{[]string{"virtio_net", "*"}, "allowlist entry 2: driver name has U+002A"},
		{[]string{"virtio_net", "!e1000"}, "allowlist entry 2: driver name has U+0021"},
	} {
		for _, r := range []struct {
			render aheadFunc
			what   string
		}{{renderNetworkdAwaited, "networkd file"}, {renderNetworkManagerAwaited, "NetworkManager profile"}} {
			files, notes := renderAwaitedBy(t, r.render, tc.drivers...)
			if len(files) != 0 {
				t.Errorf("%s %q: wrote %q", r.what, tc.drivers, slices.Sorted(maps.Keys(files)))
			}
			if !slices.ContainsFunc(notes, func(n string) bool {
				return strings.HasPrefix(n, "eth2: not present; no "+r.what+" until it appears: "+tc.why)
			}) {
				t.Errorf("%q: notes %q lack %q", tc.drivers, notes, tc.why)
			}
		}
	}
}

// Two entries with one MAC: the live plan leaves the NIC alone when it
// appears (it is selected by both), so neither gets a file or profile
// ahead, and the drop-in ahead does not name the MAC; networkd or
// NetworkManager would otherwise configure, from one of the two, a NIC
// seedkeeper never owns.
func TestRenderAwaitedMACConfiguredTwice(t *testing.T) {
	c := mustParse(t, `version: 2
ethernets:
  a: {match: {macaddress: "52:54:00:00:00:0a"}, dhcp4: true}
  b: {match: {macaddress: "52:54:00:00:00:0A"}, addresses: [10.0.9.2/24]}
  c: {match: {macaddress: "52:54:00:00:00:0c"}, dhcp4: true}
`)
	absent := func(*Interface) bool { return true }
	owned := func(*Interface) bool { return false }
	for _, r := range []struct {
		render aheadFunc
		want   string
	}{{renderNetworkdAwaited, "05-seedkeeper-c.network"}, {renderNetworkManagerAwaited, "seedkeeper-c.nmconnection"}} {
		files, notes, err := r.render(c, owned, absent, []string{"virtio_net"})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, []string{r.want}) {
			t.Errorf("files %q, want only %q", got, r.want)
		}
		for _, id := range []string{"a", "b"} {
			if !slices.ContainsFunc(notes, func(n string) bool {
				return strings.HasPrefix(n, id+": not present; no ") && strings.Contains(n, "another entry has its MAC")
			}) {
				t.Errorf("notes %q say nothing of %s", notes, id)
			}
		}
	}
	ahead, err := NetworkManager.RenderAhead(c, owned, absent, []string{"virtio_net"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(ahead.Extra[nmAheadConfFile]), Header+"\n[device-seedkeeper-ahead]\nmatch-device=mac:52:54:00:00:00:0c\nkeep-configuration=no\n"; got != want {
		t.Errorf("drop-in ahead:\n%s\nwant:\n%s", got, want)
	}
}

// The parent of a VLAN gets no NetworkManager profile once owned (it is
// unmanaged, renderNMConf, as the VLAN seedkeeper makes live is), so it
// gets none ahead either, nor keep-configuration=no: NetworkManager
// would activate on it a profile seedkeeper never writes for it, and
// clean its configuration up once the watch makes the VLAN on it.
// networkd's file ahead is its own file less the VLAN= line.
func TestRenderAwaitedVLANParent(t *testing.T) {
	c := mustParse(t, `version: 2
ethernets:
  trunk: {match: {macaddress: "52:54:00:00:00:0b"}}
  c: {match: {macaddress: "52:54:00:00:00:0c"}, dhcp4: true}
vlans:
  vlan7: {id: 7, link: trunk, addresses: [10.0.7.2/24]}
`)
	absent := func(i *Interface) bool { return i.Kind == Physical }
	owned := func(*Interface) bool { return false }
	files, notes, err := renderNetworkManagerAwaited(c, owned, absent, []string{"virtio_net"})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, []string{"seedkeeper-c.nmconnection"}) {
		t.Errorf("files %q, want only seedkeeper-c.nmconnection", got)
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, "trunk: not present; no NetworkManager profile until it appears: the link of vlan7")
	}) {
		t.Errorf("notes %q say nothing of trunk", notes)
	}
	ahead, err := NetworkManager.RenderAhead(c, owned, absent, []string{"virtio_net"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(ahead.Extra[nmAheadConfFile]); strings.Contains(got, "00:00:0b") {
		t.Errorf("drop-in ahead names the VLAN's parent:\n%s", got)
	}
	// Once owned, no profile for it indeed.
	all, _, err := renderNetworkManager(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all["seedkeeper-trunk.nmconnection"]; ok {
		t.Fatal("the owned VLAN parent has a profile: this test's premise is gone")
	}
	nd, _, err := renderNetworkdAwaited(c, owned, absent, []string{"virtio_net"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nd["05-seedkeeper-trunk.network"]; !ok {
		t.Errorf("networkd: no file ahead of the VLAN's parent: %q", slices.Sorted(maps.Keys(nd)))
	}
}

// A value a stack's file cannot hold costs that NIC its file ahead, with
// a note, and not the other absent NICs theirs; on NetworkManager its MAC
// is not in the drop-in ahead either.
func TestRenderAwaitedBadFieldDegradesThatNIC(t *testing.T) {
	c := mustParse(t, awaitedCfg)
	for i := range c.Interfaces {
		if c.Interfaces[i].ID == "newmac" {
			c.Interfaces[i].DHCP4Overrides.Hostname = "bad\nline" // no parser lets this through
		}
	}
	owned := func(i *Interface) bool { return i.ID == "up" }
	absent := func(i *Interface) bool { return i.ID != "up" && i.ID != "bond0" }
	for _, r := range []struct {
		render aheadFunc
		what   string
		file   string
	}{{renderNetworkdAwaited, "networkd file", "05-seedkeeper-newmac.network"}, {renderNetworkManagerAwaited, "NetworkManager profile", "seedkeeper-newmac.nmconnection"}} {
		files, notes, err := r.render(c, owned, absent, []string{"virtio_net", "vmxnet3"})
		if err != nil {
			t.Fatalf("%s: %v", r.what, err)
		}
		if _, ok := files[r.file]; ok || len(files) != 2 {
			t.Errorf("%s: files %q, want the two others", r.what, slices.Sorted(maps.Keys(files)))
		}
		if !slices.ContainsFunc(notes, func(n string) bool {
			return strings.HasPrefix(n, "newmac: not present; no "+r.what+" until it appears: ") && !strings.Contains(n, "bad")
		}) {
			t.Errorf("%s: notes %q lack why newmac has none (quoting nothing)", r.what, notes)
		}
	}
	a, err := NetworkManager.RenderAhead(c, owned, absent, []string{"virtio_net", "vmxnet3"})
	if err != nil {
		t.Fatal(err)
	}
	if conf := string(a.Extra[nmAheadConfFile]); strings.Contains(conf, "52:54:00:00:00:04") || !strings.Contains(conf, "mac:52:54:00:5e:ed:03") {
		t.Errorf("drop-in ahead:\n%s", conf)
	}
}

// wantNotes fails t for each prefix no note has.
func wantNotes(t *testing.T, notes []string, prefixes ...string) {
	t.Helper()
	for _, w := range prefixes {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, w) }) {
			t.Errorf("notes %q lack %q", notes, w)
		}
	}
}
