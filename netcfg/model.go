package netcfg

import (
	"net/netip"
	"strconv"
	"strings"
)

// Kind is the type of a configured link.
type Kind string

// The kinds of link a configuration can describe.
const (
	Physical Kind = "physical"
	Bond     Kind = "bond"
	VLAN     Kind = "vlan"
	Bridge   Kind = "bridge"
)

// Config is one network configuration, whatever format it came from.
type Config struct {
	// Interfaces in the order the source listed them.
	Interfaces []Interface
	// Routes that belong to no interface (v1 "route" entries).
	Routes []Route
	// DNS that belongs to no interface (v1 "nameserver", sdc:resolvers).
	DNS DNS
	// Notes name what the document said that was left out, smallest part
	// first (a route, an address, a field, a link), each with the path of
	// the field and why, never its text; the rest of the document stands
	// as it is. Nil when nothing was left out.
	Notes []string
}

// Interface is one link the configuration describes.
type Interface struct {
	// ID is the key the source used for the entry (v2 map key, v1 name).
	ID   string
	Kind Kind
	// Name is the kernel name the link should have (v1 name, v2 set-name),
	// or "" when the configuration does not ask for one.
	Name string
	// MAC is the lower-case colon-separated hardware address that selects
	// the link, or "" when the source matches by name or driver only.
	MAC string
	// MatchName is a name or shell glob (v2 match.name).
	MatchName string
	// MatchDriver is a kernel driver name (v2 match.driver).
	MatchDriver string
	MTU         int

	// Addresses are static addresses with their prefix length.
	Addresses []netip.Prefix
	DHCP4     bool
	DHCP6     bool
	// SLAAC asks for IPv6 stateless autoconfiguration (router advertisements).
	SLAAC bool
	// AcceptRA is an explicit accept-ra setting (v1 and v2 "accept-ra"), or
	// nil when the configuration says nothing.
	AcceptRA *bool
	// DHCPMetric is the metric of routes learned by DHCPv4 (v1 "metric" on a
	// dhcp subnet, v2 dhcp4-overrides.route-metric); 0 means the default.
	DHCPMetric int
	// DHCP4Overrides and DHCP6Overrides are the v2 dhcp4-overrides and
	// dhcp6-overrides other than DHCPv4's route metric (DHCPMetric).
	DHCP4Overrides DHCPOverrides
	DHCP6Overrides DHCPOverrides
	// DHCPIdentifier is v2 dhcp-identifier: "mac" (the client ID is the
	// link's MAC) or "" (the stack's default, a DUID).
	DHCPIdentifier string
	// Optional is v2 optional: the boot does not wait for the link to be
	// online.
	Optional bool
	// SetMAC is the MAC a physical link is given (v2 macaddress on an
	// ethernet, beside match); "" leaves its own. A bond, bridge or VLAN
	// keeps the MAC it is given in MAC.
	SetMAC string
	// RoutingPolicy are the link's policy routing rules (v2
	// routing-policy).
	RoutingPolicy []Rule

	// Routes include default routes (To is 0.0.0.0/0 or ::/0) made from
	// gateways.
	Routes []Route
	DNS    DNS

	// Links are the member IDs of a bond or bridge.
	Links []string
	// VLANID and VLANLink describe a VLAN on top of another entry's ID.
	VLANID   int
	VLANLink string
	// Params are bond or bridge parameters, keyed by their v2 names. Lists
	// (arp-ip-target) are space-separated; per-port maps (path-cost,
	// port-priority) are "port=value" pairs, space-separated.
	Params map[string]string
}

// DHCPOverrides are the settings of one DHCP client (v2
// dhcp4-overrides, dhcp6-overrides). A nil flag is the stack's default
// (true for every one of them).
type DHCPOverrides struct {
	UseDNS, UseNTP, UseHostname, UseDomains, UseRoutes, UseMTU, SendHostname *bool
	// RouteDomains, with UseDomains true, says the lease's domains route
	// DNS queries only and are not searched (netplan's use-domains:
	// route, networkd's UseDomains=route).
	RouteDomains bool
	// Hostname is the name sent instead of the machine's, "" for that.
	Hostname string
	// RouteMetric is the metric of the routes DHCPv6 learns; 0 means the
	// default. DHCPv4's is Interface.DHCPMetric (which v1 sets too), and
	// this is 0 in DHCP4Overrides.
	RouteMetric int
}

// IsZero reports whether every setting is the default.
func (o DHCPOverrides) IsZero() bool { return o == DHCPOverrides{} }

// Rule is one policy routing rule (v2 routing-policy). A zero prefix,
// number or mark is not matched on.
type Rule struct {
	From, To netip.Prefix
	Table    int
	Priority int
	Mark     int
	TOS      int
}

// String describes the rule in ip-rule(8)'s words, selectors first and
// the table last, as written (0 stays 0).
func (r Rule) String() string {
	var f []string
	if r.Priority != 0 {
		f = append(f, "priority", strconv.Itoa(r.Priority))
	}
	if r.From.IsValid() {
		f = append(f, "from", r.From.String())
	}
	if r.To.IsValid() {
		f = append(f, "to", r.To.String())
	}
	if r.Mark != 0 {
		f = append(f, "fwmark", strconv.Itoa(r.Mark))
	}
	if r.TOS != 0 {
		f = append(f, "tos", strconv.Itoa(r.TOS))
	}
	return strings.Join(append(f, "table", strconv.Itoa(r.Table)), " ")
}

// Route is one route. A zero Via means an on-link route.
type Route struct {
	To     netip.Prefix
	Via    netip.Addr
	Metric int
	Table  int
	// OnLink says the gateway is reachable on the link though no address
	// of it holds the gateway (v2 on-link). Config.Plan also makes a
	// gateway outside every static address on-link without it, for the
	// live apply and every renderer.
	OnLink bool
}

// DNS is a list of resolvers and search domains.
type DNS struct {
	Nameservers []netip.Addr
	Search      []string
}
