package apply

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

const (
	mac1 = "bc:24:11:aa:bb:01"
	mac2 = "bc:24:11:aa:bb:02"
	mac3 = "bc:24:11:aa:bb:03"
)

var virtio = Drivers("virtio_net", "e1000")

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

func route(to, via string, metric int) netcfg.Route {
	r := netcfg.Route{To: pfx(to), Metric: metric}
	if via != "" {
		r.Via = ip(via)
	}
	return r
}

func opStrings(p *Plan) []string {
	var out []string
	for _, op := range p.Ops {
		out = append(out, op.String())
	}
	return out
}

func wantOps(t *testing.T, p *Plan, want ...string) {
	t.Helper()
	got := opStrings(p)
	if !slices.Equal(got, want) {
		t.Errorf("ops:\n  %s\nwant:\n  %s\nnotes: %q", strings.Join(got, "\n  "), strings.Join(want, "\n  "), p.Notes)
	}
}

func wantNote(t *testing.T, p *Plan, sub string) {
	t.Helper()
	for _, n := range p.Notes {
		if strings.Contains(n, sub) {
			return
		}
	}
	t.Errorf("no note containing %q in %q", sub, p.Notes)
}

// staticCfg is one NIC with everything the live apply handles.
func staticCfg() *netcfg.Config {
	return &netcfg.Config{Interfaces: []netcfg.Interface{{
		ID: "eth0", Kind: netcfg.Physical, Name: "eth0", MAC: "BC:24:11:AA:BB:01", MTU: 9000,
		Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("2001:db8::10/64")},
		Routes: []netcfg.Route{
			route("0.0.0.0/0", "192.0.2.1", 100),
			route("::/0", "2001:db8::1", 0),
			route("198.51.100.0/24", "192.0.2.254", 0),
			route("203.0.113.0/24", "", 10),
		},
	}}}
}

func TestDiffFreshLink(t *testing.T) {
	live := []Link{{Index: 3, Name: "ens4", MAC: mac1, MTU: 1500, Driver: "virtio_net"}}
	p := Diff(staticCfg(), live, virtio, nil)
	wantOps(t, p,
		"ens4 (bc:24:11:aa:bb:01): rename ens4 -> eth0",
		"eth0 (bc:24:11:aa:bb:01): set mtu 9000",
		"eth0 (bc:24:11:aa:bb:01): link up",
		"eth0 (bc:24:11:aa:bb:01): add address 192.0.2.10/24",
		"eth0 (bc:24:11:aa:bb:01): add address 2001:db8::10/64",
		"eth0 (bc:24:11:aa:bb:01): add route default via 192.0.2.1 metric 100",
		"eth0 (bc:24:11:aa:bb:01): add route default via 2001:db8::1 metric 1024",
		"eth0 (bc:24:11:aa:bb:01): add route 198.51.100.0/24 via 192.0.2.254",
		"eth0 (bc:24:11:aa:bb:01): add route 203.0.113.0/24 on-link metric 10",
	)
	for _, op := range p.Ops {
		if op.Index != 3 || op.MAC != mac1 {
			t.Errorf("%v: index %d mac %s, want 3 %s", op, op.Index, op.MAC, mac1)
		}
	}
	if len(p.Receipt().Links) != 0 {
		t.Errorf("receipt before apply = %v, want empty", p.Receipt().Links)
	}
}

// converged is the live state of staticCfg after a successful apply.
func converged() Link {
	return Link{Index: 3, Name: "eth0", MAC: mac1, MTU: 9000, Up: true, Driver: "virtio_net",
		Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("2001:db8::10/64"), pfx("fe80::1/64")},
		Routes: []netcfg.Route{
			route("192.0.2.0/24", "", 0),
			route("0.0.0.0/0", "192.0.2.1", 100),
			route("::/0", "2001:db8::1", 1024),
			route("198.51.100.0/24", "192.0.2.254", 0),
			route("203.0.113.0/24", "", 10),
		}}
}

func TestDiffConvergedIsEmpty(t *testing.T) {
	p := Diff(staticCfg(), []Link{converged()}, virtio, nil)
	wantOps(t, p)
	if got := p.String(); !strings.HasPrefix(got, "no changes\n") {
		t.Errorf("String() = %q, want it to start with \"no changes\"", got)
	}
}

