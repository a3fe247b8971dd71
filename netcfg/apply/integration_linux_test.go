package apply

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/nstest"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// newNS gives the test its own named network namespace, deleted when the
// test ends, and a netlink handle in it.
func newNS(tb testing.TB) (netns.NsHandle, *netlink.Handle) {
	n := nstest.New(tb, "skapply")
	return n.NS, n.Netlink
}

func openAt(tb testing.TB, ns netns.NsHandle) *Handle {
	tb.Helper()
	h, err := OpenAt(ns)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	return h
}

func hw(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func addVeth(tb testing.TB, nh *netlink.Handle, name, mac, peer, peerMAC string) {
	tb.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: hw(mac)}, PeerName: peer, PeerHardwareAddr: hw(peerMAC)}
	if err := nh.LinkAdd(v); err != nil {
		tb.Fatalf("adding veth %s: %v", name, err)
	}
}

func link(tb testing.TB, nh *netlink.Handle, name string) netlink.Link {
	tb.Helper()
	l, err := nh.LinkByName(name)
	if err != nil {
		tb.Fatalf("link %s: %v", name, err)
	}
	return l
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func addrAdd(tb testing.TB, nh *netlink.Handle, name, p string) {
	tb.Helper()
	must(tb, nh.AddrAdd(link(tb, nh, name), &netlink.Addr{IPNet: ipNet(pfx(p))}))
}

// addrs lists a link's addresses, link-local ones left out.
func addrs(tb testing.TB, nh *netlink.Handle, name string) []string {
	tb.Helper()
	as, err := nh.AddrList(link(tb, nh, name), netlink.FAMILY_ALL)
	must(tb, err)
	var out []string
	for _, a := range as {
		if p, ok := prefixOf(a.IPNet); ok && !p.Addr().IsLinkLocalUnicast() {
			out = append(out, p.String())
		}
	}
	slices.Sort(out)
	return out
}

// routes lists a link's routes in every table but local, like
// "0.0.0.0/0 via 192.0.2.1 metric 100 table 254 proto 3".
func routes(tb testing.TB, nh *netlink.Handle, name string) []string {
	tb.Helper()
	idx := link(tb, nh, name).Attrs().Index
	rs, err := nh.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{}, netlink.RT_FILTER_TABLE)
	must(tb, err)
	var out []string
	for _, r := range rs {
		if r.LinkIndex != idx || r.Table == unix.RT_TABLE_LOCAL {
			continue
		}
		dst := "default"
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones > 0 {
				dst = r.Dst.String()
			}
		}
		out = append(out, fmt.Sprintf("%s via %v metric %d table %d proto %d scope %d", dst, r.Gw, r.Priority, r.Table, r.Protocol, r.Scope))
	}
	slices.Sort(out)
	return out
}

// state is everything about the named links a person could configure.
func state(tb testing.TB, nh *netlink.Handle, names ...string) string {
	tb.Helper()
	var b strings.Builder
	for _, n := range names {
		a := link(tb, nh, n).Attrs()
		fmt.Fprintf(&b, "%s index=%d mac=%s mtu=%d up=%v master=%d txqlen=%d alias=%q\n",
			a.Name, a.Index, a.HardwareAddr, a.MTU, a.Flags&net.FlagUp != 0, a.MasterIndex, a.TxQLen, a.Alias)
		fmt.Fprintf(&b, "  addrs %v\n  routes %v\n", addrs(tb, nh, n), routes(tb, nh, n))
	}
	return b.String()
}

func planApply(tb testing.TB, h *Handle, cfg *netcfg.Config, allow Allowlist, rc *Receipt) (*Plan, *Result, error) {
	tb.Helper()
	p, err := h.Plan(context.Background(), cfg, allow, rc)
	if err != nil {
		tb.Fatalf("Plan: %v", err)
	}
	res, err := h.Apply(context.Background(), p)
	if res == nil {
		tb.Fatalf("Apply returned no result: %v", err)
	}
	return p, res, err
}

func hasAll(got []string, want ...string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			return false
		}
	}
	return true
}

const (
	macBridge = "bc:24:11:aa:bb:b0"
	macDock   = "02:42:ac:11:00:01"
)

