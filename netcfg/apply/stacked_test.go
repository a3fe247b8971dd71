package apply

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// stackCfg is a bond of two NICs, a VLAN on it and a bridge on the VLAN
// carrying the address: the stack of the stacked-links guest scenario.
func stackCfg() *netcfg.Config {
	return &netcfg.Config{Interfaces: []netcfg.Interface{
		{ID: "eth0", Kind: netcfg.Physical, MAC: mac1},
		{ID: "eth1", Kind: netcfg.Physical, MAC: mac2},
		{ID: "bond0", Kind: netcfg.Bond, Links: []string{"eth0", "eth1"},
			Params: map[string]string{"mode": "active-backup", "mii-monitor-interval": "100", "primary": "eth1"}},
		{ID: "bond0.100", Kind: netcfg.VLAN, VLANLink: "bond0", VLANID: 100},
		{ID: "br0", Kind: netcfg.Bridge, Links: []string{"bond0.100"},
			Params:    map[string]string{"stp": "false", "forward-delay": "4", "path-cost": "bond0.100=50"},
			Addresses: []netip.Prefix{pfx("192.0.2.5/24")},
			Routes:    []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0)}},
	}}
}

func stackNICs() []Link {
	return []Link{
		{Index: 2, Name: "ens3", Kind: "device", MAC: mac1, Driver: "virtio_net", MTU: 1500, Up: true, BondMode: -1},
		{Index: 3, Name: "ens4", Kind: "device", MAC: mac2, Driver: "virtio_net", MTU: 1500, Up: true, BondMode: -1},
	}
}

func TestDiffStackedFresh(t *testing.T) {
	p := Diff(stackCfg(), stackNICs(), virtio, nil)
	wantOps(t, p,
		"bond0 (bond): create",
		"bond0.100 (vlan): create on bond0 id 100",
		"br0 (bridge): create",
		"ens3 (bc:24:11:aa:bb:01): enslave to bond0",
		"ens4 (bc:24:11:aa:bb:02): enslave to bond0",
		"bond0.100 (vlan): enslave to br0",
		"bond0 (bond): link up",
		"bond0.100 (vlan): link up",
		"br0 (bridge): link up",
		"br0 (bridge): add address 192.0.2.5/24",
		"br0 (bridge): add route default via 192.0.2.1")
	if want := []string{"eth0", "eth1", "bond0", "bond0.100", "br0"}; !slices.Equal(p.Owned, want) {
		t.Errorf("owned = %v, want %v", p.Owned, want)
	}
	bond, vlan, br := p.Ops[0].Spec, p.Ops[1].Spec, p.Ops[2].Spec
	if bond.Bond.Mode != 1 || bond.Bond.Miimon != 100 || bond.Bond.UpDelay != -1 {
		t.Errorf("bond spec = %+v", bond.Bond)
	}
	if vlan.Parent != "bond0" || vlan.VLANID != 100 {
		t.Errorf("vlan spec = %+v", vlan)
	}
	if br.Bridge.STP != 0 || br.Bridge.ForwardDelay != 400 || br.Bridge.Priority != -1 {
		t.Errorf("bridge spec = %+v", br.Bridge)
	}
	if p.Ops[3].Primary || !p.Ops[4].Primary {
		t.Errorf("primary flags: ens3 %v, ens4 %v; want ens4 only (primary: eth1)", p.Ops[3].Primary, p.Ops[4].Primary)
	}
	if port := p.Ops[5].Port; port == nil || port.Cost != 50 || port.Priority != -1 {
		t.Errorf("bridge port of bond0.100 = %+v, want cost 50", port)
	}
	if a := p.Receipt().Stacked; len(a) != 0 {
		t.Errorf("receipt before any apply = %v, want nothing stacked", a)
	}
}

// convergedStack is stackCfg applied: what the kernel shows afterwards.
func convergedStack() []Link {
	live := stackNICs()
	live[0].Master, live[1].Master = 10, 10
	return append(live,
		Link{Index: 10, Name: "bond0", Kind: "bond", Stacked: true, MAC: mac1, MTU: 1500, Up: true, BondMode: 1},
		Link{Index: 11, Name: "bond0.100", Kind: "vlan", Stacked: true, MAC: mac1, MTU: 1500, Up: true, Parent: 10, VLANID: 100, Master: 12, BondMode: -1},
		Link{Index: 12, Name: "br0", Kind: "bridge", Stacked: true, MAC: mac1, MTU: 1500, Up: true, BondMode: -1,
			Addresses: []netip.Prefix{pfx("192.0.2.5/24")}, Routes: []netcfg.Route{normRoute(route("0.0.0.0/0", "192.0.2.1", 0))}},
	)
}