func TestDiffNeverRemovesWhatIsNotOurs(t *testing.T) {
	l := converged()
	l.Addresses = append(l.Addresses, pfx("10.9.9.9/8"))
	l.Routes = append(l.Routes, route("10.0.0.0/8", "192.0.2.99", 5))
	// The receipt says we added only the first address; the rest was there.
	rc := &Receipt{Links: map[string]Added{mac1: {Addresses: []netip.Prefix{pfx("192.0.2.10/24")}}}}
	cfg := staticCfg()
	cfg.Interfaces[0].Addresses = nil // config drops everything
	cfg.Interfaces[0].Routes = nil
	p := Diff(cfg, []Link{l}, virtio, rc)
	wantOps(t, p, "eth0 (bc:24:11:aa:bb:01): remove address 192.0.2.10/24 (added by seedkeeper, no longer configured)")
	if _, ok := p.Receipt().Links[mac1]; ok {
		t.Errorf("receipt still has %s: %v", mac1, p.Receipt().Links[mac1])
	}
}

func TestDiffRemovesOnlyOurStaleObjects(t *testing.T) {
	l := converged()
	l.Addresses = append(l.Addresses, pfx("192.0.2.11/24"), pfx("10.9.9.9/8"))
	l.Routes = append(l.Routes, route("192.0.2.128/25", "192.0.2.1", 7))
	rc := &Receipt{Links: map[string]Added{mac1: {
		Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("192.0.2.11/24"), pfx("192.0.2.12/24")},
		Routes:    []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 100), route("192.0.2.128/25", "192.0.2.1", 7)},
	}}}
	p := Diff(staticCfg(), []Link{l}, virtio, rc)
	wantOps(t, p,
		"eth0 (bc:24:11:aa:bb:01): remove route 192.0.2.128/25 via 192.0.2.1 metric 7 (added by seedkeeper, no longer configured)",
		"eth0 (bc:24:11:aa:bb:01): remove address 192.0.2.11/24 (added by seedkeeper, no longer configured)",
	)
	// 192.0.2.12/24 was ours but is gone already: forgotten, no operation.
	got := p.Receipt().Links[mac1]
	want := Added{Addresses: []netip.Prefix{pfx("192.0.2.10/24")}, Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 100)}}
	if !slices.Equal(got.Addresses, want.Addresses) || !slices.Equal(got.Routes, want.Routes) {
		t.Errorf("receipt = %+v, want %+v", got, want)
	}
}

func TestDiffReaddsOurDeletedAddress(t *testing.T) {
	l := converged()
	l.Addresses = l.Addresses[1:] // someone deleted 192.0.2.10/24
	rc := &Receipt{Links: map[string]Added{mac1: {Addresses: []netip.Prefix{pfx("192.0.2.10/24")}}}}
	p := Diff(staticCfg(), []Link{l}, virtio, rc)
	wantOps(t, p, "eth0 (bc:24:11:aa:bb:01): add address 192.0.2.10/24")
}

func TestDiffOwnership(t *testing.T) {
	unowned := Link{Index: 7, Name: "veth9", MAC: mac3, Driver: "veth"}
	tests := []struct {
		name  string
		live  []Link
		allow Allowlist
		note  string
		// absent: a NIC that is there but not owned is not absent,
		// so no stack is told to expect it.
		absent []string
	}{
		{"mac not in config", []Link{unowned}, virtio, "eth0: not present", []string{"eth0"}},
		{"mac on a bridge", []Link{{Index: 3, Name: "br1", MAC: mac1, Kind: "bridge", Stacked: true}}, virtio, "eth0: not present", nil},
		{"driver not allowed", []Link{{Index: 3, Name: "ens4", MAC: mac1, Driver: "veth"}}, virtio, `driver "veth" is not allowed`, nil},
		{"driver unknown", []Link{{Index: 3, Name: "ens4", MAC: mac1}}, virtio, "driver unknown is not allowed", nil},
		{"nil allowlist", []Link{{Index: 3, Name: "ens4", MAC: mac1, Driver: "virtio_net"}}, nil, "not allowed", nil},
		{"empty allowlist", []Link{{Index: 3, Name: "ens4", MAC: mac1, Driver: "virtio_net"}}, Drivers(), "not allowed", nil},
		{"same mac twice", []Link{{Index: 3, Name: "ens4", MAC: mac1, Driver: "virtio_net"}, {Index: 4, Name: "ens5", MAC: mac1, Driver: "virtio_net"}}, virtio, "matches 2 links (ens4, ens5)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Diff(staticCfg(), tt.live, tt.allow, nil)
			wantOps(t, p)
			wantNote(t, p, tt.note)
			if !slices.Equal(p.Absent, tt.absent) {
				t.Errorf("Absent = %q, want %q", p.Absent, tt.absent)
			}
		})
	}
}

