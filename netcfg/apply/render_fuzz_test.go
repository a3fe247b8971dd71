package apply

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// liveFor makes live links for a parsed configuration: a NIC for each
// physical entry (by its MAC, or under its name), every other one with a
// driver that is not allowed, and a foreign NIC holding the name of every
// other stacked entry, so that plans own some links and refuse others.
func liveFor(cfg *netcfg.Config) []Link {
	var live []Link
	add := func(name, mac, driver string) {
		live = append(live, Link{Index: len(live) + 2, Name: name, MAC: mac, Kind: "device", Driver: driver, MTU: 1500, Up: true, BondMode: -1})
	}
	for i, ifc := range cfg.Interfaces {
		driver := "virtio_net"
		if i%3 == 2 {
			driver = "mlx5_core"
		}
		mac := fmt.Sprintf("0a:5e:ed:00:%02x:%02x", i/256, i%256) // no seed has this MAC
		switch {
		case ifc.Kind != netcfg.Physical:
			if i%2 == 1 {
				add(ifc.LinkName(), mac, "virtio_net")
			}
		case ifc.MAC != "" && i%4 == 3:
			// Not present: a NIC networkd is told to expect.
		case ifc.MAC != "":
			add(fmt.Sprintf("ens%d", i), ifc.MAC, driver)
		case netcfg.ValidLinkName(ifc.LinkName()):
			add(ifc.LinkName(), mac, driver)
		}
	}
	return live
}

// checkRenderedOwned renders the plan of cfg against live for every stack
// and reads the files back: every link name and MAC in them is one the
// plan owns, under the name the plan gives it, and every shell line
// ifupdown runs is made of characters sh reads as themselves. The
// files written ahead of the NICs that are not present (checkAwaited)
// match only by the MAC of such a NIC and an allowed driver.
func checkRenderedOwned(t *testing.T, cfg *netcfg.Config, live []Link) {
	t.Helper()
	p := Diff(cfg, live, virtio, nil)
	pinned := p.Pinned(cfg)
	names, macs := map[string]bool{}, map[string]bool{}
	for _, id := range p.Owned {
		names[p.OwnedName[id]] = true
		if m := p.OwnedMAC[id]; m != "" {
			macs[m] = true
		}
	}
	name := func(where, n string) {
		if !names[n] {
			t.Fatalf("%s names %q, which the plan does not own (owned %v)\nnotes %q", where, n, slices.Sorted(maps.Keys(names)), p.Notes)
		}
	}
	mac := func(where, m string) {
		if !macs[strings.ToLower(m)] {
			t.Fatalf("%s matches MAC %s, which the plan does not own", where, m)
		}
	}
	checkAwaited(t, cfg, p, name)
	for _, stack := range []*netcfg.Stack{netcfg.Networkd, netcfg.NetworkManager, netcfg.Ifupdown} {
		sf, err := stack.Render(netcfg.Detection{Stack: stack, Dir: "/etc/network/interfaces.d"}, pinned, p.Owns)
		if err != nil {
			continue // refusing to write is safe; writing a wrong file is not
		}
		files := maps.Clone(sf.Files)
		maps.Copy(files, sf.Extra)
		for fn, b := range files {
			where := stack.Name + " " + fn
			section := ""
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "[") {
					section = l
				}
				k, v, _ := strings.Cut(l, "=")
				switch stack {
				case netcfg.Networkd:
					switch {
					case k == "Name" || k == "Bond" || k == "Bridge" || k == "VLAN":
						name(where, v)
					case k == "MACAddress" && section == "[Match]":
						mac(where, v)
					}
				case netcfg.NetworkManager:
					switch k {
					case "interface-name":
						name(where, v)
					case "mac-address":
						mac(where, v)
					case "allowed-connections":
						// Only the profiles written beside it.
						for _, spec := range strings.Split(v, ";") {
							u, ok := strings.CutPrefix(spec, "uuid:")
							if !ok || !slices.ContainsFunc(slices.Collect(maps.Values(sf.Files)), func(b []byte) bool { return strings.Contains(string(b), "\nuuid="+u+"\n") }) {
								t.Fatalf("%s: allowed connection %q is not a profile seedkeeper writes", where, spec)
							}
						}
					case "no-auto-default+", "unmanaged-devices+", "match-device":
						for _, spec := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
							switch kind, x, _ := strings.Cut(spec, ":"); kind {
							case "mac":
								mac(where, x)
							case "interface-name":
								name(where, x)
							default:
								t.Fatalf("%s: device spec %q", where, spec)
							}
						}
					}
				case netcfg.Ifupdown:
					checkStanzaLine(t, where, l, name)
				}
			}
		}
	}
}