func TestIntegrationApplyOwnedLinksOnly(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "ens4", mac1, "p4", "bc:24:11:00:00:01")
	addVeth(t, nh, "ens5", mac2, "p5", "bc:24:11:00:00:02")
	// Links that are not ours, configured as someone else would.
	must(t, nh.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0", HardwareAddr: hw(macBridge)}}))
	must(t, nh.LinkSetUp(link(t, nh, "br0")))
	addrAdd(t, nh, "br0", "10.99.0.1/24")
	addVeth(t, nh, "dock0", macDock, "dock1", "02:42:ac:11:00:02")
	must(t, nh.LinkSetUp(link(t, nh, "dock0")))
	must(t, nh.LinkSetUp(link(t, nh, "dock1")))
	addrAdd(t, nh, "dock0", "172.17.0.1/16")
	must(t, nh.RouteAdd(&netlink.Route{LinkIndex: link(t, nh, "dock0").Attrs().Index, Dst: ipNet(pfx("10.88.0.0/16")), Gw: net.ParseIP("172.17.0.2")}))
	untouched := []string{"br0", "dock0", "dock1", "p4", "p5"}
	before := state(t, nh, untouched...)

	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, Name: "eth0", MAC: mac1, MTU: 9000,
			Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("2001:db8::10/64")},
			Routes: []netcfg.Route{
				route("0.0.0.0/0", "192.0.2.1", 100),
				route("198.51.100.0/24", "192.0.2.254", 10),
				route("::/0", "2001:db8::1", 0),
			}},
		{ID: "eth1", Kind: netcfg.Physical, Name: "eth1", MAC: mac2, DHCP4: true},
		// The bridge's MAC is configured, but "bridge" is not an allowed driver.
		{ID: "br", Kind: netcfg.Physical, MAC: macBridge, Addresses: []netip.Prefix{pfx("10.99.0.2/24")}},
		{ID: "gone", Kind: netcfg.Physical, MAC: mac3, Addresses: []netip.Prefix{pfx("10.0.0.5/24")}},
	}}
	h := openAt(t, ns)
	p, res, err := planApply(t, h, cfg, Drivers("veth", "virtio_net"), nil)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	wantOps(t, p,
		"ens4 (bc:24:11:aa:bb:01): rename ens4 -> eth0",
		"ens5 (bc:24:11:aa:bb:02): rename ens5 -> eth1",
		"eth0 (bc:24:11:aa:bb:01): set mtu 9000",
		"eth0 (bc:24:11:aa:bb:01): link up",
		"eth1 (bc:24:11:aa:bb:02): link up",
		"eth0 (bc:24:11:aa:bb:01): add address 192.0.2.10/24",
		"eth0 (bc:24:11:aa:bb:01): add address 2001:db8::10/64",
		"eth0 (bc:24:11:aa:bb:01): add route default via 192.0.2.1 metric 100",
		"eth0 (bc:24:11:aa:bb:01): add route 198.51.100.0/24 via 192.0.2.254 metric 10",
		"eth0 (bc:24:11:aa:bb:01): add route default via 2001:db8::1 metric 1024",
	)
	// A bridge is a stacked link: never a NIC, whatever MAC it carries.
	wantNote(t, p, "br: not present")
	wantNote(t, p, "gone: not present")

	eth0 := link(t, nh, "eth0").Attrs()
	if eth0.HardwareAddr.String() != mac1 || eth0.MTU != 9000 || eth0.Flags&net.FlagUp == 0 {
		t.Errorf("eth0 = mac %s mtu %d flags %v", eth0.HardwareAddr, eth0.MTU, eth0.Flags)
	}
	if eth1 := link(t, nh, "eth1").Attrs(); eth1.HardwareAddr.String() != mac2 || eth1.Flags&net.FlagUp == 0 {
		t.Errorf("eth1 = mac %s flags %v", eth1.HardwareAddr, eth1.Flags)
	}
	if got := addrs(t, nh, "eth0"); !slices.Equal(got, []string{"192.0.2.10/24", "2001:db8::10/64"}) {
		t.Errorf("eth0 addresses = %v", got)
	}
	if got := routes(t, nh, "eth0"); !hasAll(got,
		// proto 4: static, which a networkd keeping static
		// configuration keeps.
		"default via 192.0.2.1 metric 100 table 254 proto 4",
		"198.51.100.0/24 via 192.0.2.254 metric 10 table 254 proto 4",
		"default via 2001:db8::1 metric 1024 table 254 proto 4") {
		t.Errorf("eth0 routes = %q", got)
	}
	if after := state(t, nh, untouched...); after != before {
		t.Errorf("links seedkeeper does not own changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// The receipt survives a save and load, and makes a second run a no-op.
	path := filepath.Join(t.TempDir(), "network-receipt.json")
	if _, err := res.Receipt.Save(path); err != nil {
		t.Fatal(err)
	}
	rc, err := LoadReceipt(path)
	must(t, err)
	if got := rc.Links[mac1].Addresses; len(got) != 2 {
		t.Errorf("receipt addresses of eth0 = %v, want the two added", got)
	}
	p2, res2, err := planApply(t, h, cfg, Drivers("veth", "virtio_net"), rc)
	if err != nil || len(p2.Ops) != 0 || len(res2.Ops) != 0 {
		t.Errorf("second apply: ops %q, err %v; want none", opStrings(p2), err)
	}
	if changed, err := res2.Receipt.Save(path); err != nil || changed {
		t.Errorf("second receipt save: changed %v, err %v; want unchanged", changed, err)
	}
	if after := state(t, nh, untouched...); after != before {
		t.Errorf("links seedkeeper does not own changed on the second run:\n%s", after)
	}
}

func TestIntegrationConfigChangeRemovesOnlyOurStaleAddress(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	h := openAt(t, ns)
	allow := Drivers("veth")

	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{Kind: netcfg.Physical, MAC: mac1,
		Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("192.0.2.11/24")},
		Routes:    []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0)}}}}
	_, res, err := planApply(t, h, cfg, allow, nil)
	must(t, err)

	// A person adds an address and a route of their own on the same link.
	addrAdd(t, nh, "eth0", "192.0.2.50/24")
	must(t, nh.RouteAdd(&netlink.Route{LinkIndex: link(t, nh, "eth0").Attrs().Index, Dst: ipNet(pfx("10.77.0.0/16")), Gw: net.ParseIP("192.0.2.1")}))

	cfg.Interfaces[0].Addresses = []netip.Prefix{pfx("192.0.2.10/24")}
	p, res, err := planApply(t, h, cfg, allow, res.Receipt)
	must(t, err)
	wantOps(t, p, "eth0 (bc:24:11:aa:bb:01): remove address 192.0.2.11/24 (added by seedkeeper, no longer configured)")
	if got := addrs(t, nh, "eth0"); !slices.Equal(got, []string{"192.0.2.10/24", "192.0.2.50/24"}) {
		t.Errorf("addresses = %v, want ours and the manual one", got)
	}
	if got := routes(t, nh, "eth0"); !hasAll(got, "default via 192.0.2.1 metric 0", "10.77.0.0/16 via 192.0.2.1") {
		t.Errorf("routes = %q", got)
	}
	if got := res.Receipt.Links[mac1].Addresses; !slices.Equal(got, []netip.Prefix{pfx("192.0.2.10/24")}) {
		t.Errorf("receipt addresses = %v", got)
	}

	// A route seedkeeper added before its routes were "static" is
	// "boot" (proto 3): it goes all the same.
	idx := link(t, nh, "eth0").Attrs().Index
	must(t, nh.RouteDel(&netlink.Route{LinkIndex: idx, Dst: ipNet(pfx("0.0.0.0/0")), Gw: net.ParseIP("192.0.2.1")}))
	must(t, nh.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: ipNet(pfx("0.0.0.0/0")), Gw: net.ParseIP("192.0.2.1"), Protocol: unix.RTPROT_BOOT}))
	if got := routes(t, nh, "eth0"); !hasAll(got, "default via 192.0.2.1 metric 0 table 254 proto 3") {
		t.Fatalf("routes = %q", got)
	}

	// Dropping everything removes ours and nothing else, even though ours is
	// the primary address of the subnet the manual one shares: by default
	// the kernel deletes a primary's secondaries with it.
	cfg.Interfaces[0].Addresses, cfg.Interfaces[0].Routes = nil, nil
	p, res, err = planApply(t, h, cfg, allow, res.Receipt)
	must(t, err)
	wantOps(t, p,
		"eth0 (bc:24:11:aa:bb:01): remove route default via 192.0.2.1 (added by seedkeeper, no longer configured)",
		"eth0 (bc:24:11:aa:bb:01): remove address 192.0.2.10/24 (added by seedkeeper, no longer configured)")
	if got := addrs(t, nh, "eth0"); !slices.Equal(got, []string{"192.0.2.50/24"}) {
		t.Errorf("addresses = %v, want only the manual one", got)
	}
	if got := routes(t, nh, "eth0"); !hasAll(got, "10.77.0.0/16 via 192.0.2.1") || hasAll(got, "default") {
		t.Errorf("routes = %q", got)
	}
	if len(res.Receipt.Links) != 0 {
		t.Errorf("receipt = %v, want empty", res.Receipt.Links)
	}
}