func TestDiffNoConfig(t *testing.T) {
	rc := &Receipt{Links: map[string]Added{mac1: {Addresses: []netip.Prefix{pfx("192.0.2.10/24")}}}}
	p := Diff(nil, []Link{{Index: 3, Name: "eth0", MAC: mac1, Driver: "virtio_net"}}, virtio, rc)
	wantOps(t, p)
	wantNote(t, p, "no network configuration")
	if got := p.Receipt().Links[mac1].Addresses; !slices.Equal(got, []netip.Prefix{pfx("192.0.2.10/24")}) {
		t.Errorf("receipt not carried over: %v", got)
	}
}

func TestDiffReceiptOfUnconfiguredNICIsKept(t *testing.T) {
	rc := &Receipt{Links: map[string]Added{mac2: {Addresses: []netip.Prefix{pfx("10.0.0.5/24")}}}}
	live := []Link{converged(), {Index: 4, Name: "eth1", MAC: mac2, Driver: "virtio_net", Addresses: []netip.Prefix{pfx("10.0.0.5/24")}}}
	p := Diff(staticCfg(), live, virtio, rc)
	wantOps(t, p)
	wantNote(t, p, mac2+": in the receipt but no longer configured; left as it is")
	if _, ok := p.Receipt().Links[mac2]; !ok {
		t.Errorf("receipt lost %s", mac2)
	}
}

func TestDiffMatchByName(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth1", Kind: netcfg.Physical, Name: "eth1", DHCP4: true},                                // v1 without mac_address
		{ID: "lan", Kind: netcfg.Physical, MatchName: "ens*", Name: "lan0", SLAAC: true},              // v2 match.name + set-name
		{ID: "wan", Kind: netcfg.Physical, MatchDriver: "e1000"},                                      // driver only
		{ID: "opt", Kind: netcfg.Physical, MatchName: "opt*", MatchDriver: "virtio_net", DHCP6: true}, // name and driver
	}}
	live := []Link{
		{Index: 2, Name: "eth1", MAC: mac1, Driver: "virtio_net", Up: true},
		{Index: 3, Name: "ens5", MAC: mac2, Driver: "virtio_net"},
		{Index: 4, Name: "opt1", MAC: mac3, Driver: "e1000"},
	}
	p := Diff(cfg, live, virtio, nil)
	wantOps(t, p,
		"ens5 (bc:24:11:aa:bb:02): rename ens5 -> lan0",
		"lan0 (bc:24:11:aa:bb:02): link up",
	)
	wantNote(t, p, "wan: matched by driver e1000 only")
	wantNote(t, p, "opt: not present")

	// After the rename the entry still finds its link, by the new name.
	live[1].Name, live[1].Up = "lan0", true
	wantOps(t, Diff(cfg, live, virtio, nil))
}

func TestDiffSwapNames(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{Kind: netcfg.Physical, MAC: mac1, Name: "eth1"},
		{Kind: netcfg.Physical, MAC: mac2, Name: "eth0"},
		{Kind: netcfg.Physical, MAC: mac3, Name: "eth2"},
	}}
	live := []Link{
		{Index: 2, Name: "eth0", MAC: mac1, Driver: "virtio_net", Up: true},
		{Index: 3, Name: "eth1", MAC: mac2, Driver: "virtio_net", Up: true},
		{Index: 4, Name: "ens6", MAC: mac3, Driver: "virtio_net", Up: true},
	}
	p := Diff(cfg, live, virtio, nil)
	// Play the renames against the kernel's rule: a name is unique.
	names := map[string]int{"eth0": 2, "eth1": 3, "ens6": 4}
	for _, op := range p.Ops {
		if op.Kind != Rename {
			t.Fatalf("unexpected op %v", op)
		}
		if !op.wasUp {
			t.Errorf("%v: link is up, must be taken down to rename", op)
		}
		if names[op.Name] != op.Index {
			t.Fatalf("%v: link %d is not called %s", op, op.Index, op.Name)
		}
		if _, taken := names[op.NewName]; taken {
			t.Fatalf("%v: %s is taken; ops %q", op, op.NewName, opStrings(p))
		}
		delete(names, op.Name)
		names[op.NewName] = op.Index
	}
	want := map[string]int{"eth1": 2, "eth0": 3, "eth2": 4}
	for n, i := range want {
		if names[n] != i {
			t.Errorf("after renames %s is link %d, want %d (ops %q)", n, names[n], i, opStrings(p))
		}
	}
}

