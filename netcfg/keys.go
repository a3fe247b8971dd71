package netcfg

import (
	"fmt"
	"maps"
	"strings"
)

// Support says what seedkeeper does with a configuration key in one place:
// one stack's files, or the live apply.
type Support uint8

const (
	// NotApplicable: the key means nothing there (DHCP settings live,
	// where the stack runs the DHCP client).
	NotApplicable Support = iota
	// Applied: rendered into the stack's files, or applied live.
	Applied
	// Noted: not done there, and said in the status and the log, naming
	// the link and the key.
	Noted
)

func (s Support) String() string {
	switch s {
	case Applied:
		return "applied"
	case Noted:
		return "noted"
	}
	return "n/a"
}

// Key is one key of a network configuration format and what seedkeeper
// does with it.
type Key struct {
	// Format is 1 (cloud-init's v1) or 2 (netplan's v2).
	Format int
	// Where is the mapping the key is in: for v2 "network" (the top
	// level), "link" (every device type), "ethernets", "bonds",
	// "bridges", "vlans", "match", "parameters" (of a bond or bridge),
	// "nameservers", "dhcp4-overrides", "dhcp6-overrides", "routes",
	// "routing-policy" or "addresses" (the options of one address); for v1 "config" (every link entry), the entry's
	// type ("physical", "bond", "bridge", "vlan", "nameserver",
	// "route"), or "subnets". A key of a device-type place ("ethernets")
	// wins over the same key of "link".
	Where string
	// Name is the key as the document spells it.
	Name string
	// Why says, for a key that seedkeeper applies nowhere, why; it ends
	// the Note. A key without one is applied by every stack's files and
	// the live apply, but where one of them says otherwise (Stack's
	// keys, liveKeys).
	Why string
}

// Ignored reports whether seedkeeper does nothing with the key anywhere:
// the parser notes it wherever it occurs.
func (k Key) Ignored() bool {
	if k.In("live") == Applied {
		return false
	}
	for _, s := range Stacks {
		if k.In(s.Name) == Applied {
			return false
		}
	}
	return true
}

// keySupport is what one stack's files, or the live apply, do with the
// keys where that is not the default of the table (a key with a Why is
// noted, every other key applied), by "v<format> <where>.<name>".
type keySupport map[string]Support

// except returns keySupport saying s of the keys of groups, each
// "v<format> <where>: <name> <name>...".
func except(s Support, groups ...string) keySupport {
	ks := keySupport{}
	for _, g := range groups {
		head, names, _ := strings.Cut(g, ":")
		for _, n := range strings.Fields(names) {
			ks[head+"."+n] = s
		}
	}
	return ks
}

// and returns the union of l.
func and(l ...keySupport) keySupport {
	ks := keySupport{}
	for _, m := range l {
		maps.Copy(ks, m)
	}
	return ks
}

// of returns what ks says of k.
func (ks keySupport) of(k *Key) Support {
	if s, ok := ks[k.id()]; ok {
		return s
	}
	if k.Why != "" {
		return Noted
	}
	return Applied
}

func (k *Key) id() string { return fmt.Sprintf("v%d %s.%s", k.Format, k.Where, k.Name) }

// stackedDevices are the keys of bonds, bridges and VLANs, and of the
// links' settings that only they use, which a stack that renders the
// physical links only (NetworkManager, ifupdown: the live apply makes
// the stacked devices) does not say.
var stackedDevices = except(Noted,
	"v2 network: bonds bridges vlans",
	"v2 link: macaddress",
	"v2 bonds: interfaces parameters",
	"v2 bridges: interfaces parameters",
	"v2 vlans: id link",
	"v2 parameters: path-cost port-priority",
	"v1 bond: bond_interfaces params",
	"v1 bridge: bridge_interfaces params",
	"v1 vlan: vlan_id vlan_link",
)