func TestIntegrationUnreachableGatewayIsPartial(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	h := openAt(t, ns)
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{Kind: netcfg.Physical, MAC: mac1,
		Addresses: []netip.Prefix{pfx("192.0.2.10/24")},
		Routes: []netcfg.Route{
			// A link-local gateway is taken as on the link, never
			// made on-link (a gateway outside every address is:
			// netcfg.Config.Plan); without an address in
			// 169.254.0.0/16 the kernel cannot reach it.
			route("0.0.0.0/0", "169.254.0.1", 0),
			route("198.51.100.0/24", "192.0.2.254", 0),
		}}}}
	p, res, err := planApply(t, h, cfg, Drivers("veth"), nil)
	if !errors.Is(err, ErrPartial) || !errors.Is(err, syscall.ENETUNREACH) || !res.Failed() {
		t.Fatalf("Apply error = %v, failed %v; want partial with ENETUNREACH", err, res.Failed())
	}
	if want := "eth0 (bc:24:11:aa:bb:01): add route default via 169.254.0.1: network is unreachable"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the operation (%q)", err, want)
	}
	var failed []string
	for _, o := range res.Ops {
		if o.Err != nil {
			failed = append(failed, o.Op.String())
		}
	}
	if len(res.Ops) != len(p.Ops) || !slices.Equal(failed, []string{"eth0 (bc:24:11:aa:bb:01): add route default via 169.254.0.1"}) {
		t.Errorf("failed ops = %q of %d results for %d ops", failed, len(res.Ops), len(p.Ops))
	}
	if got := addrs(t, nh, "eth0"); !slices.Equal(got, []string{"192.0.2.10/24"}) {
		t.Errorf("addresses = %v", got)
	}
	if got := routes(t, nh, "eth0"); !hasAll(got, "198.51.100.0/24 via 192.0.2.254") {
		t.Errorf("routes = %q; the reachable route was not applied", got)
	}
	if got := res.Receipt.Links[mac1].Routes; !slices.Equal(got, []netcfg.Route{route("198.51.100.0/24", "192.0.2.254", 0)}) {
		t.Errorf("receipt routes = %v, want only the applied one", got)
	}
	// The next run tries the failed route again, and only it.
	p2, err := h.Plan(context.Background(), cfg, Drivers("veth"), res.Receipt)
	must(t, err)
	wantOps(t, p2, "eth0 (bc:24:11:aa:bb:01): add route default via 169.254.0.1")
}