// Taking a link down to rename it drops its routes and IPv6 addresses; the
// plan must add them back.
func TestDiffRenameOfUpLinkReaddsFlushedObjects(t *testing.T) {
	l := converged()
	l.Name = "ens4"
	p := Diff(staticCfg(), []Link{l}, virtio, nil)
	wantOps(t, p,
		"ens4 (bc:24:11:aa:bb:01): rename ens4 -> eth0",
		"eth0 (bc:24:11:aa:bb:01): add address 2001:db8::10/64",
		"eth0 (bc:24:11:aa:bb:01): add route default via 192.0.2.1 metric 100",
		"eth0 (bc:24:11:aa:bb:01): add route default via 2001:db8::1 metric 1024",
		"eth0 (bc:24:11:aa:bb:01): add route 198.51.100.0/24 via 192.0.2.254",
		"eth0 (bc:24:11:aa:bb:01): add route 203.0.113.0/24 on-link metric 10",
	)
}

func TestDiffGlobalRoutesAndOtherKinds(t *testing.T) {
	cfg := &netcfg.Config{
		Interfaces: []netcfg.Interface{
			{ID: "a", Kind: netcfg.Physical, MAC: mac1, Addresses: []netip.Prefix{pfx("192.0.2.10/24")}},
			{ID: "b", Kind: netcfg.Physical, MAC: mac2, Addresses: []netip.Prefix{pfx("198.51.100.10/24")}},
			{ID: "bond0", Kind: netcfg.Bond, Links: []string{"a", "b"}},
		},
		Routes: []netcfg.Route{
			route("10.0.0.0/8", "198.51.100.1", 0),
			route("172.16.0.0/12", "203.0.113.1", 0),
		},
	}
	live := []Link{
		{Index: 2, Name: "eth0", MAC: mac1, Driver: "virtio_net", Up: true, Addresses: []netip.Prefix{pfx("192.0.2.10/24")}},
		{Index: 3, Name: "eth1", MAC: mac2, Driver: "virtio_net", Up: true, Addresses: []netip.Prefix{pfx("198.51.100.10/24")}},
	}
	p := Diff(cfg, live, virtio, nil)
	wantOps(t, p,
		"bond0 (bond): create",
		"eth0 (bc:24:11:aa:bb:01): enslave to bond0",
		"eth1 (bc:24:11:aa:bb:02): enslave to bond0",
		"bond0 (bond): link up")
	// A bond member carries none of its own addresses, so no global
	// route either: the live apply leaves out what the files leave out.
	wantNote(t, p, "b: a member of bond0: its own addresses")
	wantNote(t, p, "route 10.0.0.0/8 via 198.51.100.1: no owned link")
	wantNote(t, p, "route 172.16.0.0/12 via 203.0.113.1: no owned link")
}

func TestDiffDHCPOnlyBringsLinkUp(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{Kind: netcfg.Physical, MAC: mac1, DHCP4: true, DHCP6: true}}}
	p := Diff(cfg, []Link{{Index: 2, Name: "eth0", MAC: mac1, Driver: "virtio_net", MTU: 1500}}, virtio, nil)
	wantOps(t, p, "eth0 (bc:24:11:aa:bb:01): link up")
}

