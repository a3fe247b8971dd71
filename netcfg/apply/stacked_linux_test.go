package apply

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// guestHint says where the stacked-link tests run when this kernel lacks
// a link type (this project's CI host has no bond or VLAN links).
const guestHint = "test/vm's TestIntegrationGuestKernelApply runs this test in a guest kernel that has them"

// needLinkKind skips the test when the kernel cannot make links of kind.
func needLinkKind(t *testing.T, nh *netlink.Handle, kind string) {
	t.Helper()
	var l netlink.Link
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "skprobe0"
	switch kind {
	case "bond":
		l = netlink.NewLinkBond(attrs)
	case "vlan":
		addVeth(t, nh, "skprobe1", "02:00:00:00:00:e1", "skprobe2", "02:00:00:00:00:e2")
		attrs.ParentIndex = link(t, nh, "skprobe1").Attrs().Index
		l = &netlink.Vlan{LinkAttrs: attrs, VlanId: 7}
	}
	err := nh.LinkAdd(l)
	if errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("this kernel has no %s links; %s", kind, guestHint)
	}
	must(t, err)
	must(t, nh.LinkDel(l))
	if kind == "vlan" {
		must(t, nh.LinkDel(link(t, nh, "skprobe1")))
	}
}

// linkInfo returns the IFLA_INFO_DATA attributes of the link at index
// (what "ip -d link" prints), read in h's namespace.
func linkInfo(t *testing.T, h *Handle, index int) map[uint16][]byte {
	t.Helper()
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	return nestedAttrs(t, h, req, unix.IFLA_LINKINFO, nl.IFLA_INFO_DATA)
}

// portInfo returns the IFLA_PROTINFO attributes of bridge port index.
func portInfo(t *testing.T, h *Handle, index int) map[uint16][]byte {
	t.Helper()
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_BRIDGE))
	var out map[uint16][]byte
	var msgs [][]byte
	must(t, h.inNS(func() (err error) {
		msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
		return err
	}))
	for _, m := range msgs {
		if int(nl.DeserializeIfInfomsg(m).Index) != index {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[unix.SizeofIfInfomsg:])
		must(t, err)
		for _, a := range attrs {
			if a.Attr.Type&^unix.NLA_F_NESTED == unix.IFLA_PROTINFO {
				out = attrMap(t, a.Value)
			}
		}
	}
	return out
}

func nestedAttrs(t *testing.T, h *Handle, req *nl.NetlinkRequest, outer, inner uint16) map[uint16][]byte {
	t.Helper()
	var msgs [][]byte
	must(t, h.inNS(func() (err error) {
		msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
		return err
	}))
	if len(msgs) != 1 {
		t.Fatalf("RTM_GETLINK: %d answers", len(msgs))
	}
	attrs, err := nl.ParseRouteAttr(msgs[0][unix.SizeofIfInfomsg:])
	must(t, err)
	for _, a := range attrs {
		if a.Attr.Type != outer {
			continue
		}
		in, err := nl.ParseRouteAttr(a.Value)
		must(t, err)
		for _, b := range in {
			if b.Attr.Type == inner {
				return attrMap(t, b.Value)
			}
		}
	}
	return nil
}

func attrMap(t *testing.T, b []byte) map[uint16][]byte {
	t.Helper()
	attrs, err := nl.ParseRouteAttr(b)
	must(t, err)
	m := map[uint16][]byte{}
	for _, a := range attrs {
		m[a.Attr.Type&^unix.NLA_F_NESTED] = a.Value
	}
	return m
}

func u32(b []byte) uint32 {
	if len(b) < 4 {
		return 1<<32 - 1
	}
	return nl.NativeEndian().Uint32(b)
}

func u16(b []byte) uint16 {
	if len(b) < 2 {
		return 1<<16 - 1
	}
	return nl.NativeEndian().Uint16(b)
}