// A gateway outside every address of its link (a /32 with the gateway
// beside it, as hosting providers give) is on-link live, as the stacks'
// files have it: the live apply once added it without, which the kernel
// refuses, while networkd's file said GatewayOnLink=yes.
func TestIntegrationGatewayBesideA32IsOnLink(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	h := openAt(t, ns)
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "eth0", Kind: netcfg.Physical, MAC: mac1,
		Addresses: []netip.Prefix{pfx("203.0.113.7/32")},
		Routes:    []netcfg.Route{route("0.0.0.0/0", "172.31.1.1", 0)}}}}
	p, res, err := planApply(t, h, cfg, Drivers("veth"), nil)
	if err != nil {
		t.Fatalf("apply: %v\nops %q", err, opStrings(p))
	}
	wantOp := "eth0 (bc:24:11:aa:bb:01): add route default via 172.31.1.1 onlink"
	if !slices.Contains(opStrings(p), wantOp) {
		t.Errorf("ops %q lack %q", opStrings(p), wantOp)
	}
	if got := routes(t, nh, "eth0"); !hasAll(got, "default via 172.31.1.1") {
		t.Errorf("routes = %q", got)
	}
	p, err = h.Plan(context.Background(), cfg, Drivers("veth"), res.Receipt)
	must(t, err)
	wantOps(t, p)
}