func TestReceiptRecord(t *testing.T) {
	r := (*Receipt)(nil).clone()
	add := Op{Kind: AddAddress, MAC: mac1, Address: pfx("192.0.2.10/24")}
	r.record(add, nil)
	r.record(Op{Kind: AddAddress, MAC: mac1, Address: pfx("192.0.2.11/24")}, syscall.EEXIST)
	r.record(Op{Kind: RemoveAddress, MAC: mac1, Address: pfx("192.0.2.12/24")}, nil)
	r.record(Op{Kind: RemoveAddress, MAC: mac1, Address: pfx("192.0.2.13/24")}, syscall.EPERM)
	r.record(Op{Kind: AddRoute, MAC: mac2, Route: route("0.0.0.0/0", "192.0.2.1", 0)}, nil)
	r.record(Op{Kind: SetMTU, MAC: mac3, MTU: 9000}, nil)
	want := map[string]Added{
		mac1: {Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("192.0.2.13/24")}},
		mac2: {Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0)}},
	}
	if len(r.Links) != len(want) {
		t.Fatalf("receipt = %+v, want %+v", r.Links, want)
	}
	for mac, w := range want {
		g := r.Links[mac]
		if !slices.Equal(g.Addresses, w.Addresses) || !slices.Equal(g.Routes, w.Routes) {
			t.Errorf("%s: %+v, want %+v", mac, g, w)
		}
	}
}

func TestResultErr(t *testing.T) {
	bad := Op{Kind: AddRoute, MAC: mac1, Name: "eth0", Route: route("0.0.0.0/0", "203.0.113.1", 0)}
	r := &Result{Ops: []OpResult{
		{Op: Op{Kind: LinkUp, MAC: mac1, Name: "eth0"}},
		{Op: bad, Err: syscall.ENETUNREACH},
	}}
	if !r.Failed() {
		t.Fatal("Failed() = false")
	}
	err := r.Err()
	if !errors.Is(err, ErrPartial) || !errors.Is(err, syscall.ENETUNREACH) {
		t.Errorf("error %v does not wrap ErrPartial and ENETUNREACH", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op.Kind != AddRoute {
		t.Errorf("error %v carries no *OpError for the route", err)
	}
	want := "network applied partially: 1 of 2 operations failed: eth0 (bc:24:11:aa:bb:01): add route default via 203.0.113.1: network is unreachable"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	r.Ops = r.Ops[:1]
	if r.Failed() || r.Err() != nil {
		t.Errorf("all ok: Failed() = %v, Err() = %v", r.Failed(), r.Err())
	}
}

// TestDiffOneBadFieldDegradesThatField: one route with metric -1 on a NIC
// that is not even present used to refuse the whole network config, so
// the valid NIC got no address. In each format the route alone is left
// out, the plan says so, and the valid NIC is configured.
func TestDiffOneBadFieldDegradesThatField(t *testing.T) {
	v1 := `version: 1
config:
- {type: physical, name: eth0, mac_address: "` + mac1 + `", subnets: [{type: static, address: 192.0.2.10/24}]}
- {type: physical, name: eth1, mac_address: "` + mac2 + `", subnets: [{type: static, address: 198.51.100.10/24,
   routes: [{network: 10.0.0.0/8, gateway: 198.51.100.1, metric: -1}]}]}
`
	v2 := `version: 2
ethernets:
  eth0: {match: {macaddress: "` + mac1 + `"}, set-name: eth0, addresses: [192.0.2.10/24]}
  eth1: {match: {macaddress: "` + mac2 + `"}, set-name: eth1, addresses: [198.51.100.10/24],
         routes: [{to: 10.0.0.0/8, via: 198.51.100.1, metric: -1}]}
`
	parsed := map[string]func() (*netcfg.Config, error){
		"v1": func() (*netcfg.Config, error) { return netcfg.Parse([]byte(v1)) },
		"v2": func() (*netcfg.Config, error) { return netcfg.Parse([]byte(v2)) },
		"sdc:nics": func() (*netcfg.Config, error) {
			return netcfg.FromSmartOS([]byte(`[
			  {"interface": "eth0", "mac": "`+mac1+`", "ips": ["192.0.2.10/24"]},
			  {"interface": "eth1", "mac": "`+mac2+`", "ips": ["198.51.100.10/24"]}]`),
				[]byte(`[{"dst": "10.0.0.0/8", "gateway": "198.51.100.1"}, {"dst": "10.0.0.0/33", "gateway": "198.51.100.1"}]`), nil, "")
		},
	}
	want := map[string]string{
		"v1":       "network config: config[1].subnets[0].routes[0].metric: not a metric: out of range (want between 0 and 2147483647); the route left out",
		"v2":       "network config: ethernets.eth1.routes[0].metric: not a metric: out of range (want between 0 and 2147483647); the route left out",
		"sdc:nics": "network config: sdc:routes[1].dst: a bad prefix length; the route left out",
	}
	for _, name := range []string{"v1", "v2", "sdc:nics"} {
		cfg, err := parsed[name]()
		if err != nil {
			t.Fatalf("%s: the whole document refused: %v", name, err)
		}
		live := []Link{{Index: 2, Name: "eth0", MAC: mac1, Up: true, MTU: 1500, Driver: "virtio_net"}}
		p := Diff(cfg, live, virtio, nil)
		wantOps(t, p, "eth0 ("+mac1+"): add address 192.0.2.10/24")
		if len(p.Notes) == 0 || p.Notes[0] != want[name] {
			t.Errorf("%s: notes %q, want first %q", name, p.Notes, want[name])
		}
		wantNote(t, p, "eth1: not present")
	}
}

// A set-name that another link holds (a NIC seedkeeper does not own) was
// planned anyway and failed at apply, while the ifupdown stanza, which
// names links, configured the other NIC under that name. The plan keeps
// the owned link's name, says why, and renders it under that name.
func TestDiffRenameToAForeignName(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "lan", Kind: netcfg.Physical, Name: "eth9", MAC: mac1, DHCP4: true}}}
	live := []Link{
		{Index: 2, Name: "ens4", MAC: mac1, Up: true, MTU: 1500, Driver: "virtio_net"},
		{Index: 3, Name: "eth9", MAC: mac2, Up: true, MTU: 1500, Driver: "virtio_net"},
	}
	p := Diff(cfg, live, virtio, nil)
	wantOps(t, p)
	wantNote(t, p, "ens4 ("+mac1+"): set-name eth9 not applied: another link has that name")
	pinned := p.Pinned(cfg)
	if ifc := pinned.Lookup("lan"); ifc.LinkName() != "ens4" || ifc.MAC != mac1 {
		t.Errorf("pinned %+v", ifc)
	}
	sf, err := netcfg.Ifupdown.Render(netcfg.Detection{Stack: netcfg.Ifupdown, Dir: "/etc/network/interfaces.d"}, pinned, p.Owns)
	var b []byte
	if err == nil {
		b = sf.Files["50-seedkeeper"]
	}
	if err != nil || strings.Contains(string(b), "eth9") || !strings.Contains(string(b), "iface ens4 inet dhcp\n") {
		t.Errorf("ifupdown (%v):\n%s", err, b)
	}
}

