package netcfg

import (
	"fmt"
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
	// What the three stacks' files say of it, and the live apply.
	Networkd, NetworkManager, Ifupdown, Live Support
	// Why says, for a key that is noted, why it is not applied; it ends
	// the Note.
	Why string
}

// Ignored reports whether seedkeeper does nothing with the key anywhere:
// the parser notes it wherever it occurs.
func (k Key) Ignored() bool {
	for _, s := range []Support{k.Networkd, k.NetworkManager, k.Ifupdown, k.Live} {
		if s == Applied {
			return false
		}
	}
	return true
}

// Short names for the table.
const (
	na = NotApplicable
	ok = Applied
	no = Noted
)

// Keys is the one table of the configuration keys seedkeeper reads, per
// format and place: every key it knows is here with what each stack's
// files and the live apply do with it, and a key of a document that is
// not here, or is here but applied nowhere, is a Note naming the link and
// the key. The README's table and the tests derive from it.
var Keys = []Key{
	// netplan v2, top level.
	{2, "network", "version", ok, ok, ok, ok, ""},
	{2, "network", "renderer", no, no, no, no, "seedkeeper renders for the stack the image runs"},
	{2, "network", "ethernets", ok, ok, ok, ok, ""},
	{2, "network", "bonds", ok, no, no, ok, ""},
	{2, "network", "bridges", ok, no, no, ok, ""},
	{2, "network", "vlans", ok, no, no, ok, ""},
	{2, "network", "tunnels", no, no, no, no, "a device type seedkeeper does not handle"},
	{2, "network", "wifis", no, no, no, no, "a device type seedkeeper does not handle"},
	{2, "network", "vrfs", no, no, no, no, "a device type seedkeeper does not handle"},
	{2, "network", "modems", no, no, no, no, "a device type seedkeeper does not handle"},
	{2, "network", "dummy-devices", no, no, no, no, "a device type seedkeeper does not handle"},
	{2, "network", "virtual-ethernets", no, no, no, no, "a device type seedkeeper does not handle"},
	{2, "network", "nm-devices", no, no, no, no, "a device type seedkeeper does not handle"},
	{2, "network", "openvswitch", no, no, no, no, "Open vSwitch is not handled"},

	// v2, every device type.
	{2, "link", "dhcp4", ok, ok, ok, na, ""},
	{2, "link", "dhcp6", ok, ok, ok, na, ""},
	{2, "link", "accept-ra", ok, ok, ok, na, ""},
	{2, "link", "addresses", ok, ok, ok, ok, ""},
	{2, "link", "gateway4", ok, ok, ok, ok, ""},
	{2, "link", "gateway6", ok, ok, ok, ok, ""},
	{2, "link", "routes", ok, ok, ok, ok, ""},
	{2, "link", "routing-policy", ok, ok, ok, ok, ""},
	{2, "link", "nameservers", ok, ok, ok, na, ""},
	{2, "link", "mtu", ok, ok, ok, ok, ""},
	// The MAC a bond, bridge or VLAN is made with; an ethernet's below.
	{2, "link", "macaddress", ok, no, no, ok, ""},
	{2, "link", "optional", ok, na, ok, na, ""},
	{2, "link", "dhcp4-overrides", ok, ok, ok, na, ""},
	{2, "link", "dhcp6-overrides", ok, ok, ok, na, ""},
	{2, "link", "dhcp-identifier", ok, ok, no, na, ""},
	{2, "link", "renderer", no, no, no, no, "seedkeeper renders for the stack the image runs"},
	{2, "link", "critical", no, no, no, no, "the stack's default for a lost lease is kept"},
	{2, "link", "link-local", no, no, no, no, "the stack's default link-local addressing is kept"},
	{2, "link", "ignore-carrier", no, no, no, no, "the stack's default carrier handling is kept"},
	{2, "link", "ipv6-privacy", no, no, no, no, "privacy addresses are left at the stack's default"},
	{2, "link", "ipv6-mtu", no, no, no, no, "the IPv6 MTU is left at the kernel's default"},
	{2, "link", "ipv6-address-generation", no, no, no, no, "address generation is left at the stack's default"},
	{2, "link", "ipv6-address-token", no, no, no, no, "address generation is left at the stack's default"},
	{2, "link", "optional-addresses", no, no, no, no, "the stack waits as it does by default"},
	{2, "link", "activation-mode", no, no, no, no, "every link seedkeeper owns is brought up"},
	{2, "link", "neigh-suppress", no, no, no, no, "bridge port options other than cost and priority are not handled"},
	{2, "link", "openvswitch", no, no, no, no, "Open vSwitch is not handled"},

	// v2 ethernets.
	{2, "ethernets", "match", ok, ok, ok, ok, ""},
	// Live, a NIC keeps its MAC until its stack sets the new one.
	{2, "ethernets", "macaddress", ok, ok, ok, no, ""},
	{2, "ethernets", "set-name", ok, ok, ok, ok, ""},
	{2, "ethernets", "wakeonlan", no, no, no, no, "wake-on-LAN is left as the NIC has it"},
	{2, "ethernets", "emit-lldp", no, no, no, no, "LLDP is left at the stack's default"},
	{2, "ethernets", "receive-checksum-offload", no, no, no, no, "offloads are left as the driver sets them"},
	{2, "ethernets", "transmit-checksum-offload", no, no, no, no, "offloads are left as the driver sets them"},
	{2, "ethernets", "tcp-segmentation-offload", no, no, no, no, "offloads are left as the driver sets them"},
	{2, "ethernets", "tcp6-segmentation-offload", no, no, no, no, "offloads are left as the driver sets them"},
	{2, "ethernets", "generic-segmentation-offload", no, no, no, no, "offloads are left as the driver sets them"},
	{2, "ethernets", "generic-receive-offload", no, no, no, no, "offloads are left as the driver sets them"},
	{2, "ethernets", "large-receive-offload", no, no, no, no, "offloads are left as the driver sets them"},
	{2, "ethernets", "infiniband-mode", no, no, no, no, "InfiniBand is not handled"},
	{2, "ethernets", "link", no, no, no, no, "SR-IOV is not handled"},
	{2, "ethernets", "virtual-function-count", no, no, no, no, "SR-IOV is not handled"},
	{2, "ethernets", "embedded-switch-mode", no, no, no, no, "SR-IOV is not handled"},
	{2, "ethernets", "delay-virtual-functions-rebind", no, no, no, no, "SR-IOV is not handled"},
	{2, "ethernets", "auth", no, no, no, no, "802.1X is not handled"},
	{2, "match", "macaddress", ok, ok, ok, ok, ""},
	{2, "match", "name", ok, ok, ok, ok, ""},
	{2, "match", "driver", ok, no, no, ok, ""},

	// v2 bonds, bridges, VLANs (their links are not rendered for
	// NetworkManager or ifupdown: the status names them).
	{2, "bonds", "interfaces", ok, no, no, ok, ""},
	{2, "bonds", "parameters", ok, no, no, ok, ""},
	{2, "bridges", "interfaces", ok, no, no, ok, ""},
	{2, "bridges", "parameters", ok, no, no, ok, ""},
	{2, "vlans", "id", ok, no, no, ok, ""},
	{2, "vlans", "link", ok, no, no, ok, ""},
	// Bridge port settings go on the member's own file.
	{2, "parameters", "path-cost", ok, no, no, ok, ""},
	{2, "parameters", "port-priority", ok, no, no, ok, ""},

	{2, "nameservers", "addresses", ok, ok, ok, na, ""},
	{2, "nameservers", "search", ok, ok, ok, na, ""},

	{2, "dhcp4-overrides", "use-dns", ok, ok, no, na, ""},
	{2, "dhcp4-overrides", "use-ntp", ok, no, no, na, ""},
	{2, "dhcp4-overrides", "use-hostname", ok, ok, no, na, ""},
	{2, "dhcp4-overrides", "use-domains", ok, no, no, na, ""},
	{2, "dhcp4-overrides", "use-routes", ok, ok, no, na, ""},
	{2, "dhcp4-overrides", "use-mtu", ok, no, no, na, ""},
	{2, "dhcp4-overrides", "send-hostname", ok, ok, no, na, ""},
	{2, "dhcp4-overrides", "hostname", ok, ok, ok, na, ""},
	{2, "dhcp4-overrides", "route-metric", ok, ok, ok, na, ""},
	{2, "dhcp6-overrides", "use-dns", ok, ok, no, na, ""},
	{2, "dhcp6-overrides", "use-ntp", ok, no, no, na, ""},
	{2, "dhcp6-overrides", "use-hostname", ok, ok, no, na, ""},
	{2, "dhcp6-overrides", "use-domains", ok, no, no, na, ""},
	{2, "dhcp6-overrides", "use-routes", no, ok, no, na, ""},
	{2, "dhcp6-overrides", "use-mtu", no, no, no, na, ""},
	{2, "dhcp6-overrides", "send-hostname", no, ok, no, na, ""},
	{2, "dhcp6-overrides", "hostname", no, ok, no, na, ""},
	{2, "dhcp6-overrides", "route-metric", ok, ok, no, na, ""},

	{2, "addresses", "lifetime", no, no, no, no, "an address keeps the stack's default lifetime"},
	{2, "addresses", "label", no, no, no, no, "address labels are not set"},

	{2, "routes", "to", ok, ok, ok, ok, ""},
	{2, "routes", "via", ok, ok, ok, ok, ""},
	{2, "routes", "metric", ok, ok, ok, ok, ""},
	{2, "routes", "table", ok, ok, ok, ok, ""},
	{2, "routes", "on-link", ok, ok, ok, ok, ""},
	{2, "routes", "from", no, no, no, no, "the route's preferred source is left to the kernel"},
	{2, "routes", "scope", no, no, no, no, "the scope follows from the gateway"},
	{2, "routes", "mtu", no, no, no, no, "the route takes the link's MTU"},
	{2, "routes", "congestion-window", no, no, no, no, "TCP window settings are left at the kernel's default"},
	{2, "routes", "advertised-receive-window", no, no, no, no, "TCP window settings are left at the kernel's default"},
	// type: a unicast route is the only kind; another leaves the route
	// out, with a note.
	{2, "routes", "type", ok, ok, ok, ok, ""},

	{2, "routing-policy", "from", ok, ok, ok, ok, ""},
	{2, "routing-policy", "to", ok, ok, ok, ok, ""},
	{2, "routing-policy", "table", ok, ok, ok, ok, ""},
	{2, "routing-policy", "priority", ok, ok, ok, ok, ""},
	{2, "routing-policy", "mark", ok, ok, ok, ok, ""},
	{2, "routing-policy", "type-of-service", ok, ok, ok, ok, ""},

	// cloud-init v1.
	{1, "config", "type", ok, ok, ok, ok, ""},
	{1, "config", "name", ok, ok, ok, ok, ""},
	{1, "config", "mac_address", ok, ok, ok, ok, ""},
	{1, "config", "mtu", ok, ok, ok, ok, ""},
	{1, "config", "subnets", ok, ok, ok, ok, ""},
	{1, "config", "accept-ra", ok, ok, ok, na, ""},
	{1, "config", "keep_configuration", no, no, no, no, "the stack's default is kept"},
	{1, "config", "wakeonlan", no, no, no, no, "wake-on-LAN is left as the NIC has it"},
	{1, "bond", "bond_interfaces", ok, no, no, ok, ""},
	{1, "bond", "params", ok, no, no, ok, ""},
	{1, "bridge", "bridge_interfaces", ok, no, no, ok, ""},
	{1, "bridge", "params", ok, no, no, ok, ""},
	{1, "vlan", "vlan_id", ok, no, no, ok, ""},
	{1, "vlan", "vlan_link", ok, no, no, ok, ""},
	{1, "nameserver", "type", ok, ok, ok, na, ""},
	{1, "nameserver", "address", ok, ok, ok, na, ""},
	{1, "nameserver", "search", ok, ok, ok, na, ""},
	{1, "nameserver", "interface", ok, ok, ok, na, ""},
	{1, "route", "type", ok, ok, ok, ok, ""},
	{1, "route", "destination", ok, ok, ok, ok, ""},
	{1, "route", "network", ok, ok, ok, ok, ""},
	{1, "route", "netmask", ok, ok, ok, ok, ""},
	{1, "route", "prefix", ok, ok, ok, ok, ""},
	{1, "route", "gateway", ok, ok, ok, ok, ""},
	{1, "route", "metric", ok, ok, ok, ok, ""},
	{1, "subnets", "type", ok, ok, ok, ok, ""},
	{1, "subnets", "address", ok, ok, ok, ok, ""},
	{1, "subnets", "netmask", ok, ok, ok, ok, ""},
	{1, "subnets", "prefix", ok, ok, ok, ok, ""},
	{1, "subnets", "gateway", ok, ok, ok, ok, ""},
	{1, "subnets", "metric", ok, ok, ok, ok, ""},
	{1, "subnets", "dns_nameservers", ok, ok, ok, na, ""},
	{1, "subnets", "dns_search", ok, ok, ok, na, ""},
	{1, "subnets", "routes", ok, ok, ok, ok, ""},
	// control: seedkeeper brings up every link it owns.
	{1, "subnets", "control", no, no, no, no, "every link seedkeeper owns is brought up"},
	// broadcast: the kernel derives it from the prefix.
	{1, "subnets", "broadcast", ok, ok, ok, ok, ""},
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
// ("live"), does with the key.
func (k Key) In(name string) Support {
	switch name {
	case "networkd":
		return k.Networkd
	case "networkmanager":
		return k.NetworkManager
	case "ifupdown":
		return k.Ifupdown
	case "live":
		return k.Live
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