// liveKeys are what the live apply does with the keys: the DHCP
// settings and resolvers mean nothing live (the stack runs the DHCP
// client), and a NIC keeps its MAC until its stack sets the new one.
var liveKeys = and(
	except(NotApplicable,
		"v2 link: dhcp4 dhcp6 accept-ra nameservers optional dhcp4-overrides dhcp6-overrides dhcp-identifier",
		"v2 nameservers: addresses search",
		"v2 dhcp4-overrides: use-dns use-ntp use-hostname use-domains use-routes use-mtu send-hostname hostname route-metric",
		"v2 dhcp6-overrides: use-dns use-ntp use-hostname use-domains use-routes use-mtu send-hostname hostname route-metric",
		"v1 config: accept-ra",
		"v1 nameserver: type address search interface",
		"v1 subnets: dns_nameservers dns_search",
	),
	except(Noted, "v2 ethernets: macaddress"),
)

// Keys is the one table of the configuration keys seedkeeper reads, per
// format and place: every key it knows is here with what each stack's
// files and the live apply do with it, and a key of a document that is
// not here, or is here but applied nowhere, is a Note naming the link and
// the key. The README's table and the tests derive from it.
var Keys = []Key{
	// netplan v2, top level.
	{2, "network", "version", ""},
	{2, "network", "renderer", "seedkeeper renders for the stack the image runs"},
	{2, "network", "ethernets", ""},
	{2, "network", "bonds", ""},
	{2, "network", "bridges", ""},
	{2, "network", "vlans", ""},
	{2, "network", "tunnels", "a device type seedkeeper does not handle"},
	{2, "network", "wifis", "a device type seedkeeper does not handle"},
	{2, "network", "vrfs", "a device type seedkeeper does not handle"},
	{2, "network", "modems", "a device type seedkeeper does not handle"},
	{2, "network", "dummy-devices", "a device type seedkeeper does not handle"},
	{2, "network", "virtual-ethernets", "a device type seedkeeper does not handle"},
	{2, "network", "nm-devices", "a device type seedkeeper does not handle"},
	{2, "network", "openvswitch", "Open vSwitch is not handled"},

	// v2, every device type.
	{2, "link", "dhcp4", ""},
	{2, "link", "dhcp6", ""},
	{2, "link", "accept-ra", ""},
	{2, "link", "addresses", ""},
	{2, "link", "gateway4", ""},
	{2, "link", "gateway6", ""},
	{2, "link", "routes", ""},
	{2, "link", "routing-policy", ""},
	{2, "link", "nameservers", ""},
	{2, "link", "mtu", ""},
	// The MAC a bond, bridge or VLAN is made with; an ethernet's below.
	{2, "link", "macaddress", ""},
	{2, "link", "optional", ""},
	{2, "link", "dhcp4-overrides", ""},
	{2, "link", "dhcp6-overrides", ""},
	{2, "link", "dhcp-identifier", ""},
	{2, "link", "renderer", "seedkeeper renders for the stack the image runs"},
	{2, "link", "critical", "the stack's default for a lost lease is kept"},
	{2, "link", "link-local", "the stack's default link-local addressing is kept"},
	{2, "link", "ignore-carrier", "the stack's default carrier handling is kept"},
	{2, "link", "ipv6-privacy", "privacy addresses are left at the stack's default"},
	{2, "link", "ipv6-mtu", "the IPv6 MTU is left at the kernel's default"},
	{2, "link", "ipv6-address-generation", "address generation is left at the stack's default"},
	{2, "link", "ipv6-address-token", "address generation is left at the stack's default"},
	{2, "link", "optional-addresses", "the stack waits as it does by default"},
	{2, "link", "activation-mode", "every link seedkeeper owns is brought up"},
	{2, "link", "neigh-suppress", "bridge port options other than cost and priority are not handled"},
	{2, "link", "openvswitch", "Open vSwitch is not handled"},

	// v2 ethernets.
	{2, "ethernets", "match", ""},
	// Live, a NIC keeps its MAC until its stack sets the new one.
	{2, "ethernets", "macaddress", ""},
	{2, "ethernets", "set-name", ""},
	{2, "ethernets", "wakeonlan", "wake-on-LAN is left as the NIC has it"},
	{2, "ethernets", "emit-lldp", "LLDP is left at the stack's default"},
	{2, "ethernets", "receive-checksum-offload", "offloads are left as the driver sets them"},
	{2, "ethernets", "transmit-checksum-offload", "offloads are left as the driver sets them"},
	{2, "ethernets", "tcp-segmentation-offload", "offloads are left as the driver sets them"},
	{2, "ethernets", "tcp6-segmentation-offload", "offloads are left as the driver sets them"},
	{2, "ethernets", "generic-segmentation-offload", "offloads are left as the driver sets them"},
	{2, "ethernets", "generic-receive-offload", "offloads are left as the driver sets them"},
	{2, "ethernets", "large-receive-offload", "offloads are left as the driver sets them"},
	{2, "ethernets", "infiniband-mode", "InfiniBand is not handled"},
	{2, "ethernets", "link", "SR-IOV is not handled"},
	{2, "ethernets", "virtual-function-count", "SR-IOV is not handled"},
	{2, "ethernets", "embedded-switch-mode", "SR-IOV is not handled"},
	{2, "ethernets", "delay-virtual-functions-rebind", "SR-IOV is not handled"},
	{2, "ethernets", "auth", "802.1X is not handled"},
	{2, "match", "macaddress", ""},
	{2, "match", "name", ""},
	{2, "match", "driver", ""},

	// v2 bonds, bridges, VLANs (their links are not rendered for
	// NetworkManager or ifupdown: the status names them).
	{2, "bonds", "interfaces", ""},
	{2, "bonds", "parameters", ""},
	{2, "bridges", "interfaces", ""},
	{2, "bridges", "parameters", ""},
	{2, "vlans", "id", ""},
	{2, "vlans", "link", ""},
	// Bridge port settings go on the member's own file.
	{2, "parameters", "path-cost", ""},
	{2, "parameters", "port-priority", ""},

	{2, "nameservers", "addresses", ""},
	{2, "nameservers", "search", ""},

	{2, "dhcp4-overrides", "use-dns", ""},
	{2, "dhcp4-overrides", "use-ntp", ""},
	{2, "dhcp4-overrides", "use-hostname", ""},
	{2, "dhcp4-overrides", "use-domains", ""},
	{2, "dhcp4-overrides", "use-routes", ""},
	{2, "dhcp4-overrides", "use-mtu", ""},
	{2, "dhcp4-overrides", "send-hostname", ""},
	{2, "dhcp4-overrides", "hostname", ""},
	{2, "dhcp4-overrides", "route-metric", ""},
	{2, "dhcp6-overrides", "use-dns", ""},
	{2, "dhcp6-overrides", "use-ntp", ""},
	{2, "dhcp6-overrides", "use-hostname", ""},
	{2, "dhcp6-overrides", "use-domains", ""},
	{2, "dhcp6-overrides", "use-routes", ""},
	{2, "dhcp6-overrides", "use-mtu", "DHCPv6 carries no MTU"},
	{2, "dhcp6-overrides", "send-hostname", ""},
	{2, "dhcp6-overrides", "hostname", ""},
	{2, "dhcp6-overrides", "route-metric", ""},

	{2, "addresses", "lifetime", "an address keeps the stack's default lifetime"},
	{2, "addresses", "label", "address labels are not set"},

	{2, "routes", "to", ""},
	{2, "routes", "via", ""},
	{2, "routes", "metric", ""},
	{2, "routes", "table", ""},
	{2, "routes", "on-link", ""},
	{2, "routes", "from", "the route's preferred source is left to the kernel"},
	{2, "routes", "scope", "the scope follows from the gateway"},
	{2, "routes", "mtu", "the route takes the link's MTU"},
	{2, "routes", "congestion-window", "TCP window settings are left at the kernel's default"},
	{2, "routes", "advertised-receive-window", "TCP window settings are left at the kernel's default"},
	// type: a unicast route is the only kind; another leaves the route
	// out, with a note.
	{2, "routes", "type", ""},

	{2, "routing-policy", "from", ""},
	{2, "routing-policy", "to", ""},
	{2, "routing-policy", "table", ""},
	{2, "routing-policy", "priority", ""},
	{2, "routing-policy", "mark", ""},
	{2, "routing-policy", "type-of-service", ""},

	// cloud-init v1.
	{1, "config", "type", ""},
	{1, "config", "name", ""},
	{1, "config", "mac_address", ""},
	{1, "config", "mtu", ""},
	{1, "config", "subnets", ""},
	{1, "config", "accept-ra", ""},
	{1, "config", "keep_configuration", "the stack's default is kept"},
	{1, "config", "wakeonlan", "wake-on-LAN is left as the NIC has it"},
	{1, "bond", "bond_interfaces", ""},
	{1, "bond", "params", ""},
	{1, "bridge", "bridge_interfaces", ""},
	{1, "bridge", "params", ""},
	{1, "vlan", "vlan_id", ""},
	{1, "vlan", "vlan_link", ""},
	{1, "nameserver", "type", ""},
	{1, "nameserver", "address", ""},
	{1, "nameserver", "search", ""},
	{1, "nameserver", "interface", ""},
	{1, "route", "type", ""},
	{1, "route", "destination", ""},
	{1, "route", "network", ""},
	{1, "route", "netmask", ""},
	{1, "route", "prefix", ""},
	{1, "route", "gateway", ""},
	{1, "route", "metric", ""},
	{1, "subnets", "type", ""},
	{1, "subnets", "address", ""},
	{1, "subnets", "netmask", ""},
	{1, "subnets", "prefix", ""},
	{1, "subnets", "gateway", ""},
	{1, "subnets", "metric", ""},
	{1, "subnets", "dns_nameservers", ""},
	{1, "subnets", "dns_search", ""},
	{1, "subnets", "routes", ""},
	// control: seedkeeper brings up every link it owns.
	{1, "subnets", "control", "every link seedkeeper owns is brought up"},
	// broadcast: the kernel derives it from the prefix.
	{1, "subnets", "broadcast", ""},
}