// syncTwice applies cfg through Sync and then again, and fails unless the
// second plans nothing: a converged stack stays as it is.
func syncTwice(t *testing.T, h *Handle, cfg *netcfg.Config, receipt string) *Synced {
	t.Helper()
	o := SyncOptions{Receipt: receipt, Allow: Drivers("veth"), Namespace: h.Namespace()}
	s, err := Sync(context.Background(), cfg, o)
	if err != nil {
		t.Fatalf("first apply: %v\nplan:\n%s", err, s.Plan)
	}
	again, err := Sync(context.Background(), cfg, o)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if len(again.Plan.Ops) != 0 {
		t.Errorf("second apply planned:\n%s", again.Plan)
	}
	return s
}

func TestIntegrationStackedBridge(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "p0", "bc:24:11:00:00:01")
	addVeth(t, nh, "eth1", mac2, "p1", "bc:24:11:00:00:02")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1},
		{ID: "eth1", Kind: netcfg.Physical, MAC: mac2},
		{ID: "br0", Kind: netcfg.Bridge, Links: []string{"eth0", "eth1"}, MTU: 1400,
			Params: map[string]string{"stp": "true", "forward-delay": "4", "hello-time": "1", "priority": "4096",
				"path-cost": "eth1=40", "port-priority": "eth0=12"},
			Addresses: []netip.Prefix{pfx("192.0.2.5/24")},
			// An on-link route needs the new link's index (found in review).
			Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0), route("198.51.100.0/24", "", 0)}},
	}}
	h := openAt(t, ns)
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	s := syncTwice(t, h, cfg, receipt)
	wantOps(t, s.Plan,
		"br0 (bridge): create",
		"eth0 (bc:24:11:aa:bb:01): enslave to br0",
		"eth1 (bc:24:11:aa:bb:02): enslave to br0",
		"br0 (bridge): set mtu 1400",
		"eth0 (bc:24:11:aa:bb:01): link up",
		"eth1 (bc:24:11:aa:bb:02): link up",
		"br0 (bridge): link up",
		"br0 (bridge): add address 192.0.2.5/24",
		"br0 (bridge): add route default via 192.0.2.1",
		"br0 (bridge): add route 198.51.100.0/24 on-link")

	br := link(t, nh, "br0")
	if br.Type() != "bridge" || br.Attrs().MTU != 1400 || br.Attrs().Flags&unix.IFF_UP == 0 {
		t.Errorf("br0 = %s mtu %d flags %v", br.Type(), br.Attrs().MTU, br.Attrs().Flags)
	}
	for _, n := range []string{"eth0", "eth1"} {
		if m := link(t, nh, n).Attrs().MasterIndex; m != br.Attrs().Index {
			t.Errorf("%s master = %d, want br0 (%d)", n, m, br.Attrs().Index)
		}
	}
	info := linkInfo(t, h, br.Attrs().Index)
	if got := [...]uint32{u32(info[unix.IFLA_BR_STP_STATE]), u32(info[unix.IFLA_BR_FORWARD_DELAY]),
		u32(info[unix.IFLA_BR_HELLO_TIME]), uint32(u16(info[unix.IFLA_BR_PRIORITY]))}; got != [...]uint32{1, 400, 100, 4096} {
		t.Errorf("br0 stp, forward delay, hello time, priority = %v, want [1 400 100 4096]", got)
	}
	p0, p1 := portInfo(t, h, link(t, nh, "eth0").Attrs().Index), portInfo(t, h, link(t, nh, "eth1").Attrs().Index)
	if u16(p0[unix.IFLA_BRPORT_PRIORITY]) != 12 || u32(p1[unix.IFLA_BRPORT_COST]) != 40 {
		t.Errorf("port priority of eth0 = %d (want 12), path cost of eth1 = %d (want 40)",
			u16(p0[unix.IFLA_BRPORT_PRIORITY]), u32(p1[unix.IFLA_BRPORT_COST]))
	}
	if got := addrs(t, nh, "br0"); !slices.Equal(got, []string{"192.0.2.5/24"}) {
		t.Errorf("br0 addresses = %v", got)
	}
	if got := routes(t, nh, "br0"); !hasAll(got, "default via 192.0.2.1", "198.51.100.0/24 via <nil>") {
		t.Errorf("br0 routes = %v", got)
	}
	rc, err := LoadReceipt(receipt)
	must(t, err)
	if a := rc.Stacked["br0"]; len(a.Addresses) != 1 || len(a.Routes) != 2 || !a.Made || a.Index != br.Attrs().Index {
		t.Errorf("receipt of br0 = %+v", a)
	}

	// A changed address: ours goes, the new one comes, a person's stays.
	addrAdd(t, nh, "br0", "203.0.113.7/24")
	cfg.Interfaces[2].Addresses = []netip.Prefix{pfx("192.0.2.6/24")}
	s = syncTwice(t, h, cfg, receipt)
	wantOps(t, s.Plan,
		"br0 (bridge): remove address 192.0.2.5/24 (added by seedkeeper, no longer configured)",
		"br0 (bridge): add address 192.0.2.6/24",
		"br0 (bridge): add route default via 192.0.2.1 (again, if removing an address took it)")
	if got := routes(t, nh, "br0"); !hasAll(got, "default via 192.0.2.1") {
		t.Errorf("br0 routes after the change = %v", got)
	}
	if got := addrs(t, nh, "br0"); !slices.Equal(got, []string{"192.0.2.6/24", "203.0.113.7/24"}) {
		t.Errorf("br0 addresses after the change = %v", got)
	}
}