// madeStack is the receipt of stackCfg applied: seedkeeper made the three
// stacked links (and added br0's address and route when with is set).
func madeStack(with bool) *Receipt {
	rc := &Receipt{Stacked: map[string]Added{"bond0": {Made: true, Index: 10}, "bond0.100": {Made: true, Index: 11}, "br0": {Made: true, Index: 12}}}
	if with {
		rc.Stacked["br0"] = Added{Made: true, Index: 12,
			Addresses: []netip.Prefix{pfx("192.0.2.5/24")},
			Routes:    []netcfg.Route{normRoute(route("0.0.0.0/0", "192.0.2.1", 0))}}
	}
	return rc
}

func TestDiffStackedConvergedIsEmpty(t *testing.T) {
	p := Diff(stackCfg(), convergedStack(), virtio, madeStack(true))
	wantOps(t, p)
	if want := []string{"eth0", "eth1", "bond0", "bond0.100", "br0"}; !slices.Equal(p.Owned, want) {
		t.Errorf("owned = %v, want %v", p.Owned, want)
	}
	if got := p.Receipt().Stacked["br0"]; len(got.Addresses) != 1 || len(got.Routes) != 1 {
		t.Errorf("receipt entry of br0 = %+v, want kept", got)
	}
}

func TestDiffStackedRemovesOnlyOurStaleAddress(t *testing.T) {
	live := convergedStack()
	br := &live[len(live)-1]
	br.Addresses = append(br.Addresses, pfx("198.51.100.9/24"), pfx("203.0.113.7/24"))
	rc := madeStack(false)
	rc.Stacked["br0"] = Added{Made: true, Index: 12, Addresses: []netip.Prefix{pfx("192.0.2.5/24"), pfx("198.51.100.9/24")}}
	p := Diff(stackCfg(), live, virtio, rc)
	wantOps(t, p, "br0 (bridge): remove address 198.51.100.9/24 (added by seedkeeper, no longer configured)")
}