// The part of a plan a hot-added NIC gets is the whole plan's verdict too:
// it names the owned links as the whole plan does, so files rendered from
// it never name a link by the set-name the plan did not apply.
func TestPlanOnlyKeepsTheNames(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "lan", Kind: netcfg.Physical, Name: "eth9", MAC: mac1, DHCP4: true}}}
	live := []Link{
		{Index: 2, Name: "ens4", MAC: mac1, Up: true, MTU: 1500, Driver: "virtio_net"},
		{Index: 3, Name: "eth9", MAC: mac2, Up: true, MTU: 1500, Driver: "virtio_net"},
	}
	whole := Diff(cfg, live, virtio, nil)
	part := whole.only([]string{mac1}, nil, nil)
	if got := part.Pinned(cfg).Lookup("lan").LinkName(); got != "ens4" {
		t.Errorf("the partial plan names lan %s, want ens4 (names %v)", got, part.OwnedName)
	}
}

// A NIC renamed keeps its old name as an alternative name, and the kernel
// counts an alternative name as taken: a rename of another NIC to that
// name failed at apply ("name ens4 is taken by another link"). The plan
// gives up an alternative name seedkeeper gave (the receipt has it)
// before the rename; one it did not give keeps the owned link's name,
// with a note, as a name another link holds does.
func TestDiffRenameToAnAlternativeName(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "a", Kind: netcfg.Physical, MAC: mac1, Name: "eth0"},
		{ID: "b", Kind: netcfg.Physical, MAC: mac2, Name: "ens4"},
	}}
	live := []Link{
		{Index: 2, Name: "eth0", AltNames: []string{"ens4"}, MAC: mac1, Driver: "virtio_net", Up: true},
		{Index: 3, Name: "ens5", MAC: mac2, Driver: "virtio_net"},
	}
	rc := &Receipt{Links: map[string]Added{mac1: {AltNames: []string{"ens4"}}}}
	p := Diff(cfg, live, virtio, rc)
	wantOps(t, p,
		"eth0 ("+mac1+"): give up alternative name ens4 (kept by seedkeeper at a rename, now another link's name)",
		"ens5 ("+mac2+"): rename ens5 -> ens4",
		"ens4 ("+mac2+"): link up")
	if n := p.OwnedName["b"]; n != "ens4" {
		t.Errorf("b is named %q after the plan", n)
	}
	// What else each NIC is matched by once the plan is applied.
	if a, b := p.OwnedAltNames["a"], p.OwnedAltNames["b"]; len(a) != 0 || !slices.Equal(b, []string{"ens5"}) {
		t.Errorf("alternative names after the plan: a %q, b %q", a, b)
	}
	// The part of the plan for the NIC renamed (a hotplug) frees the name
	// too.
	if part := p.only([]string{mac2}, nil, rc); !slices.Equal(opStrings(part), opStrings(p)) {
		t.Errorf("part ops %q, want %q", opStrings(part), opStrings(p))
	}

	// Not seedkeeper's: the link keeps its name, and its files name it so.
	p = Diff(cfg, live, virtio, nil)
	wantOps(t, p, "ens5 ("+mac2+"): link up")
	wantNote(t, p, "ens5 ("+mac2+"): set-name ens4 not applied: another link has that name as an alternative name")
	if n := p.Pinned(cfg).Lookup("b").LinkName(); n != "ens5" {
		t.Errorf("b is rendered as %q", n)
	}

	// After a reboot the kernel holds none of them: the receipt forgets
	// them, and never claims a name a person gives the link later.
	live[0].AltNames = nil
	p = Diff(cfg, live, virtio, rc)
	if got := p.receipt.Links[mac1].AltNames; len(got) != 0 {
		t.Errorf("receipt keeps alternative names the link no longer holds: %q", got)
	}
}