// A bridge of the configured name made by someone else with a port we do
// not own is not ours to enslave into.
func TestIntegrationStackedNeverEnslavesForeignNIC(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "p0", "bc:24:11:00:00:01")
	addVeth(t, nh, "eth1", mac2, "p1", "bc:24:11:00:00:02")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1},
		{ID: "eth1", Kind: netcfg.Physical, MAC: mac2},
		{ID: "br0", Kind: netcfg.Bridge, Links: []string{"eth0", "eth1"}, Addresses: []netip.Prefix{pfx("192.0.2.5/24")}},
	}}
	before := state(t, nh, "eth0", "eth1")
	h := openAt(t, ns)
	s, err := Sync(context.Background(), cfg, SyncOptions{Receipt: filepath.Join(t.TempDir(), "r.json"),
		Allow: Drivers("virtio_net"), Namespace: h.Namespace()})
	must(t, err)
	wantOps(t, s.Plan)
	wantNote(t, s.Plan, "br0: member eth0 is not owned by seedkeeper; not applied live")
	if _, err := nh.LinkByName("br0"); err == nil {
		t.Error("br0 was created from NICs seedkeeper does not own")
	}
	if after := state(t, nh, "eth0", "eth1"); after != before {
		t.Errorf("the NICs changed:\n%s\n%s", before, after)
	}
}