// checkAwaited renders the files every stack writes ahead of the plan's
// absent NICs (networkd files, NetworkManager profiles) and reads them
// back: each matches by the MAC of an absent entry, as an ethernet, of
// the allowed driver only, never by name; every other link it names is
// owned; and no such file takes the name of an owned link's file.
func checkAwaited(t *testing.T, cfg *netcfg.Config, p *Plan, name func(where, n string)) {
	t.Helper()
	absent := map[string]bool{}
	for i := range cfg.Interfaces {
		if ifc := &cfg.Interfaces[i]; slices.Contains(p.Absent, ifc.ID) && ifc.MAC != "" {
			absent[strings.ToLower(ifc.MAC)] = true
		}
	}
	pinned := p.Pinned(cfg)
	for _, stack := range netcfg.Stacks {
		ahead, err := stack.RenderAhead(pinned, p.Owns, func(i *netcfg.Interface) bool { return slices.Contains(p.Absent, i.ID) }, []string{"virtio_net"})
		if err != nil {
			continue // refusing to write is safe
		}
		for fn, b := range ahead.Extra {
			checkAheadDropIn(t, stack.Name+" (ahead) "+fn, b, absent)
		}
		var owned map[string][]byte
		if sf, err := stack.Render(netcfg.Detection{Stack: stack, Dir: "/etc/network/interfaces.d"}, pinned, p.Owns); err == nil {
			owned = sf.Files
		}
		for fn, b := range ahead.Files {
			where := stack.Name + " (ahead) " + fn
			if _, dup := owned[fn]; dup {
				t.Fatalf("%s: also the file of an owned link", where)
			}
			match := aheadMatch(stack, where, b, name)
			var m string
			var ok bool
			switch stack {
			case netcfg.Networkd:
				m = match["MACAddress"] + match["PermanentMACAddress"]
				ok = match["Type"] == "ether" && match["Driver"] == "virtio_net" && len(match) == 3
			case netcfg.NetworkManager:
				m = match["mac-address"]
				ok = match["type"] == "ethernet" && match["driver"] == "virtio_net;" && len(match) == 3
			default:
				t.Fatalf("%s: %s writes files ahead, which this check does not read", where, stack.Name)
			}
			if !absent[strings.ToLower(m)] || !ok {
				t.Fatalf("%s: match %v, want the MAC of an absent NIC (%v), an ethernet, the driver virtio_net and nothing else", where, match, slices.Sorted(maps.Keys(absent)))
			}
			if stack == netcfg.NetworkManager {
				checkAheadBecomesOwned(t, cfg, where, fn, b, m)
			}
		}
	}
}

// checkAheadDropIn checks that a drop-in written ahead names the absent
// NICs' MACs, nothing else.
func checkAheadDropIn(t *testing.T, where string, b []byte, absent map[string]bool) {
	t.Helper()
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, "=")
		if k != "match-device" {
			continue
		}
		for _, spec := range strings.Split(v, ";") {
			if m, ok := strings.CutPrefix(spec, "mac:"); !ok || !absent[strings.ToLower(m)] {
				t.Fatalf("%s: device spec %q is not the MAC of an absent NIC", where, spec)
			}
		}
	}
}

// aheadMatch reads what a file written ahead matches by, and passes
// every link name it gives to name.
func aheadMatch(stack *netcfg.Stack, where string, b []byte, name func(where, n string)) map[string]string {
	section, match := "", map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "[") {
			section = l
		}
		k, v, _ := strings.Cut(l, "=")
		switch {
		case stack == netcfg.Networkd && section == "[Match]" && k != "" && !strings.HasPrefix(l, "["):
			match[k] = v
		case stack == netcfg.NetworkManager && (section == "[match]" || k == "mac-address" || k == "type" || k == "interface-name"):
			if k != "" && !strings.HasPrefix(l, "[") {
				match[k] = v
			}
		case k == "Name" || k == "Bond" || k == "Bridge" || k == "VLAN":
			name(where, v)
		}
	}
	return match
}