func TestDiffStackedNotOwned(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(cfg *netcfg.Config, live []Link) []Link
		notes []string
		owned []string
	}{
		{"member driver not allowed", func(cfg *netcfg.Config, live []Link) []Link {
			live[1].Driver = "mlx5_core"
			return live
		}, []string{
			`ens4 (bc:24:11:aa:bb:02): driver "mlx5_core" is not allowed`,
			"bond0: member eth1 is not owned by seedkeeper; not applied live",
			"bond0.100: its link bond0 is not applied live, so neither is it",
			"br0: member bond0.100 is not owned by seedkeeper; not applied live",
		}, []string{"eth0"}},
		{"member not present", func(cfg *netcfg.Config, live []Link) []Link {
			return live[:1]
		}, []string{"eth1: not present", "bond0: member eth1 is not owned"}, []string{"eth0"}},
		{"name taken by a NIC", func(cfg *netcfg.Config, live []Link) []Link {
			return append(live, Link{Index: 9, Name: "bond0", Kind: "device", MAC: mac3, BondMode: -1})
		}, []string{"bond0: the name is taken by a network interface link; not applied live"}, []string{"eth0", "eth1"}},
		{"name taken by another kind", func(cfg *netcfg.Config, live []Link) []Link {
			return append(live, Link{Index: 9, Name: "br0", Kind: "bond", Stacked: true, BondMode: 0})
		}, []string{"br0: the name is taken by a bond link; not applied live"}, []string{"eth0", "eth1", "bond0", "bond0.100"}},
		{"VLAN with another ID", func(cfg *netcfg.Config, live []Link) []Link {
			live = convergedStack()
			live[3].VLANID = 200
			return live
		}, []string{"bond0.100: a VLAN of that name exists on another link or with another ID; left alone"}, []string{"eth0", "eth1", "bond0"}},
		{"bad parameter", func(cfg *netcfg.Config, live []Link) []Link {
			cfg.Interfaces[2].Params["mode"] = "round-and-round"
			return live
		}, []string{"bond0: parameter mode: not one of balance-rr, active-backup"}, []string{"eth0", "eth1"}},
		{"member of two masters", func(cfg *netcfg.Config, live []Link) []Link {
			cfg.Interfaces[4].Links = []string{"bond0.100", "eth0"}
			return live
		}, []string{"br0: member eth0 is a member of bond0 already; not applied live"}, []string{"eth0", "eth1", "bond0", "bond0.100"}},
		{"bridge without members", func(cfg *netcfg.Config, live []Link) []Link {
			cfg.Interfaces[4].Links = nil
			return live
		}, []string{"br0: a bridge without members is not applied live"}, []string{"eth0", "eth1", "bond0", "bond0.100"}},
		{"bad name", func(cfg *netcfg.Config, live []Link) []Link {
			cfg.Interfaces[4].ID = "bridge-of-16-byt"
			return live
		}, []string{"bridge-of-16-byt: not a link name (1 to 15 of A-Z a-z 0-9 . _ -)"}, []string{"eth0", "eth1", "bond0", "bond0.100"}},
		{"loop", func(cfg *netcfg.Config, live []Link) []Link {
			cfg.Interfaces[2].Links = []string{"eth0", "br0"}
			cfg.Interfaces[4].Links = []string{"bond0.100"}
			return live
		}, []string{"its links form a loop; not applied live"}, []string{"eth0", "eth1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := stackCfg()
			live := tt.edit(cfg, stackNICs())
			p := Diff(cfg, live, virtio, madeStack(false))
			for _, n := range tt.notes {
				wantNote(t, p, n)
			}
			if !slices.Equal(p.Owned, tt.owned) {
				t.Errorf("owned = %v, want %v", p.Owned, tt.owned)
			}
			for _, op := range p.Ops {
				if op.LinkKind != "" && !slices.Contains(tt.owned, op.Name) || op.Kind == SetMaster && !slices.Contains(tt.owned, op.Master) {
					t.Errorf("operation on a link not owned: %s", op)
				}
			}
		})
	}
}

func TestDiffStackedExistingLink(t *testing.T) {
	live := convergedStack()
	live[2].BondMode = 0 // balance-rr
	live[3].Master = 0   // the VLAN left the bridge
	live[4].Up, live[4].MTU = false, 1400
	cfg := stackCfg()
	cfg.Interfaces[4].MTU = 1500
	p := Diff(cfg, live, virtio, madeStack(false))
	wantOps(t, p,
		"bond0.100 (vlan): enslave to br0",
		"br0 (bridge): set mtu 1500",
		"br0 (bridge): link up")
	wantNote(t, p, "bond0: the live bond's mode is balance-rr, the configuration's active-backup; a bond's parameters are set when it is created")
}

func TestDiffStackedReceiptOfUnconfiguredLinkIsKept(t *testing.T) {
	rc := &Receipt{Stacked: map[string]Added{"br9": {Addresses: []netip.Prefix{pfx("198.51.100.9/24")}}}}
	live := append(stackNICs(), Link{Index: 40, Name: "br9", Kind: "bridge", Stacked: true, MTU: 1500, Up: true, BondMode: -1,
		Addresses: []netip.Prefix{pfx("198.51.100.9/24")}})
	p := Diff(stackCfg(), live, virtio, rc)
	wantNote(t, p, "br9: in the receipt but no longer configured; left as it is")
	if _, ok := p.Receipt().Stacked["br9"]; !ok {
		t.Error("the receipt entry of br9 was dropped")
	}
}