// Renaming a link that is up takes it down, which drops its routes and IPv6
// addresses; the plan puts them back and the next run finds nothing to do.
func TestIntegrationRenameOfUpLinkAndNameSwap(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	addVeth(t, nh, "eth1", mac2, "peer1", "bc:24:11:00:00:02")
	must(t, nh.LinkSetUp(link(t, nh, "peer0")))
	h := openAt(t, ns)
	allow := Drivers("veth")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{Kind: netcfg.Physical, MAC: mac1, Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("2001:db8::10/64")},
			Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0), route("2001:db8:1::/64", "2001:db8::1", 0)}},
		{Kind: netcfg.Physical, MAC: mac2},
	}}
	_, res, err := planApply(t, h, cfg, allow, nil)
	must(t, err)

	cfg.Interfaces[0].Name, cfg.Interfaces[1].Name = "eth1", "eth0"
	p, res, err := planApply(t, h, cfg, allow, res.Receipt)
	if err != nil {
		t.Fatalf("swap: %v\nops %q", err, opStrings(p))
	}
	if got := link(t, nh, "eth1").Attrs(); got.HardwareAddr.String() != mac1 || got.Flags&net.FlagUp == 0 {
		t.Errorf("eth1 = %s up %v, want %s up", got.HardwareAddr, got.Flags&net.FlagUp != 0, mac1)
	}
	if got := link(t, nh, "eth0").Attrs(); got.HardwareAddr.String() != mac2 {
		t.Errorf("eth0 = %s, want %s", got.HardwareAddr, mac2)
	}
	if got := addrs(t, nh, "eth1"); !slices.Equal(got, []string{"192.0.2.10/24", "2001:db8::10/64"}) {
		t.Errorf("eth1 addresses = %v", got)
	}
	if got := routes(t, nh, "eth1"); !hasAll(got, "default via 192.0.2.1", "2001:db8:1::/64 via 2001:db8::1 metric 1024") {
		t.Errorf("eth1 routes = %q", got)
	}
	p, err = h.Plan(context.Background(), cfg, allow, res.Receipt)
	must(t, err)
	wantOps(t, p)
}

// A NIC boot renames keeps the name it had as an alternative name, so that
// what named it before (netplan's systemd-networkd-wait-online drop-in,
// written by its generator before boot ran: a wait-online that timed out
// after 120 s on every boot of a netplan image) still finds it; two NICs
// that trade names keep none, and a rename back to the old name takes it
// from the alternative names first.
func TestIntegrationRenameKeepsTheOldNameAsAnAltName(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "ens4", mac1, "peer0", "bc:24:11:00:00:01")
	must(t, nh.LinkSetUp(link(t, nh, "peer0")))
	h := openAt(t, ns)
	allow := Drivers("veth")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{Kind: netcfg.Physical, MAC: mac1, Name: "eth0", Addresses: []netip.Prefix{pfx("192.0.2.10/24")}},
	}}
	_, res, err := planApply(t, h, cfg, allow, nil)
	must(t, err)
	if got := link(t, nh, "eth0").Attrs().AltNames; !slices.Equal(got, []string{"ens4"}) {
		t.Errorf("eth0 alternative names = %q, want [ens4]", got)
	}
	if got := addrs(t, nh, "eth0"); !slices.Equal(got, []string{"192.0.2.10/24"}) {
		t.Errorf("eth0 addresses = %v", got)
	}
	p, err := h.Plan(context.Background(), cfg, allow, res.Receipt)
	must(t, err)
	wantOps(t, p)

	// Back to the old name: the alternative name is given up, not a clash.
	cfg.Interfaces[0].Name = "ens4"
	_, res, err = planApply(t, h, cfg, allow, res.Receipt)
	must(t, err)
	if got := link(t, nh, "ens4").Attrs(); got.HardwareAddr.String() != mac1 || slices.Contains(got.AltNames, "ens4") {
		t.Errorf("ens4 = %s, alternative names %q", got.HardwareAddr, got.AltNames)
	}

	// Two NICs trading names keep no old name: each is the other's.
	addVeth(t, nh, "eth1", mac2, "peer1", "bc:24:11:00:00:02")
	cfg.Interfaces[0].Name = "eth1"
	cfg.Interfaces = append(cfg.Interfaces, netcfg.Interface{Kind: netcfg.Physical, MAC: mac2, Name: "ens4"})
	_, _, err = planApply(t, h, cfg, allow, res.Receipt)
	must(t, err)
	for name, mac := range map[string]string{"eth1": mac1, "ens4": mac2} {
		got := link(t, nh, name).Attrs()
		if got.HardwareAddr.String() != mac {
			t.Errorf("%s = %s, want %s", name, got.HardwareAddr, mac)
		}
		if slices.ContainsFunc(got.AltNames, func(n string) bool { return n == "eth1" || n == "ens4" || strings.HasPrefix(n, "sktmp") }) {
			t.Errorf("%s alternative names = %q: a traded or temporary name was kept", name, got.AltNames)
		}
	}
}