// checkAheadBecomesOwned checks that the NetworkManager profile fn (b)
// written ahead for mac is the one the watch writes once the NIC appears
// with an allowed driver: the plan then owns it, and its profile has the
// same file name and UUID (so the watch's render replaces it, and
// allowed-connections names it). Not when an entry selects by name or
// glob, which could take the NIC that appears too.
func checkAheadBecomesOwned(t *testing.T, cfg *netcfg.Config, where, fn string, b []byte, mac string) {
	t.Helper()
	if slices.ContainsFunc(cfg.Interfaces, func(i netcfg.Interface) bool { return i.Kind == netcfg.Physical && i.MAC == "" }) {
		return
	}
	live := liveFor(cfg)
	live = append(live, Link{Index: len(live) + 2, Name: "skahead0", MAC: strings.ToLower(mac), Kind: "device", Driver: "virtio_net", MTU: 1500, Up: true, BondMode: -1})
	p := Diff(cfg, live, virtio, nil)
	sf, err := netcfg.NetworkManager.Render(netcfg.Detection{Stack: netcfg.NetworkManager}, p.Pinned(cfg), p.Owns)
	if err != nil {
		return
	}
	uuid := func(b []byte) string {
		_, r, _ := strings.Cut(string(b), "\nuuid=")
		u, _, _ := strings.Cut(r, "\n")
		return u
	}
	if owned, ok := sf.Files[fn]; !ok || uuid(owned) != uuid(b) {
		t.Fatalf("%s: once a NIC of MAC %s appears, the watch writes no profile %s of UUID %s (owned %v, files %q)\nnotes %q", where, mac, fn, uuid(b), p.Owned, slices.Sorted(maps.Keys(sf.Files)), p.Notes)
	}
}

// checkStanzaLine checks one line of an ifupdown stanza file: the stanza
// heads and every "dev" name owned links, and no line has a character sh
// reads as syntax (ifupdown runs the command lines with sh -c and hands
// the names to its hook scripts) but the "|| true" seedkeeper puts at the
// end of a down line.
func checkStanzaLine(t *testing.T, where, l string, name func(where, n string)) {
	t.Helper()
	f := strings.Fields(l)
	if len(f) == 0 || strings.HasPrefix(l, "#") {
		return
	}
	text := strings.TrimSuffix(strings.Join(f, " "), " || true")
	if i := strings.IndexFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" ./:_-", r))
	}); i >= 0 {
		t.Fatalf("%s: line %q has %q", where, l, text[i])
	}
	switch f[0] {
	case "allow-hotplug", "auto", "iface":
		name(where, f[1])
	}
	for i, w := range f {
		if w == "dev" && i+1 < len(f) {
			name(where, f[i+1])
		}
	}
}