// The stack of the stacked-links guest scenario on veth pairs: a bond of two
// NICs, a VLAN on it, a bridge on the VLAN with the address.
func TestIntegrationStackedBondVLANBridge(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	needLinkKind(t, nh, "bond")
	needLinkKind(t, nh, "vlan")
	addVeth(t, nh, "eth0", mac1, "p0", "bc:24:11:00:00:01")
	addVeth(t, nh, "eth1", mac2, "p1", "bc:24:11:00:00:02")
	must(t, nh.LinkSetUp(link(t, nh, "eth0"))) // a bond takes only ports that are down
	cfg := stackCfg()
	h := openAt(t, ns)
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	s := syncTwice(t, h, cfg, receipt)
	if !slices.Equal(s.Plan.Owned, []string{"eth0", "eth1", "bond0", "bond0.100", "br0"}) {
		t.Fatalf("owned = %v; notes %q", s.Plan.Owned, s.Plan.Notes)
	}
	bond, vlan, br := link(t, nh, "bond0"), link(t, nh, "bond0.100"), link(t, nh, "br0")
	if b, ok := bond.(*netlink.Bond); !ok || b.Mode != netlink.BOND_MODE_ACTIVE_BACKUP || b.Miimon != 100 {
		t.Errorf("bond0 = %#v, want an active-backup bond with miimon 100", bond)
	}
	for _, n := range []string{"eth0", "eth1"} {
		a := link(t, nh, n).Attrs()
		if a.MasterIndex != bond.Attrs().Index || a.Flags&unix.IFF_UP == 0 {
			t.Errorf("%s master %d up %v, want a port of bond0 that is up", n, a.MasterIndex, a.Flags&unix.IFF_UP != 0)
		}
	}
	if got := u32(linkInfo(t, h, bond.Attrs().Index)[nl.IFLA_BOND_PRIMARY]); got != uint32(link(t, nh, "eth1").Attrs().Index) {
		t.Errorf("bond0 primary = %d, want eth1 (%d)", got, link(t, nh, "eth1").Attrs().Index)
	}
	if v, ok := vlan.(*netlink.Vlan); !ok || v.VlanId != 100 || v.ParentIndex != bond.Attrs().Index || v.MasterIndex != br.Attrs().Index {
		t.Errorf("bond0.100 = %#v, want VLAN 100 on bond0, a port of br0", vlan)
	}
	if br.Type() != "bridge" || br.Attrs().Flags&unix.IFF_UP == 0 {
		t.Errorf("br0 = %s flags %v", br.Type(), br.Attrs().Flags)
	}
	if got := addrs(t, nh, "br0"); !slices.Equal(got, []string{"192.0.2.5/24"}) {
		t.Errorf("br0 addresses = %v", got)
	}
	// eth1 now carries the bond's MAC; the plan still knows it by its own.
	if p, err := h.Plan(context.Background(), cfg, Drivers("veth"), nil); err != nil || !slices.Contains(p.Owned, "eth1") {
		t.Errorf("after enslaving, eth1 is not owned: %v %q", err, p.Notes)
	}
}

// A bridge member that appears after boot (hotplug applies only the new
// NIC) completes the bridge: it is created with both members and its
// address, while another NIC's state is left as a person left it.
func TestIntegrationStackedHotplugCompletesBridge(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "p0", "bc:24:11:00:00:01")
	addVeth(t, nh, "eth3", mac3, "p3", "bc:24:11:00:00:03")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1},
		{ID: "eth1", Kind: netcfg.Physical, MAC: mac2},
		{ID: "eth3", Kind: netcfg.Physical, MAC: mac3, Addresses: []netip.Prefix{pfx("198.51.100.3/24")}},
		{ID: "br0", Kind: netcfg.Bridge, Links: []string{"eth0", "eth1"}, Addresses: []netip.Prefix{pfx("192.0.2.5/24")}},
	}}
	h := openAt(t, ns)
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	o := SyncOptions{Receipt: receipt, Allow: Drivers("veth"), Namespace: h.Namespace()}
	s, err := Sync(context.Background(), cfg, o)
	must(t, err)
	wantNote(t, s.Plan, "br0: member eth1 is not owned by seedkeeper; not applied live")
	if _, err := nh.LinkByName("br0"); err == nil {
		t.Fatal("br0 was created with a member missing")
	}
	// A person takes eth3's address away; the hotplug of eth1 must not
	// put it back.
	must(t, nh.AddrDel(link(t, nh, "eth3"), &netlink.Addr{IPNet: ipNet(pfx("198.51.100.3/24"))}))

	addVeth(t, nh, "eth1", mac2, "p1", "bc:24:11:00:00:02")
	o.Only = []string{mac2}
	s, err = Sync(context.Background(), cfg, o)
	must(t, err)
	wantOps(t, s.Plan,
		"br0 (bridge): create",
		"eth0 (bc:24:11:aa:bb:01): enslave to br0",
		"eth1 (bc:24:11:aa:bb:02): enslave to br0",
		"eth1 (bc:24:11:aa:bb:02): link up",
		"br0 (bridge): link up",
		"br0 (bridge): add address 192.0.2.5/24")
	if got := addrs(t, nh, "br0"); !slices.Equal(got, []string{"192.0.2.5/24"}) {
		t.Errorf("br0 addresses = %v", got)
	}
	if got := addrs(t, nh, "eth3"); len(got) != 0 {
		t.Errorf("eth3 addresses = %v: the hotplug of eth1 touched it", got)
	}
	rc, err := LoadReceipt(receipt)
	must(t, err)
	if a := rc.Links[mac3]; !slices.Equal(a.Addresses, []netip.Prefix{pfx("198.51.100.3/24")}) {
		t.Errorf("receipt of eth3 = %+v, want its entry kept", a)
	}
	if a := rc.Stacked["br0"]; len(a.Addresses) != 1 {
		t.Errorf("receipt of br0 = %+v", a)
	}
}