func TestBondParams(t *testing.T) {
	b, skipped, err := bondParams(map[string]string{
		"mode": "802.3ad", "lacp-rate": "fast", "transmit-hash-policy": "layer3+4", "up-delay": "2s",
		"down-delay": "200ms", "arp-ip-target": "192.0.2.1 192.0.2.2", "all-slaves-active": "true",
		"learn-packet-interval": "3", "fail-over-mac-policy": "follow", "made-up": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.Mode != 4 || b.LacpRate != 1 || b.XmitHashPolicy != 1 || b.UpDelay != 2000 || b.DownDelay != 200 ||
		len(b.ArpIPTargets) != 2 || b.AllSlavesActive != 1 || b.LpInterval != 3 || b.FailOverMac != 2 || b.Miimon != -1 {
		t.Errorf("bond params = %+v", b)
	}
	if !slices.Equal(skipped, []string{"made-up"}) {
		t.Errorf("skipped = %v", skipped)
	}
	for k, v := range map[string]string{
		"mode": "7", "mii-monitor-interval": "-1", "arp-ip-target": "2001:db8::1", "gratuitous-arp": "256",
		"up-delay": "1h", "all-slaves-active": "maybe", "down-delay": "1e3", "arp-interval": "NaN",
	} {
		if _, _, err := bondParams(map[string]string{k: v}); err == nil || !strings.HasPrefix(err.Error(), "parameter "+k+": ") {
			t.Errorf("bondParams(%s=%s) error = %v, want one naming the parameter", k, v, err)
		}
	}
}

func TestBridgeParams(t *testing.T) {
	b, _, err := bridgeParams(map[string]string{
		"stp": "on", "forward-delay": "15", "hello-time": "2.5", "max-age": "20", "ageing-time": "300",
		"priority": "32768", "path-cost": "eth0=4 eth1=19", "port-priority": "eth0=32",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.STP != 1 || b.ForwardDelay != 1500 || b.HelloTime != 250 || b.MaxAge != 2000 || b.AgeingTime != 30000 ||
		b.Priority != 32768 || b.PortCost["eth1"] != 19 || b.PortPriority["eth0"] != 32 {
		t.Errorf("bridge params = %+v", b)
	}
	for k, v := range map[string]string{"priority": "65536", "path-cost": "eth0", "port-priority": "eth0=64", "stp": "2"} {
		if _, _, err := bridgeParams(map[string]string{k: v}); err == nil || !strings.HasPrefix(err.Error(), "parameter "+k+": ") {
			t.Errorf("bridgeParams(%s=%s) error = %v, want one naming the parameter", k, v, err)
		}
	}
}

// Found by TestIntegrationStackedBridge: removing the only address of the
// gateway's subnet took the default route along, and the plan, having
// seen the route, did not add it again until the next apply.
func TestDiffReaddsRouteAnAddressRemovalTakes(t *testing.T) {
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "eth0", Kind: netcfg.Physical, MAC: mac1,
		Addresses: []netip.Prefix{pfx("192.0.2.6/24")}, Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0)}}}}
	live := []Link{{Index: 2, Name: "eth0", MAC: mac1, Driver: "virtio_net", Up: true, BondMode: -1,
		Addresses: []netip.Prefix{pfx("192.0.2.5/24")}, Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0)}}}
	rc := &Receipt{Links: map[string]Added{mac1: {Addresses: []netip.Prefix{pfx("192.0.2.5/24")}, Routes: []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 0)}}}}
	wantOps(t, Diff(cfg, live, virtio, rc),
		"eth0 (bc:24:11:aa:bb:01): remove address 192.0.2.5/24 (added by seedkeeper, no longer configured)",
		"eth0 (bc:24:11:aa:bb:01): add address 192.0.2.6/24",
		"eth0 (bc:24:11:aa:bb:01): add route default via 192.0.2.1 (again, if removing an address took it)")

	// Another address of the subnet stays: the route stays too.
	live[0].Addresses = append(live[0].Addresses, pfx("192.0.2.6/24"))
	wantOps(t, Diff(cfg, live, virtio, rc),
		"eth0 (bc:24:11:aa:bb:01): remove address 192.0.2.5/24 (added by seedkeeper, no longer configured)")
}