// The old name a rename keeps is counted as taken by the kernel: renaming
// another NIC to it failed the apply with EEXIST. The receipt records the
// alternative names seedkeeper gave, and only those are given up for
// another NIC to take; one a person gave a link keeps the owned NIC's
// name, with a note, and the apply does not fail.
func TestIntegrationRenameToAnAltNameSeedkeeperGave(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "ens4", mac1, "peer0", "bc:24:11:00:00:01")
	h := openAt(t, ns)
	allow := Drivers("veth")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{Kind: netcfg.Physical, MAC: mac1, Name: "eth0"}}}
	_, res, err := planApply(t, h, cfg, allow, nil)
	must(t, err)
	if got := res.Receipt.Links[mac1].AltNames; !slices.Equal(got, []string{"ens4"}) {
		t.Fatalf("receipt alternative names = %q, want [ens4]", got)
	}

	addVeth(t, nh, "ens5", mac2, "peer1", "bc:24:11:00:00:02")
	cfg.Interfaces = append(cfg.Interfaces, netcfg.Interface{Kind: netcfg.Physical, MAC: mac2, Name: "ens4"})
	_, res, err = planApply(t, h, cfg, allow, res.Receipt)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := link(t, nh, "ens4").Attrs().HardwareAddr.String(); got != mac2 {
		t.Errorf("ens4 is %s, want %s", got, mac2)
	}
	if got := link(t, nh, "eth0").Attrs().AltNames; slices.Contains(got, "ens4") {
		t.Errorf("eth0 still holds ens4: %q", got)
	}
	if got := res.Receipt.Links[mac1].AltNames; len(got) != 0 {
		t.Errorf("receipt still lists %q for %s", got, mac1)
	}

	// A person's alternative name on a link seedkeeper does not own.
	addVeth(t, nh, "other0", "bc:24:11:00:00:09", "peer9", "bc:24:11:00:00:0a")
	must(t, nh.LinkAddAltName(link(t, nh, "other0"), "lan9"))
	cfg.Interfaces[1].Name = "lan9"
	p, _, err := planApply(t, h, cfg, allow, res.Receipt)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	wantNote(t, p, "set-name lan9 not applied: another link has that name as an alternative name")
	if got := link(t, nh, "ens4").Attrs().HardwareAddr.String(); got != mac2 {
		t.Errorf("ens4 is %s, want %s", got, mac2)
	}
	if got := link(t, nh, "other0").Attrs().AltNames; !slices.Equal(got, []string{"lan9"}) {
		t.Errorf("other0 alternative names = %q", got)
	}
}

// fakeDumps interrupts the first dumps of a real handle.
type fakeDumps struct {
	nlHandle
	links, addrs, routes int // interruptions left
}

func (f *fakeDumps) LinkList() ([]netlink.Link, error) {
	if f.links > 0 {
		f.links--
		return nil, netlink.ErrDumpInterrupted
	}
	return f.nlHandle.LinkList()
}

func (f *fakeDumps) AddrList(l netlink.Link, family int) ([]netlink.Addr, error) {
	if f.addrs > 0 {
		f.addrs--
		return nil, netlink.ErrDumpInterrupted
	}
	return f.nlHandle.AddrList(l, family)
}

func (f *fakeDumps) RouteListFiltered(family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	if f.routes > 0 {
		f.routes--
		return nil, netlink.ErrDumpInterrupted
	}
	return f.nlHandle.RouteListFiltered(family, filter, mask)
}

func TestIntegrationDumpInterruptedIsRetried(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	addrAdd(t, nh, "eth0", "192.0.2.10/24")
	h := openAt(t, ns)
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{Kind: netcfg.Physical, MAC: mac1,
		Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("192.0.2.11/24")}}}}

	real := h.nl
	h.nl = &fakeDumps{nlHandle: real, links: dumpTries - 1, addrs: 2, routes: 1}
	p, err := h.Plan(context.Background(), cfg, Drivers("veth"), nil)
	must(t, err)
	wantOps(t, p, "eth0 (bc:24:11:aa:bb:01): link up", "eth0 (bc:24:11:aa:bb:01): add address 192.0.2.11/24")

	h.nl = &fakeDumps{nlHandle: real, links: dumpTries}
	_, err = h.Plan(context.Background(), cfg, Drivers("veth"), nil)
	if !errors.Is(err, netlink.ErrDumpInterrupted) || !strings.Contains(err.Error(), "listing links: interrupted 5 times") {
		t.Errorf("Plan with endless interruptions = %v", err)
	}
	h.nl = real
}

