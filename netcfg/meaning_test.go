package netcfg

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"regexp"
	"slices"
	"strings"
	"testing"
)

// rendered is what the three stacks' renderers make of one document.
type rendered struct {
	c        *Config
	networkd map[string][]byte
	nm       map[string][]byte
	ifupdown string
	notes    map[string][]string // stack name → StackFiles.Notes
}

func renderStacks(t *testing.T, doc string) rendered {
	t.Helper()
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("%s\n%v", doc, err)
	}
	r := rendered{c: c, notes: map[string][]string{}}
	if r.networkd, err = renderNetworkd(c, nil); err != nil {
		t.Fatal(err)
	}
	if r.nm, _, err = renderNetworkManager(c, nil); err != nil {
		t.Fatal(err)
	}
	b, _, err := renderIfupdown(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.ifupdown = string(b)
	for _, s := range Stacks {
		sf, err := s.Render(Detection{Stack: s, Dir: "/etc/network/interfaces.d"}, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.notes[s.Name] = sf.Notes
	}
	return r
}

func wantIn(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !slices.Contains(strings.Split(text, "\n"), l) {
			t.Errorf("%s lacks the line %q:\n%s", what, l, text)
		}
	}
}

func wantNotIn(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if slices.Contains(strings.Split(text, "\n"), l) {
			t.Errorf("%s has the line %q:\n%s", what, l, text)
		}
	}
}

// An explicit accept-ra: false was overridden by DHCPv6 (IPv6AcceptRA=yes);
// netplan and cloud-init write no. An explicit key wins over a derived
// default, in v1 and v2 and in every stack.
func TestAcceptRAExplicitWins(t *testing.T) {
	for _, doc := range []string{
		"version: 2\nethernets: {eth0: {dhcp6: true, accept-ra: false}}",
		"version: 1\nconfig: [{type: physical, name: eth0, accept-ra: false, subnets: [{type: dhcp6}]}]",
		"version: 1\nconfig: [{type: physical, name: eth0, accept-ra: false, subnets: [{type: ipv6_slaac}]}]",
	} {
		r := renderStacks(t, doc)
		nd := string(r.networkd["05-seedkeeper-eth0.network"])
		wantIn(t, doc, nd, "IPv6AcceptRA=no")
		wantNotIn(t, doc, nd, "IPv6AcceptRA=yes")
		wantIn(t, doc, r.ifupdown, "    accept_ra 0")
	}
	r := renderStacks(t, "version: 2\nethernets: {eth0: {dhcp6: true, accept-ra: false}}")
	wantIn(t, "NetworkManager", string(r.nm["seedkeeper-eth0.nmconnection"]), "method=dhcp")
	// Without the key, DHCPv6 still takes router advertisements.
	r = renderStacks(t, "version: 2\nethernets: {eth0: {dhcp6: true}}")
	wantIn(t, "networkd", string(r.networkd["05-seedkeeper-eth0.network"]), "IPv6AcceptRA=yes")
}