// FuzzPlanStacked parses a network configuration (as the metadata gives
// it) and plans it against two NICs: the planner never panics, never
// enslaves a NIC it does not own, and every parameter it cannot use is an
// error that names it.
func FuzzPlanStacked(f *testing.F) {
	f.Add([]byte("version: 2\nethernets:\n  a: {match: {macaddress: \"" + mac1 + "\"}}\n  b: {match: {macaddress: \"" + mac2 + "\"}}\n" +
		"bonds:\n  bond0:\n    interfaces: [a, b]\n    parameters: {mode: 802.3ad, lacp-rate: fast, mii-monitor-interval: 100ms, arp-ip-targets: [192.0.2.1]}\n" +
		"vlans:\n  v100: {id: 100, link: bond0}\nbridges:\n  br0:\n    interfaces: [v100]\n    addresses: [192.0.2.5/24]\n    parameters: {stp: true, path-cost: {v100: 7}}\n"))
	f.Add([]byte("version: 1\nconfig:\n  - {type: physical, name: eth0, mac_address: \"" + mac1 + "\"}\n  - {type: bond, name: bond0, bond_interfaces: [eth0], params: {bond-mode: 9}}\n"))
	f.Add([]byte("version: 2\nethernets:\n  a: {match: {macaddress: \"" + mac3 + "\"}}\nbridges:\n  br0: {interfaces: [a]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := netcfg.Parse(data)
		if err != nil || cfg == nil {
			return
		}
		live := stackNICs()
		live[1].Driver = "mlx5_core" // not allowed: never enslaved
		p := Diff(cfg, live, virtio, nil)
		for _, op := range p.Ops {
			if op.Kind == SetMaster && op.MAC == mac2 {
				t.Fatalf("enslaved a NIC it does not own: %s", op)
			}
			if op.Kind == CreateLink && (op.Spec == nil || op.Spec.Name == "") {
				t.Fatalf("create without a spec: %+v", op)
			}
		}
		for _, ifc := range cfg.Interfaces {
			var err error
			switch ifc.Kind {
			case netcfg.Bond:
				_, _, err = bondParams(ifc.Params)
			case netcfg.Bridge:
				_, _, err = bridgeParams(ifc.Params)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "parameter ") {
				t.Fatalf("error names no parameter: %v", err)
			}
		}
	})
}

// Found in review: routes on a link this plan creates had no index to go
// out of; primary in a mode without one failed after the enslave; a bond
// member's own MTU was set and undone at every apply; a stacked link's MTU
// came before its ports and before the links on it.
func TestDiffStackedMTUAndPrimary(t *testing.T) {
	cfg := stackCfg()
	cfg.Interfaces[0].MTU = 9000 // eth0, a bond member
	cfg.Interfaces[2].Params["mode"] = "802.3ad"
	cfg.Interfaces[3].MTU = 9000 // the VLAN
	cfg.Interfaces[4].MTU = 9000 // the bridge
	cfg.Interfaces[2].MTU = 9000 // the bond
	p := Diff(cfg, stackNICs(), virtio, nil)
	wantOps(t, p,
		"bond0 (bond): create",
		"bond0.100 (vlan): create on bond0 id 100",
		"br0 (bridge): create",
		"ens3 (bc:24:11:aa:bb:01): enslave to bond0",
		"ens4 (bc:24:11:aa:bb:02): enslave to bond0",
		"bond0.100 (vlan): enslave to br0",
		"bond0 (bond): set mtu 9000",
		"bond0.100 (vlan): set mtu 9000",
		"br0 (bridge): set mtu 9000",
		"bond0 (bond): link up",
		"bond0.100 (vlan): link up",
		"br0 (bridge): link up",
		"br0 (bridge): add address 192.0.2.5/24",
		"br0 (bridge): add route default via 192.0.2.1")
	wantNote(t, p, "bond0: parameter primary: only active-backup, balance-tlb and balance-alb bonds have one")
	for _, op := range p.Ops {
		if op.Primary || op.Kind == CreateLink && op.Spec.MTU != 0 {
			t.Errorf("%s: primary %v, created with mtu %d", op, op.Primary, op.Spec.MTU)
		}
	}
	cfg.Interfaces[2].MTU = 0
	wantNote(t, Diff(cfg, stackNICs(), virtio, nil), "ens3: mtu 9000 not applied: a bond member takes its bond's (bond0)")
}