// An existing docker0 bridge with its own port and address was adopted:
// the owned NIC was enslaved into it and its MTU, an address and a default
// route were set. A stacked link is adopted only when the receipt says
// seedkeeper made it; docker0 is left exactly as it was, the owned NIC is
// not made its port, and no file is rendered for it.
func TestIntegrationStackedNeverAdoptsForeignBridge(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "p0", "bc:24:11:00:00:01")
	addVeth(t, nh, "vethd", "02:42:00:00:00:02", "vethd-c", "02:42:00:00:00:03")
	must(t, nh.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "docker0", MTU: 1500}}))
	must(t, nh.LinkSetMaster(link(t, nh, "vethd"), link(t, nh, "docker0")))
	must(t, nh.LinkSetUp(link(t, nh, "docker0")))
	addrAdd(t, nh, "docker0", "172.17.0.1/16")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1},
		{ID: "docker0", Kind: netcfg.Bridge, Name: "docker0", Links: []string{"eth0"}, MTU: 1400,
			Addresses: []netip.Prefix{pfx("192.0.2.5/24")}, Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0)}},
	}}
	before := state(t, nh, "docker0", "vethd")
	h := openAt(t, ns)
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	for range 2 { // and again: a second run must not adopt it either
		s, err := Sync(context.Background(), cfg, SyncOptions{Receipt: receipt, Allow: Drivers("veth"), Namespace: h.Namespace()})
		must(t, err)
		wantNote(t, s.Plan, "docker0: a bridge of that name exists that seedkeeper did not make; left alone")
		if !slices.Equal(s.Plan.Owned, []string{"eth0"}) {
			t.Errorf("owned = %v", s.Plan.Owned)
		}
		for _, op := range s.Plan.Ops {
			if op.Name == "docker0" || op.Master == "docker0" {
				t.Errorf("operation on docker0: %s", op)
			}
		}
		sf, err := netcfg.Networkd.Render(netcfg.Detection{Stack: netcfg.Networkd}, s.Plan.Pinned(cfg), s.Plan.Owns)
		must(t, err)
		for name, b := range sf.Files {
			if strings.Contains(string(b), "docker0") {
				t.Errorf("%s names docker0:\n%s", name, b)
			}
		}
	}
	if after := state(t, nh, "docker0", "vethd"); after != before {
		t.Errorf("docker0 changed:\n%s\n%s", before, after)
	}
	if m := link(t, nh, "eth0").Attrs().MasterIndex; m != 0 {
		t.Errorf("eth0 master = %d, want none", m)
	}
	rc, err := LoadReceipt(receipt)
	must(t, err)
	if a, ok := rc.Stacked["docker0"]; ok {
		t.Errorf("receipt of docker0 = %+v, want none", a)
	}
}