// A v2 route to an address without a prefix length became a /24 or /64
// network route; netplan, the format's owner, makes it a host route. v1
// keeps cloud-init's reading (/24, /64 without a netmask).
func TestRouteToWithoutPrefix(t *testing.T) {
	c, err := Parse([]byte("version: 2\nethernets: {eth0: {addresses: [192.0.2.5/24, 2001:db8::5/64], routes: [" +
		"{to: 10.1.2.3, via: 192.0.2.1}, {to: 2001:db8:1::1, via: 2001:db8::1}, {to: default, via: 192.0.2.1}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Interfaces[0].Routes {
		got = append(got, r.To.String())
	}
	if want := []string{"10.1.2.3/32", "2001:db8:1::1/128", "0.0.0.0/0"}; !slices.Equal(got, want) {
		t.Errorf("v2 destinations %q, want %q", got, want)
	}
	c, err = Parse([]byte("version: 1\nconfig: [{type: physical, name: eth0, subnets: [{type: static, address: 192.0.2.5/24, routes: [" +
		"{destination: 10.1.2.0, gateway: 192.0.2.1}]}]}]"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Interfaces[0].Routes[0].To.String(); got != "10.1.2.0/24" {
		t.Errorf("v1 destination %s, want cloud-init's 10.1.2.0/24", got)
	}
}

// optional: true was ignored, so network-online.target waited for the
// link at every boot.
func TestOptionalLink(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets: {eth0: {dhcp4: true, optional: true}, eth1: {dhcp4: true}}")
	wantIn(t, "networkd", string(r.networkd["05-seedkeeper-eth0.network"]), "[Link]", "RequiredForOnline=no")
	wantNotIn(t, "networkd", string(r.networkd["05-seedkeeper-eth1.network"]), "RequiredForOnline=no")
	wantIn(t, "ifupdown", r.ifupdown, "allow-hotplug eth0", "allow-hotplug eth1", "auto eth1")
	wantNotIn(t, "ifupdown", r.ifupdown, "auto eth0")
	// The optional link is still started on a running ifupdown.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "run/network"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ifupdownState), []byte("lo=lo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rl := reloadIfupdown(root, map[string][]byte{ifupdownFile: []byte(r.ifupdown)})
	var started []string
	for _, s := range rl.Steps {
		started = append(started, s.Command[len(s.Command)-1])
	}
	if want := []string{"ifup@eth0.service", "ifup@eth1.service"}; !slices.Equal(started, want) {
		t.Errorf("reload starts %q, want %q", started, want)
	}
}

// Keys seedkeeper does not apply were dropped with no word. Each is a
// Note naming the link and the key, never the value; the rest of the
// link, and of the document, is applied.
func TestUnappliedKeysNoted(t *testing.T) {
	c, err := Parse([]byte("version: 2\nrenderer: networkd\nethernets:\n  eth0:\n" +
		"    addresses: [192.0.2.5/24, {192.0.2.6/24: {lifetime: 0, label: maint}}]\n    wakeonlan: true\n    receive-checksum-offload: false\n" +
		"    link-local: [ipv4]\n    ignore-carrier: true\n    critical: true\n    bogus-key: 7\n" +
		"    routes: [{to: 10.0.0.0/8, via: 192.0.2.1, mtu: 1377}, {to: 10.9.0.0/16, type: blackhole}]\n" +
		"  eth1: {dhcp4: true}\ntunnels: {gre0: {mode: gre, local: 192.0.2.5, remote: 198.51.100.7}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"renderer: not applied: seedkeeper renders for the stack the image runs; the key left out",
		"tunnels.gre0: a device type seedkeeper does not handle; the link left out",
		"ethernets.eth0.bogus-key: not a key of the v2 format seedkeeper knows; the key left out",
		"ethernets.eth0.critical: not applied: the stack's default for a lost lease is kept; the key left out",
		"ethernets.eth0.ignore-carrier: not applied: the stack's default carrier handling is kept; the key left out",
		"ethernets.eth0.link-local: not applied: the stack's default link-local addressing is kept; the key left out",
		"ethernets.eth0.receive-checksum-offload: not applied: offloads are left as the driver sets them; the key left out",
		"ethernets.eth0.wakeonlan: not applied: wake-on-LAN is left as the NIC has it; the key left out",
		"ethernets.eth0.routes[0].mtu: not applied: the route takes the link's MTU; the key left out",
		"ethernets.eth0.addresses[1].lifetime: not applied: an address keeps the stack's default lifetime; the key left out",
		"ethernets.eth0.addresses[1].label: not applied: address labels are not set; the key left out",
		"ethernets.eth0.routes[1].type: a route type other than unicast, which seedkeeper does not make; the route left out",
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(c.Notes))
	if !slices.Equal(got, want) {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, n := range c.Notes {
		if strings.Contains(n, "1377") || strings.Contains(n, "198.51.100.7") || strings.Contains(n, "maint") || strings.Contains(n, "192.0.2.6") {
			t.Errorf("a note quotes a value: %s", n)
		}
	}
	if eth0 := c.Lookup("eth0"); eth0 == nil || len(eth0.Routes) != 1 || len(eth0.Addresses) != 2 || c.Lookup("eth1") == nil {
		t.Errorf("interfaces %+v", c.Interfaces)
	}
}

// Every key the table says is applied nowhere is noted where it occurs,
// with the table's reason: the table and the parser cannot drift apart.
func TestKeyTableIgnoredKeysNoted(t *testing.T) {
	for _, k := range Keys {
		if k.Format != 2 || !k.Ignored() || (k.Where != "link" && k.Where != "ethernets") {
			continue
		}
		doc := fmt.Sprintf("version: 2\nethernets: {eth0: {dhcp4: true, %s: 1}}", k.Name)
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		want := "ethernets.eth0." + k.Name + ": not applied: " + k.Why + "; the key left out"
		if !slices.Contains(c.Notes, want) {
			t.Errorf("%s: notes %q, want %q", k.Name, c.Notes, want)
		}
		if k.Why == "" {
			t.Errorf("%s %s: noted without a reason", k.Where, k.Name)
		}
	}
	seen := map[string]bool{}
	for _, k := range Keys {
		id := fmt.Sprint(k.Format, k.Where, k.Name)
		if seen[id] {
			t.Errorf("v%d %s %s is in the table twice", k.Format, k.Where, k.Name)
		}
		seen[id] = true
	}
}

// use-domains: route, a valid netplan value (the lease's domains route
// DNS queries and are not searched), was refused as "not a boolean".
func TestDHCPOverridesUseDomainsRoute(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n    dhcp6: true\n"+
		"    dhcp4-overrides: {use-domains: route}\n    dhcp6-overrides: {use-domains: route}\n")
	if len(r.c.Notes) > 0 {
		t.Errorf("notes: %q", r.c.Notes)
	}
	nd := string(r.networkd["05-seedkeeper-eth0.network"])
	v4, v6, _ := strings.Cut(nd, "[DHCPv6]")
	wantIn(t, "networkd [DHCPv4]", v4[strings.Index(v4, "[DHCPv4]"):], "UseDomains=route")
	wantIn(t, "networkd [DHCPv6]", v6, "UseDomains=route")
	// The stacks without the setting name it, as for true and false.
	if n := strings.Join(r.notes["networkmanager"], "\n"); !strings.Contains(n, "dhcp4-overrides.use-domains, ") || !strings.Contains(n, "dhcp6-overrides.use-domains") {
		t.Errorf("NetworkManager notes do not name use-domains: %q", n)
	}
}

// dhcp4-overrides and dhcp6-overrides other than route-metric were
// dropped: use-dns: false still took the DHCP server's resolvers.
func TestDHCPOverrides(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n    dhcp6: true\n    dhcp-identifier: mac\n"+
		"    dhcp4-overrides: {use-dns: false, use-ntp: false, use-hostname: false, use-domains: false, use-routes: false,"+
		" send-hostname: false, hostname: node1, route-metric: 200, use-mtu: false}\n"+
		"    dhcp6-overrides: {use-dns: false, use-ntp: false, use-hostname: false, use-domains: false, route-metric: 300, use-routes: false}\n")
	nd := string(r.networkd["05-seedkeeper-eth0.network"])
	wantIn(t, "networkd", nd, "[DHCPv4]", "ClientIdentifier=mac", "RouteMetric=200", "UseDNS=no", "UseNTP=no", "UseHostname=no",
		"UseDomains=no", "UseRoutes=no", "UseMTU=no", "SendHostname=no", "Hostname=node1", "[DHCPv6]", "RouteMetric=300")
	v6 := nd[strings.Index(nd, "[DHCPv6]"):]
	wantIn(t, "networkd [DHCPv6]", v6, "UseDNS=no", "UseNTP=no", "UseHostname=no", "UseDomains=no")
	nm := string(r.nm["seedkeeper-eth0.nmconnection"])
	wantIn(t, "NetworkManager", nm, "ignore-auto-dns=true", "ignore-auto-routes=true", "never-default=true",
		"dhcp-send-hostname=false", "dhcp-hostname=node1", "route-metric=200", "route-metric=300", "dhcp-client-id=mac",
		"[hostname]", "from-dhcp=false")
	wantIn(t, "ifupdown", r.ifupdown, "    hostname node1", "    metric 200")
	// What a stack's files cannot say is named, with the link.
	for stack, want := range map[string]string{
		"networkd":       "eth0: not applied by networkd: dhcp6-overrides.use-routes",
		"networkmanager": "eth0: not applied by networkmanager: dhcp4-overrides.use-ntp, dhcp4-overrides.use-domains, dhcp4-overrides.use-mtu, dhcp6-overrides.use-ntp, dhcp6-overrides.use-domains",
		"ifupdown":       "eth0: not applied by ifupdown: dhcp-identifier, dhcp4-overrides.use-dns, dhcp4-overrides.use-ntp, dhcp4-overrides.use-hostname, dhcp4-overrides.use-domains, dhcp4-overrides.use-routes, dhcp4-overrides.use-mtu, dhcp4-overrides.send-hostname, dhcp6-overrides.use-dns, dhcp6-overrides.use-ntp, dhcp6-overrides.use-hostname, dhcp6-overrides.use-domains, dhcp6-overrides.use-routes, dhcp6-overrides.route-metric",
	} {
		if !slices.Contains(r.notes[stack], want) {
			t.Errorf("%s notes %q, want %q", stack, r.notes[stack], want)
		}
	}
}

// A v2 macaddress on a bond, bridge or VLAN was ignored, so a bond took a
// member's MAC and the DHCP lease the user pinned changed. On an ethernet
// it is the MAC set (match.macaddress selects).
func TestSetMACAddress(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets:\n  eth0: {match: {macaddress: '52:54:00:00:00:01'}, macaddress: '02:00:00:00:00:aa', set-name: wan0, dhcp4: true}\n"+
		"  eth1: {}\n  eth2: {}\n  eth3: {}\n"+
		"bonds: {bond0: {interfaces: [eth1], macaddress: '02:00:00:00:00:b0', dhcp4: true}}\n"+
		"bridges: {br0: {interfaces: [eth2], macaddress: '02:00:00:00:00:b1', dhcp4: true}}\n"+
		"vlans: {v10: {id: 10, link: eth3, macaddress: '02:00:00:00:00:b2', dhcp4: true}}\n")
	for id, mac := range map[string]string{"bond0": "02:00:00:00:00:b0", "br0": "02:00:00:00:00:b1", "v10": "02:00:00:00:00:b2"} {
		wantIn(t, id+".netdev", string(r.networkd["05-seedkeeper-"+id+".netdev"]), "MACAddress="+mac)
		if got := r.c.Lookup(id).MAC; got != mac {
			t.Errorf("%s: MAC %q, want %s", id, got, mac)
		}
	}
	nd := string(r.networkd["05-seedkeeper-eth0.network"])
	// Matched by the MAC it was made with, which the new one does not
	// change (MACAddress= would stop matching once it is set).
	wantIn(t, "networkd", nd, "PermanentMACAddress=52:54:00:00:00:01", "[Link]", "MACAddress=02:00:00:00:00:aa")
	wantNotIn(t, "networkd", nd, "MACAddress=52:54:00:00:00:01")
	wantIn(t, "NetworkManager", string(r.nm["seedkeeper-eth0.nmconnection"]), "mac-address=52:54:00:00:00:01", "cloned-mac-address=02:00:00:00:00:AA")
	wantIn(t, "ifupdown", r.ifupdown, "    hwaddress ether 02:00:00:00:00:aa")
	if e := r.c.Lookup("eth0"); e.MAC != "52:54:00:00:00:01" || e.SetMAC != "02:00:00:00:00:aa" {
		t.Errorf("eth0 MAC %q SetMAC %q", e.MAC, e.SetMAC)
	}
}

// Bridge port path-cost and port-priority were applied live but missing
// from the networkd files.
func TestBridgePortParams(t *testing.T) {
	for _, doc := range []string{
		"version: 2\nethernets: {eth0: {}, eth1: {}}\nbridges: {br0: {interfaces: [eth0, eth1], dhcp4: true, parameters: {path-cost: {eth0: 50}, port-priority: {eth0: 7, eth1: 9}}}}",
		"version: 1\nconfig: [{type: physical, name: eth0}, {type: physical, name: eth1}, {type: bridge, name: br0, bridge_interfaces: [eth0, eth1], params: {bridge_pathcost: ['eth0 50'], bridge_portprio: ['eth0 7', 'eth1 9']}, subnets: [{type: dhcp}]}]",
	} {
		r := renderStacks(t, doc)
		wantIn(t, doc, string(r.networkd["05-seedkeeper-eth0.network"]), "Bridge=br0", "[Bridge]", "Cost=50", "Priority=7")
		e1 := string(r.networkd["05-seedkeeper-eth1.network"])
		wantIn(t, doc, e1, "[Bridge]", "Priority=9")
		wantNotIn(t, doc, e1, "Cost=50")
	}
}

// routing-policy was ignored while the routes with table: were kept, so
// source routing silently did nothing.
func TestRoutingPolicy(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets:\n  eth0:\n    addresses: [192.0.2.5/24, 2001:db8::5/64]\n"+
		"    routes: [{to: default, via: 192.0.2.1, table: 100}]\n"+
		"    routing-policy:\n    - {from: 192.0.2.0/24, table: 100, priority: 10}\n    - {to: 198.51.100.7, table: 101, mark: 5, type-of-service: 8}\n"+
		"    - {from: 2001:db8::/64, table: 100}\n")
	nd := string(r.networkd["05-seedkeeper-eth0.network"])
	wantIn(t, "networkd", nd, "[RoutingPolicyRule]", "From=192.0.2.0/24", "Table=100", "Priority=10",
		"To=198.51.100.7/32", "Table=101", "FirewallMark=5", "TypeOfService=8", "From=2001:db8::/64")
	if n := strings.Count(nd, "[RoutingPolicyRule]"); n != 3 {
		t.Errorf("%d rules in\n%s", n, nd)
	}
	nm := string(r.nm["seedkeeper-eth0.nmconnection"])
	wantIn(t, "NetworkManager", nm, "routing-rule1=priority 10 from 192.0.2.0/24 table 100",
		"routing-rule2=to 198.51.100.7/32 fwmark 5 tos 8 table 101", "routing-rule1=from 2001:db8::/64 table 100")
	wantIn(t, "ifupdown", r.ifupdown, "    up ip -4 rule add priority 10 from 192.0.2.0/24 table 100 || true",
		"    down ip -4 rule del priority 10 from 192.0.2.0/24 table 100 || true",
		"    up ip -6 rule add from 2001:db8::/64 table 100 || true")
	// A rule that names neither end is left out alone.
	c, err := Parse([]byte("version: 2\nethernets: {eth0: {routing-policy: [{table: 100}, {from: 192.0.2.0/24, to: 2001:db8::/64}, {from: 10.0.0.0/8, table: 7}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	if rp := c.Interfaces[0].RoutingPolicy; len(rp) != 1 || rp[0].Table != 7 || len(c.Notes) != 2 {
		t.Errorf("rules %+v notes %q", rp, c.Notes)
	}
}

// A renderer never names a master, VLAN parent or link it does not also
// define: over generated configurations and ownerships, every Bond=,
// Bridge= and VLAN= of networkd names a .netdev of the same output, and
// NetworkManager and ifupdown name no master or parent at all (they do
// not render bonds, bridges or VLANs). A member whose bond is not owned
// gets a plain configuration of its own.
func TestRenderNamesOnlyWhatItDefines(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	ref := regexp.MustCompile(`(?m)^(Bond|Bridge|VLAN)=(.*)$`)
	nmRef := regexp.MustCompile(`(?m)^(master|parent|slave-type|controller|port-type)=`)
	ifRef := regexp.MustCompile(`(?m)^\s*(bond-master|bond-slaves|bridge_ports|vlan-raw-device|bond_master)\b`)
	for iter := range 300 {
		c := &Config{}
		nNIC := 1 + rng.IntN(4)
		for i := range nNIC {
			c.Interfaces = append(c.Interfaces, Interface{ID: fmt.Sprintf("eth%d", i), Kind: Physical,
				MAC: fmt.Sprintf("52:54:00:00:00:%02x", i), DHCP4: rng.IntN(2) == 0})
		}
		for i := range rng.IntN(4) {
			kind := []Kind{Bond, Bridge, VLAN}[rng.IntN(3)]
			ifc := Interface{ID: fmt.Sprintf("%s%d", kind, i), Kind: kind, DHCP4: true}
			ifc.Name = ifc.ID
			pick := c.Interfaces[rng.IntN(len(c.Interfaces))].ID
			if kind == VLAN {
				ifc.VLANID, ifc.VLANLink = 10+i, pick
			} else if c.Master(c.Lookup(pick)) == nil {
				ifc.Links = []string{pick}
			}
			c.Interfaces = append(c.Interfaces, ifc)
		}
		ownedSet := map[string]bool{}
		for _, ifc := range c.Interfaces {
			ownedSet[ifc.ID] = rng.IntN(3) != 0
		}
		owned := func(i *Interface) bool { return ownedSet[i.ID] }
		files, err := renderNetworkd(c, owned)
		if err != nil {
			t.Fatal(err)
		}
		defined := map[string]bool{}
		for name, b := range files {
			if strings.HasSuffix(name, ".netdev") {
				for _, l := range strings.Split(string(b), "\n") {
					if n, ok := strings.CutPrefix(l, "Name="); ok {
						defined[n] = true
					}
				}
			}
		}
		for name, b := range files {
			for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
				if !defined[m[2]] {
					t.Fatalf("iteration %d: %s says %s=%s, which no .netdev defines\nconfig %+v\nowned %v", iter, name, m[1], m[2], c.Interfaces, ownedSet)
				}
			}
		}
		for _, ifc := range c.Interfaces {
			if ifc.Kind == Physical && owned(&ifc) {
				if _, ok := files[networkdBase(ifc.ID)+".network"]; !ok {
					t.Fatalf("iteration %d: owned %s has no file", iter, ifc.ID)
				}
			}
		}
		nm, _, err := renderNetworkManager(c, owned)
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range nm {
			if nmRef.Match(b) {
				t.Fatalf("iteration %d: %s names a master or parent:\n%s", iter, name, b)
			}
		}
		ifup, _, err := renderIfupdown(c, owned)
		if err != nil {
			t.Fatal(err)
		}
		if ifRef.Match(ifup) {
			t.Fatalf("iteration %d: ifupdown names a master or parent:\n%s", iter, ifup)
		}
	}
}

// An explicit on-link: true was dropped, so a route whose gateway is
// outside the link's addresses on a link that also runs DHCP was not
// on-link in any stack's files.
func TestRouteOnLink(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets: {eth0: {dhcp4: true, addresses: [192.0.2.5/24], routes: [{to: 10.0.0.0/8, via: 198.51.100.1, on-link: true}, {to: 10.1.0.0/16, via: 198.51.100.2}]}}")
	nd := string(r.networkd["05-seedkeeper-eth0.network"])
	if strings.Count(nd, "GatewayOnLink=yes") != 1 || !strings.Contains(nd, "Gateway=198.51.100.1\nGatewayOnLink=yes") {
		t.Errorf("networkd:\n%s", nd)
	}
	wantIn(t, "NetworkManager", string(r.nm["seedkeeper-eth0.nmconnection"]), "route1_options=onlink=true")
	wantIn(t, "ifupdown", r.ifupdown, "    post-up ip -4 route replace 10.0.0.0/8 via 198.51.100.1 onlink dev eth0")
	if rt := r.c.Interfaces[0].Routes; !rt[0].OnLink || rt[1].OnLink {
		t.Errorf("routes %+v", rt)
	}
}

// A rule's from or to of all (default, /0) is no selector, as the kernel
// keeps it: the other end decides the family, and a rule of neither is
// left out.
func TestRuleAllIsNoSelector(t *testing.T) {
	c, err := Parse([]byte("version: 2\nethernets: {eth0: {routing-policy: [{from: '2001:db8::/64', to: default, table: 5}, {from: 0.0.0.0/0, table: 6}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	rp := c.Interfaces[0].RoutingPolicy
	if len(rp) != 1 || rp[0].To.IsValid() || rp[0].From.String() != "2001:db8::/64" || len(c.Notes) != 1 {
		t.Errorf("rules %+v notes %q", rp, c.Notes)
	}
}

// Every model field the renderers note by is a key of the table, and
// every key some stack applies and another does not is one of them, so
// that no stack drops a setting without a word. (Keys of bonds, bridges
// and VLANs are exempt: NetworkManager and ifupdown render none of those
// links, and the status names them whole.)
func TestFieldKeysCoverTheTable(t *testing.T) {
	have := map[string]bool{}
	for _, fk := range fieldKeys {
		if LookupKey(2, fk.where, fk.name) == nil {
			t.Errorf("%s %s is not in the table", fk.where, fk.name)
		}
		have[fk.where+" "+fk.name] = true
	}
	for _, k := range Keys {
		if k.Format != 2 || k.Ignored() || slices.Contains([]string{"network", "bonds", "bridges", "vlans", "parameters"}, k.Where) ||
			k.Where == "link" && k.Name == "macaddress" {
			continue
		}
		mixed := false
		for _, s := range Stacks {
			mixed = mixed || k.In(s.Name) == Noted
		}
		mixed = mixed || k.In("live") == Noted
		if mixed && !have[k.Where+" "+k.Name] {
			t.Errorf("%s %s is applied by some stacks and noted by others, but no renderer can tell it is set", k.Where, k.Name)
		}
	}
}

// A match.driver beside a name was dropped in silence by the stacks that
// cannot match by driver; it is named.
func TestMatchDriverNoted(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets: {lan: {match: {name: ens3, driver: virtio_net}, dhcp4: true}}")
	for _, stack := range []string{"networkmanager", "ifupdown"} {
		if want := "lan: not applied by " + stack + ": match.driver"; !slices.Contains(r.notes[stack], want) {
			t.Errorf("%s notes %q, want %q", stack, r.notes[stack], want)
		}
	}
	if len(r.notes["networkd"]) != 0 {
		t.Errorf("networkd notes %q", r.notes["networkd"])
	}
}

// netplan's own spellings of bond parameters (arp-ip-targets in its
// reference, all-members-active and packets-per-member) were kept as
// unknown parameters: a comment in the .netdev and nothing live. They are
// the parameters seedkeeper knows under its names.
func TestBondParamSpellings(t *testing.T) {
	r := renderStacks(t, "version: 2\nethernets: {e0: {}}\nbonds: {bond0: {interfaces: [e0], parameters: "+
		"{mode: balance-rr, arp-interval: 100, arp-ip-targets: [192.0.2.1, 192.0.2.2], all-members-active: true, packets-per-member: 2}}}")
	nd := string(r.networkd["05-seedkeeper-bond0.netdev"])
	wantIn(t, "bond0.netdev", nd, "ARPIPTargets=192.0.2.1 192.0.2.2", "AllSlavesActive=yes", "PacketsPerSlave=2")
	if strings.Contains(nd, "not rendered") {
		t.Errorf("bond0.netdev:\n%s", nd)
	}
	if p := r.c.Lookup("bond0").Params; p["arp-ip-target"] != "192.0.2.1 192.0.2.2" || p["all-slaves-active"] != "true" || p["packets-per-slave"] != "2" {
		t.Errorf("params %v", p)
	}
}