// A bond, VLAN or bridge that exists is adopted only when the receipt
// says seedkeeper made it. A receipt of an earlier version, which named
// only what seedkeeper added, stands for "made" only while the link holds
// no port and no address of someone else's.
func TestDiffStackedAdoptsOnlyWhatItMade(t *testing.T) {
	legacy := func() *Receipt {
		rc := madeStack(true)
		for k, a := range rc.Stacked {
			a.Made, a.Index = false, 0
			rc.Stacked[k] = a
		}
		rc.Stacked["bond0"] = Added{Addresses: []netip.Prefix{pfx("10.9.9.9/32")}}
		rc.Stacked["bond0.100"] = Added{Addresses: []netip.Prefix{pfx("10.9.9.10/32")}}
		return rc
	}
	for _, tc := range []struct {
		name  string
		rc    *Receipt
		edit  func([]Link) []Link
		note  string
		owned []string
	}{
		{"made", madeStack(true), nil, "", []string{"eth0", "eth1", "bond0", "bond0.100", "br0"}},
		{"not in the receipt", nil, nil, "bond0: a bond of that name exists that seedkeeper did not make; left alone", []string{"eth0", "eth1"}},
		{"made, a person's port and address stay", madeStack(true), func(l []Link) []Link {
			l[len(l)-1].Addresses = append(l[len(l)-1].Addresses, pfx("203.0.113.7/24"))
			return append(l, Link{Index: 20, Name: "tap0", Kind: "tun", Master: 12, BondMode: -1})
		}, "", []string{"eth0", "eth1", "bond0", "bond0.100", "br0"}},
		{"earlier receipt, nothing foreign", legacy(), nil, "", []string{"eth0", "eth1", "bond0", "bond0.100", "br0"}},
		{"earlier receipt, a foreign port", legacy(), func(l []Link) []Link {
			return append(l, Link{Index: 20, Name: "vethd", Kind: "veth", Master: 12, BondMode: -1})
		}, "br0: it has a port seedkeeper does not own (vethd), and the receipt does not say seedkeeper made it; left alone", []string{"eth0", "eth1", "bond0", "bond0.100"}},
		{"earlier receipt, a foreign address", legacy(), func(l []Link) []Link {
			l[len(l)-1].Addresses = append(l[len(l)-1].Addresses, pfx("172.17.0.1/16"), pfx("fe80::1/64"))
			return l
		}, "br0: it has an address seedkeeper did not add, and the receipt does not say seedkeeper made it; left alone", []string{"eth0", "eth1", "bond0", "bond0.100"}},
		// The earlier version adopted any bridge of the name (a docker0)
		// and listed what it added there: a configuration that names the
		// bridge's own address must not make it look like ours.
		{"earlier receipt, a foreign address the configuration names", func() *Receipt {
			rc := legacy()
			rc.Stacked["br0"] = Added{Routes: []netcfg.Route{normRoute(route("0.0.0.0/0", "192.0.2.1", 0))}}
			return rc
		}(), nil, "br0: it has an address seedkeeper did not add, and the receipt does not say seedkeeper made it; left alone", []string{"eth0", "eth1", "bond0", "bond0.100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := convergedStack()
			if tc.edit != nil {
				live = tc.edit(live)
			}
			p := Diff(stackCfg(), live, virtio, tc.rc)
			if !slices.Equal(p.Owned, tc.owned) {
				t.Errorf("owned = %v, want %v; notes %q", p.Owned, tc.owned, p.Notes)
			}
			if tc.note != "" {
				wantNote(t, p, tc.note)
			}
			for _, op := range p.Ops {
				if op.LinkKind != "" && !slices.Contains(tc.owned, op.Name) || op.Kind == SetMaster && !slices.Contains(tc.owned, op.Master) {
					t.Errorf("operation on a link not owned: %s", op)
				}
				if op.Kind == RemoveAddress {
					t.Errorf("removes what the receipt does not list: %s", op)
				}
			}
			if made := p.Receipt().Stacked; slices.Contains(tc.owned, "br0") && tc.rc != nil && tc.rc.Stacked["br0"].Made && !made["br0"].Made {
				t.Errorf("the plan forgot that seedkeeper made br0: %+v", made)
			}
		})
	}
}