func TestIntegrationDriver(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	must(t, nh.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}))
	h := openAt(t, ns)
	for name, want := range map[string]string{"eth0": "veth", "br0": "bridge"} {
		if got, err := h.Driver(name); err != nil || got != want {
			t.Errorf("Driver(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	// The socket is in the test's namespace, not the host's.
	if _, err := h.Driver("nosuchlink0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("Driver of a missing link = %v, want ENODEV", err)
	}
}

func BenchmarkIntegrationPlanApply(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("nics=%d", n), func(b *testing.B) {
			ns, nh := newNS(b)
			cfg := &netcfg.Config{}
			for i := range n {
				mac := fmt.Sprintf("bc:24:11:00:%02x:%02x", i>>8, i&0xff)
				addVeth(b, nh, fmt.Sprintf("ens%d", i), mac, fmt.Sprintf("p%d", i), fmt.Sprintf("bc:24:12:00:%02x:%02x", i>>8, i&0xff))
				cfg.Interfaces = append(cfg.Interfaces, netcfg.Interface{
					Kind: netcfg.Physical, MAC: mac, Name: fmt.Sprintf("eth%d", i), MTU: 9000,
					Addresses: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 10}), 24)},
					Routes:    []netcfg.Route{{To: netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16, byte(i), 0}), 24), Via: netip.AddrFrom4([4]byte{10, byte(i), 0, 1})}},
				})
			}
			h := openAt(b, ns)
			allow := Drivers("veth")
			ctx := context.Background()
			reset := func() {
				for i := range n {
					l, err := nh.LinkByName(fmt.Sprintf("eth%d", i))
					if err != nil {
						continue
					}
					must(b, nh.LinkSetDown(l))
					must(b, nh.LinkSetName(l, fmt.Sprintf("ens%d", i)))
					must(b, nh.LinkSetMTU(l, 1500))
					as, err := nh.AddrList(l, netlink.FAMILY_V4)
					must(b, err)
					for _, a := range as {
						must(b, nh.AddrDel(l, &a))
					}
				}
			}
			b.Run("apply", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					reset()
					b.StartTimer()
					p, err := h.Plan(ctx, cfg, allow, nil)
					must(b, err)
					if _, err := h.Apply(ctx, p); err != nil {
						b.Fatal(err)
					}
					if len(p.Ops) != 5*n {
						b.Fatalf("%d ops, want %d", len(p.Ops), 5*n)
					}
				}
			})
			reset()
			p, err := h.Plan(ctx, cfg, allow, nil)
			must(b, err)
			res, err := h.Apply(ctx, p)
			must(b, err)
			b.Run("noop", func(b *testing.B) {
				for b.Loop() {
					p, err := h.Plan(ctx, cfg, allow, res.Receipt)
					must(b, err)
					if len(p.Ops) != 0 {
						b.Fatalf("second plan has %d ops", len(p.Ops))
					}
				}
			})
		})
	}
}

// A bridge takes the MAC of its first port, as a VLAN takes its parent's
// and a bond gives its own to its members: the configured NIC must still
// be the one link its MAC selects, and the bridge is never touched.
func TestIntegrationStackedLinkWithNICMACDoesNotStealIt(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "p0", "bc:24:11:00:00:09")
	must(t, nh.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br9"}}))
	must(t, nh.LinkSetMaster(link(t, nh, "eth0"), link(t, nh, "br9").(*netlink.Bridge)))
	if got := link(t, nh, "br9").Attrs().HardwareAddr.String(); got != mac1 {
		t.Skipf("the bridge did not take its port's MAC (%s); nothing to test", got)
	}
	before := state(t, nh, "br9")
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1, Addresses: []netip.Prefix{pfx("192.0.2.10/24")}},
	}}
	h := openAt(t, ns)
	p, _, err := planApply(t, h, cfg, Drivers("veth", "bridge"), &Receipt{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Owned) != 1 || p.Owned[0] != "eth0" {
		t.Fatalf("owned = %v, notes %q; want eth0 owned despite the bridge carrying its MAC", p.Owned, p.Notes)
	}
	if got := addrs(t, nh, "eth0"); !hasAll(got, "192.0.2.10/24") {
		t.Errorf("eth0 addresses = %v", got)
	}
	if after := state(t, nh, "br9"); after != before {
		t.Errorf("the bridge changed:\n%s\n%s", before, after)
	}
}