// A NIC renamed twice (ens4 -> eth0 -> lan0 while seedkeeper runs) keeps
// the name the system gave it, not the one seedkeeper gave in between: a
// second alternative name would only hold a name another NIC may want.
func TestDiffRenamedTwiceKeepsTheFirstName(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "a", Kind: netcfg.Physical, MAC: mac1, Name: "lan0"}}}
	live := []Link{{Index: 2, Name: "eth0", AltNames: []string{"ens4"}, MAC: mac1, Driver: "virtio_net"}}
	rc := &Receipt{Links: map[string]Added{mac1: {AltNames: []string{"ens4"}}}}
	p := Diff(cfg, live, virtio, rc)
	wantOps(t, p, "eth0 ("+mac1+"): rename eth0 -> lan0", "lan0 ("+mac1+"): link up")
	if got := p.OwnedAltNames["a"]; !slices.Equal(got, []string{"ens4"}) {
		t.Errorf("alternative names after the plan %q, want [ens4]", got)
	}
	// One a person gave is not seedkeeper's: the name the link has is
	// the system's, and is kept.
	p = Diff(cfg, live, virtio, nil)
	if got := p.OwnedAltNames["a"]; !slices.Equal(got, []string{"ens4", "eth0"}) {
		t.Errorf("alternative names after the plan %q, want [ens4 eth0]", got)
	}
}

// A configuration built by hand may leave the IDs empty: each entry
// still gets what the plan decides for it, not another entry's.
func TestDiffEntriesWithoutIDs(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{
		{Kind: netcfg.Physical, MAC: mac1, Addresses: []netip.Prefix{pfx("192.0.2.10/24")}},
		{Kind: netcfg.Physical, MAC: mac2},
	}}
	live := []Link{
		{Index: 2, Name: "eth0", MAC: mac1, Driver: "virtio_net", Up: true},
		{Index: 3, Name: "eth1", MAC: mac2, Driver: "virtio_net", Up: true},
	}
	wantOps(t, Diff(cfg, live, virtio, nil), "eth0 (bc:24:11:aa:bb:01): add address 192.0.2.10/24")
}