// FuzzRenderedNamesAreOwned: for every configuration the parsers accept,
// the files of every stack name only links the live plan owns, and no
// shell line ifupdown runs holds a character sh interprets. The seeds are
// the cases of the defects this guards: a set-name that ran a command on
// every ifup, a bridge refused because a foreign NIC holds its name, a
// docker0 bridge, a bond whose other member is not ours.
func FuzzRenderedNamesAreOwned(f *testing.F) {
	for _, s := range []string{
		"version: 2\nethernets: {e0: {match: {macaddress: '02:00:00:00:00:01'}, set-name: 'e$(>pwn)', dhcp4: true}}",
		"version: 1\nconfig: [{type: physical, name: 'e;reboot', mac_address: '02:00:00:00:00:01', subnets: [{type: static, address: 192.0.2.5/24, gateway: 192.0.2.1}]}]",
		"version: 2\nethernets: {e0: {match: {macaddress: '02:00:00:00:00:01'}, set-name: e0}}\nbridges: {eth9: {interfaces: [e0], addresses: [192.0.2.9/24], gateway4: 192.0.2.1}}",
		"version: 2\nethernets: {e0: {match: {macaddress: '02:00:00:00:00:01'}}}\nbridges: {docker0: {interfaces: [e0], mtu: 1400, addresses: [192.0.2.5/24]}}",
		"version: 2\nethernets: {e0: {match: {macaddress: '02:00:00:00:00:01'}}, e1: {}, e2: {match: {macaddress: '02:00:00:00:00:03'}}}\nbonds: {bond0: {interfaces: [e0, e2], dhcp4: true}}\nvlans: {v5: {id: 5, link: bond0, addresses: ['10.0.0.1/24']}}",
		"version: 2\nethernets: {lan: {match: {name: 'ens*'}, addresses: ['192.0.2.4/24'], routes: [{to: 10.0.0.0/8, via: 192.0.2.1, metric: 5, table: 7}], nameservers: {search: [a.example], addresses: [192.0.2.53]}}}",
		"version: 1\nconfig: [{type: physical, name: eth0, subnets: [{type: static, address: 192.0.2.5/24, gateway: 192.0.2.1, routes: [{network: 10.0.0.0, netmask: 255.0.0.0, gateway: 192.0.2.2, metric: -1}]}]}, {type: route, destination: 0.0.0.0/0, gateway: 192.0.2.1}]",
		"version: 2\nethernets: {e0: {match: {macaddress: '02:00:00:00:00:01'}, set-name: eth1}, e1: {match: {macaddress: '02:00:00:00:00:02'}, set-name: eth0}}",
		// The keys the network-config meaning work renders: overrides, a
		// set MAC, optional, rules, bridge port settings.
		"version: 2\nethernets: {e0: {match: {macaddress: '02:00:00:00:00:01'}, macaddress: '02:00:00:00:00:aa', optional: true, dhcp4: true, dhcp6: true, accept-ra: false, dhcp-identifier: mac," +
			" dhcp4-overrides: {use-dns: false, hostname: h-1.example, send-hostname: true, route-metric: 7}, dhcp6-overrides: {use-routes: false, route-metric: 9}," +
			" routing-policy: [{from: 192.0.2.0/24, table: 100, priority: 5, mark: 1, type-of-service: 2}, {to: '2001:db8::1'}]}}",
		// A NIC that is not present (the fourth): networkd's file for
		// it is written ahead, matched by its MAC and the allowed driver.
		"version: 2\nethernets: {a: {match: {macaddress: '02:00:00:00:00:01'}}, b: {match: {name: 'ens*'}}, c: {dhcp4: true}, d: {match: {macaddress: '02:00:00:00:00:04'}, set-name: hot, addresses: ['10.0.3.20/24'], routes: [{to: 0.0.0.0/0, via: 10.0.3.1}]}}",
		// NICs not present (the fourth and the eighth) with a MAC two
		// entries have, or the link of a VLAN: nothing is written
		// ahead that the watch would not own or write once they appear.
		"version: 2\nethernets: {a: {match: {macaddress: '02:00:00:00:00:01'}}, b: {match: {macaddress: '02:00:00:00:00:02'}}, c: {match: {macaddress: '02:00:00:00:00:03'}}, d: {match: {macaddress: '02:00:00:00:00:04'}, dhcp4: true}, e: {match: {macaddress: '02:00:00:00:00:05'}}, f: {match: {macaddress: '02:00:00:00:00:06'}}, g: {match: {macaddress: '02:00:00:00:00:07'}}, h: {match: {macaddress: '02:00:00:00:00:04'}, addresses: ['10.0.4.2/24']}}",
		"version: 2\nethernets: {a: {match: {macaddress: '02:00:00:00:00:01'}}, b: {match: {macaddress: '02:00:00:00:00:02'}}, c: {match: {macaddress: '02:00:00:00:00:03'}}, d: {match: {macaddress: '02:00:00:00:00:04'}}}\nvlans: {v7: {id: 7, link: d, addresses: ['10.0.7.2/24']}}",
		"version: 2\nethernets: {e0: {match: {macaddress: '02:00:00:00:00:01'}}, e1: {match: {macaddress: '02:00:00:00:00:02'}}}\nbridges: {br0: {interfaces: [e0, e1], macaddress: '02:00:00:00:00:b0', parameters: {path-cost: {e0: 5}, port-priority: {e1: 3}}, dhcp4: true}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := netcfg.Parse(data)
		if err != nil {
			return
		}
		checkRenderedOwned(t, cfg, liveFor(cfg))
	})
}

// FuzzRenderedNamesAreOwnedSmartOS is FuzzRenderedNamesAreOwned for the
// SmartOS keys.
func FuzzRenderedNamesAreOwnedSmartOS(f *testing.F) {
	f.Add([]byte(`[{"interface": "net0", "mac": "90:b8:d0:00:00:01", "ips": ["192.0.2.5/24"], "primary": true, "gateways": ["192.0.2.1"]},
	  {"interface": "n$(reboot)", "mac": "90:b8:d0:00:00:02", "ips": ["dhcp"]}]`),
		[]byte(`[{"dst": "10.0.0.0/8", "gateway": "192.0.2.2"}, {"dst": "10.0.0.0/33", "gateway": "192.0.2.2"}]`), []byte(`["192.0.2.53"]`))
	f.Add([]byte(`[{"interface": "net0", "ips": ["addrconf", "2001:db8::5/64"], "mtu": 70000}]`), []byte(nil), []byte(`["x"]`))
	f.Fuzz(func(t *testing.T, nics, routes, resolvers []byte) {
		cfg, err := netcfg.FromSmartOS(nics, routes, resolvers, "example.com")
		if err != nil {
			return
		}
		checkRenderedOwned(t, cfg, liveFor(cfg))
	})
}