// routing-policy was ignored while the routes with table: were kept, so
// source routing silently did nothing: the rules are made in the kernel,
// a second run changes nothing, and a rule no longer configured is
// removed while one someone else made stays.
func TestIntegrationRoutingRules(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	h := openAt(t, ns)
	allow := Drivers("veth")
	cfg, err := netcfg.Parse([]byte("version: 2\nethernets:\n" +
		"  eth0: {match: {macaddress: '" + mac1 + "'}, addresses: [192.0.2.5/24, '2001:db8::5/64'], routes: [{to: default, via: 192.0.2.1, table: 100}]," +
		" routing-policy: [{from: 192.0.2.0/24, table: 100, priority: 10}, {to: 198.51.100.0/24, table: 101, mark: 5}, {from: '2001:db8::/64', table: 100}]}\n"))
	must(t, err)
	other := netlink.NewRule()
	other.Family, other.Src, other.Table, other.Priority = unix.AF_INET, ipNet(pfx("10.9.0.0/16")), 9, 100
	must(t, nh.RuleAdd(other))

	rules := func() []string {
		t.Helper()
		var out []string
		for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			rs, err := nh.RuleList(fam)
			must(t, err)
			for _, r := range rs {
				if rr, ok := ruleOf(r); ok && rr.Table != mainTable && rr.Table != 253 && rr.Table != 255 {
					if rr.Priority != 10 && rr.Priority != 100 {
						rr.Priority = 0 // the kernel's choice
					}
					out = append(out, ruleString(rr))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	_, res, err := planApply(t, h, cfg, allow, nil)
	must(t, err)
	want := []string{"from 2001:db8::/64 table 100", "priority 10 from 192.0.2.0/24 table 100", "priority 100 from 10.9.0.0/16 table 9", "to 198.51.100.0/24 fwmark 5 table 101"}
	if got := rules(); !slices.Equal(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
	p, res, err := planApply(t, h, cfg, allow, res.Receipt)
	must(t, err)
	wantOps(t, p)

	cfg.Interfaces[0].RoutingPolicy = cfg.Interfaces[0].RoutingPolicy[:1]
	_, _, err = planApply(t, h, cfg, allow, res.Receipt)
	must(t, err)
	want = []string{"priority 10 from 192.0.2.0/24 table 100", "priority 100 from 10.9.0.0/16 table 9"}
	if got := rules(); !slices.Equal(got, want) {
		t.Errorf("after the change, rules %q, want %q", got, want)
	}
}

// An explicit on-link: true was dropped, so the live apply could not add a
// default route through a gateway outside the link's /32 (the kernel
// refuses it as unreachable): it is added on-link, and a second run
// changes nothing.
func TestIntegrationOnLinkRoute(t *testing.T) {
	testenv.Integration(t)
	ns, nh := newNS(t)
	addVeth(t, nh, "eth0", mac1, "peer0", "bc:24:11:00:00:01")
	h := openAt(t, ns)
	allow := Drivers("veth")
	cfg, err := netcfg.Parse([]byte("version: 2\nethernets:\n" +
		"  eth0: {match: {macaddress: '" + mac1 + "'}, addresses: [192.0.2.5/32], routes: [{to: default, via: 198.51.100.1, on-link: true}]}\n"))
	must(t, err)
	_, res, err := planApply(t, h, cfg, allow, nil)
	must(t, err)
	if got := routes(t, nh, "eth0"); !hasAll(got, "default via 198.51.100.1 metric 0") {
		t.Errorf("routes = %q", got)
	}
	p, res, err := planApply(t, h, cfg, allow, res.Receipt)
	must(t, err)
	wantOps(t, p)
	back, err := ParseReceipt(res.Receipt.Marshal())
	must(t, err)
	if rs := back.Links[mac1].Routes; len(rs) != 1 || !rs[0].OnLink {
		t.Errorf("receipt routes %+v", rs)
	}
}