// keyIndex finds a Key by format, place and name.
var keyIndex = func() map[string]*Key {
	m := make(map[string]*Key, len(Keys))
	for i := range Keys {
		k := &Keys[i]
		m[fmt.Sprint(k.Format, " ", k.Where, " ", k.Name)] = k
	}
	return m
}()

// LookupKey returns the Key of the table for a format, place and name,
// or nil.
func LookupKey(format int, where, name string) *Key {
	return keyIndex[fmt.Sprint(format, " ", where, " ", name)]
}

// noteKeys notes each key of m that is in none of the places wheres of
// the table, or is there but applied nowhere; what is what the note says
// is left out ("the key"). A key's name is named only when it is a short
// word of the table's alphabet, never its value.
func (m mapping) noteKeys(format int, n *notes, wheres ...string) {
	for _, name := range m.keys() {
		var k *Key
		for _, w := range wheres {
			if k = LookupKey(format, w, name); k != nil {
				break
			}
		}
		switch {
		case k == nil && !keyWord(name):
			n.drop(&FieldError{Path: m.path, Msg: "a key that is not one of the format's"}, "the key")
		case k == nil:
			n.drop(m.get(name).errorf("not a key of the v%d format seedkeeper knows", format), "the key")
		case k.Ignored():
			n.drop(m.get(name).errorf("not applied: %s", k.Why), "the key")
		}
	}
}