// The receipt remembers which stacked links seedkeeper created, across a
// save and a load; "made" on a NIC's entry is refused.
func TestReceiptRemembersMadeLinks(t *testing.T) {
	r := &Receipt{Links: map[string]Added{}, Stacked: map[string]Added{}}
	r.record(Op{Kind: CreateLink, Name: "bond0", LinkKind: netcfg.Bond, Index: 7, Spec: &LinkSpec{Kind: netcfg.Bond, Name: "bond0"}}, nil)
	r.record(Op{Kind: CreateLink, Name: "br0", LinkKind: netcfg.Bridge, Spec: &LinkSpec{Kind: netcfg.Bridge, Name: "br0"}}, errors.New("EPERM"))
	b := r.Marshal()
	back, err := ParseReceipt(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !back.Stacked["bond0"].Made || back.Stacked["bond0"].Index != 7 || back.Stacked["br0"].Made {
		t.Errorf("read back %+v from\n%s", back.Stacked, b)
	}
	for _, bad := range []string{`{"index": 7}`, `{"made": true, "index": -1}`} {
		if _, err := ParseReceipt([]byte(`{"version": 2, "links": {}, "stacked": {"bond0": ` + bad + `}}`)); err == nil {
			t.Errorf("stacked entry %s accepted", bad)
		}
	}
	if _, err := ParseReceipt([]byte(`{"version": 2, "links": {"` + mac1 + `": {"made": true}}}`)); err == nil {
		t.Error(`"made" on a NIC accepted`)
	}
}

// A receipt written before link names were narrowed to one alphabet still
// loads: its entries name links the kernel took, and failing to read it
// would fail every sync.
func TestReceiptOfAnEarlierNameLoads(t *testing.T) {
	r, err := ParseReceipt([]byte(`{"version": 2, "links": {}, "stacked": {"br+1": {"addresses": ["192.0.2.5/24"]}}}`))
	if err != nil || len(r.Stacked["br+1"].Addresses) != 1 {
		t.Fatalf("%+v, %v", r, err)
	}
	if _, err := ParseReceipt([]byte(`{"version": 2, "links": {}, "stacked": {"a/b": {"addresses": ["192.0.2.5/24"]}}}`)); err == nil {
		t.Error("a name the kernel refuses was read")
	}
}

// A link seedkeeper made is ours only while it exists: once it is gone (a
// reboot, a person deleting it), another link of that name is someone
// else's (a libvirt or docker bridge made later), and the receipt entry,
// whose addresses and routes went with the link, no longer vouches for it.
func TestDiffStackedForgetsAMadeLinkThatIsGone(t *testing.T) {
	// The first apply after the made links vanished: seedkeeper makes
	// them again, and the receipt entries of the old ones are dropped.
	p := Diff(stackCfg(), stackNICs(), virtio, madeStack(true))
	if got := p.Receipt().Stacked; len(got) != 0 {
		t.Errorf("receipt of links that are gone = %+v, want nothing stacked", got)
	}

	// Not configured now, so not made again; then another program makes a
	// bridge of that name, and the configuration names br0 again.
	cfg := stackCfg()
	cfg.Interfaces = cfg.Interfaces[:3]
	p = Diff(cfg, stackNICs(), virtio, madeStack(true))
	if got := p.Receipt().Stacked["br0"]; got.Made || !got.empty() {
		t.Fatalf("receipt entry of a br0 that is gone = %+v, want none", got)
	}
	live := append(stackNICs(), Link{Index: 30, Name: "br0", Kind: "bridge", Stacked: true, MTU: 1500, Up: true, BondMode: -1,
		Addresses: []netip.Prefix{pfx("192.0.2.5/24")}})
	p = Diff(stackCfg(), live, virtio, p.Receipt())
	if slices.Contains(p.Owned, "br0") {
		t.Errorf("adopted a br0 seedkeeper did not make: owned %v; notes %q", p.Owned, p.Notes)
	}
	wantNote(t, p, "br0: a bridge of that name exists that seedkeeper did not make; left alone")
	wantNote(t, Diff(stackCfg(), stackNICs(), virtio, madeStack(true)), "br0: in the receipt but gone; forgotten")
}

// The receipt says seedkeeper made br0, but the br0 that exists has
// another ifindex: seedkeeper's was deleted and someone (libvirt, docker)
// made one of that name before seedkeeper looked again. It is not adopted.
func TestDiffStackedMadeIsThatLinkOnly(t *testing.T) {
	live := convergedStack()
	live[len(live)-1].Index = 30
	p := Diff(stackCfg(), live, virtio, madeStack(true))
	if slices.Contains(p.Owned, "br0") {
		t.Errorf("adopted another br0: owned %v", p.Owned)
	}
	wantNote(t, p, "br0: the bridge seedkeeper made under that name is gone, and another one has it; left alone")
	for _, op := range p.Ops {
		if op.Name == "br0" || op.Master == "br0" {
			t.Errorf("operation on the other br0: %s", op)
		}
	}
}