// keyWord reports whether s may be named in a note: 1 to 40 of a-z, 0-9,
// '-' and '_', the alphabet of the formats' own keys.
func keyWord(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

// In returns what the stack called name (Stack.Name), or the live apply
// ("live"), does with the key: each stack declares it (its keys), the
// live apply in liveKeys.
func (k Key) In(name string) Support {
	if name == "live" {
		return liveKeys.of(&k)
	}
	if ks, ok := stackKeys[name]; ok {
		return ks.of(&k)
	}
	return NotApplicable
}

// fieldKeys ties the model's fields to the table's keys: set reports
// whether the link carries the key's setting. The renderers note, from
// it, what their files cannot say of a link they render.
var fieldKeys = []struct {
	where, name string
	set         func(*Interface) bool
}{
	{"link", "dhcp-identifier", func(i *Interface) bool { return i.DHCP4 && i.DHCPIdentifier != "" }},
	{"link", "macaddress", func(i *Interface) bool { return i.Kind != Physical && i.MAC != "" }},
	{"ethernets", "macaddress", func(i *Interface) bool { return i.SetMAC != "" }},
	{"link", "routing-policy", func(i *Interface) bool { return len(i.RoutingPolicy) > 0 }},
	{"link", "optional", func(i *Interface) bool { return i.Optional }},
	{"match", "driver", func(i *Interface) bool { return i.Kind == Physical && i.MatchDriver != "" }},
	{"dhcp4-overrides", "use-dns", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.UseDNS != nil }},
	{"dhcp4-overrides", "use-ntp", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.UseNTP != nil }},
	{"dhcp4-overrides", "use-hostname", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.UseHostname != nil }},
	{"dhcp4-overrides", "use-domains", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.UseDomains != nil }},
	{"dhcp4-overrides", "use-routes", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.UseRoutes != nil }},
	{"dhcp4-overrides", "use-mtu", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.UseMTU != nil }},
	{"dhcp4-overrides", "send-hostname", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.SendHostname != nil }},
	{"dhcp4-overrides", "hostname", func(i *Interface) bool { return i.DHCP4 && i.DHCP4Overrides.Hostname != "" }},
	{"dhcp6-overrides", "use-dns", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.UseDNS != nil }},
	{"dhcp6-overrides", "use-ntp", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.UseNTP != nil }},
	{"dhcp6-overrides", "use-hostname", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.UseHostname != nil }},
	{"dhcp6-overrides", "use-domains", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.UseDomains != nil }},
	{"dhcp6-overrides", "use-routes", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.UseRoutes != nil }},
	{"dhcp6-overrides", "use-mtu", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.UseMTU != nil }},
	{"dhcp6-overrides", "send-hostname", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.SendHostname != nil }},
	{"dhcp6-overrides", "hostname", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.Hostname != "" }},
	{"dhcp6-overrides", "route-metric", func(i *Interface) bool { return i.DHCP6 && i.DHCP6Overrides.RouteMetric != 0 }},
}

// UnappliedBy names, for each of links, the settings of the link that the
// stack called stack (Stack.Name) does not say in its files, or the live
// apply ("live") does not apply, by the table: one note per link, naming
// its ID and the keys, never a value. The renderers' StackFiles.Notes and
// the live plan's notes come from it.
func UnappliedBy(stack string, links []*Interface) []string {
	var out []string
	for _, ifc := range links {
		var keys []string
		for _, fk := range fieldKeys {
			if k := LookupKey(2, fk.where, fk.name); k != nil && k.In(stack) == Noted && fk.set(ifc) {
				name := fk.where + "." + fk.name
				if fk.where == "link" || fk.where == "ethernets" {
					name = fk.name
				}
				keys = append(keys, name)
			}
		}
		switch {
		case len(keys) == 0:
		case stack == "live":
			out = append(out, fmt.Sprintf("%s: not applied live, left to the stack's files: %s", ifc.ID, strings.Join(keys, ", ")))
		default:
			out = append(out, fmt.Sprintf("%s: not applied by %s: %s", ifc.ID, stack, strings.Join(keys, ", ")))
		}
	}
	return out
}
