package netcfg

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ifupdownFile is the name of the stanza file ifupdownStanzas's output goes
// into, in the directory the image's /etc/network/interfaces sources
// (Detection.Dir).
const ifupdownFile = "50-seedkeeper"

// ifupdownStanzas renders the links ifupdown configures (physicalPlan's
// links: the plain NICs among the owned links) as ifupdown stanzas
// (interfaces(5)), one file's content. Interfaces are named by LinkName: seedkeeper renames the
// links it owns to the configuration's names before ifupdown runs.
//
//   - "allow-hotplug NAME" and "auto NAME", then "iface NAME inet dhcp",
//     "inet6 auto" (SLAAC) or "inet6 dhcp"; static addresses and routes
//     as "manual" with "ip addr replace" and "ip route replace" lines,
//     which succeed when seedkeeper has applied them already (ifupdown's
//     "static" method fails the interface on "File exists").
//   - DNS as dns-nameservers/dns-search (read by resolvconf when the
//     image has it; seedkeeper writes /etc/resolv.conf otherwise).
//
// ifupdown runs the up, post-up and down lines with sh -c, so every word
// of them is made of characters sh reads as themselves: link names pass
// ValidLinkName, addresses are printed by net/netip, numbers by strconv;
// the one piece of shell syntax is the "|| true" seedkeeper writes.
//
// Bonds, bridges and VLANs are in physicalPlan's skipped, which is
// returned with a link added whose name is not a ValidLinkName or is
// another's (a model built by hand; the parsers and the plan never make
// one).
func ifupdownStanzas(links []*LinkPlan, skipped []string) (file []byte, _ []string, err error) {
	var b strings.Builder
	b.WriteString(Header + "\n")
	seen := map[string]bool{}
	for _, lp := range links {
		name := lp.LinkName()
		who := "render ifupdown: interface " + strconv.Quote(lp.ID)
		if !ValidLinkName(name) || seen[name] {
			skipped = append(skipped, lp.ID)
			continue
		}
		seen[name] = true
		if err := writeStanzas(&b, lp, name, who); err != nil {
			return nil, nil, err
		}
	}
	return []byte(b.String()), skipped, nil
}

// writeStanzas writes the stanzas of one link as the plan has it: the
// lines that bring it up, then one iface stanza per family it has.
func writeStanzas(b *strings.Builder, lp *LinkPlan, name string, who string) error {
	for _, d := range lp.DNS.Search {
		if err := checkDomain(d); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
	}
	// An optional link is brought up when it appears, and the boot does
	// not wait for it (auto would make networking.service wait).
	b.WriteString("\nallow-hotplug " + name + "\n")
	if !lp.Optional {
		b.WriteString("auto " + name + "\n")
	}
	dnsDone := false
	for _, fam := range []int{4, 6} {
		st := stanza{b: b, lp: lp, name: name, fam: fam, f: strconv.Itoa(fam), addrs: ofFamily(lp.Addresses, fam)}
		// Static addresses are "manual" with "ip ... replace" commands:
		// seedkeeper has usually applied them already, and ifupdown's
		// "static" method fails the whole interface on "File exists".
		st.method = ifupdownMethod(lp, fam, st.addrs)
		if st.method == "" {
			continue
		}
		st.write()
		if !dnsDone && len(lp.DNS.Nameservers) > 0 {
			var ns []string
			for _, a := range lp.DNS.Nameservers {
				ns = append(ns, a.String())
			}
			b.WriteString("    dns-nameservers " + strings.Join(ns, " ") + "\n")
			if len(lp.DNS.Search) > 0 {
				b.WriteString("    dns-search " + strings.Join(lp.DNS.Search, " ") + "\n")
			}
			dnsDone = true
		}
	}
	return nil
}

// ifupdownMethod is the method of the family's stanza (fam 4 or 6), ""
// for none: DHCP, SLAAC ("auto"), or "manual" for static addresses; a
// link with no IPv4 at all is brought up by a manual inet stanza too,
// and a link with IPv6 routes or rules but no IPv6 addresses gets a
// manual inet6 stanza for them.
func ifupdownMethod(lp *LinkPlan, fam int, addrs []netip.Prefix) string {
	ifc := lp.Interface
	switch {
	case fam == 4 && ifc.DHCP4:
		return "dhcp"
	case fam == 6 && ifc.DHCP6 && !ifc.SLAAC:
		return "dhcp"
	case fam == 6 && (ifc.SLAAC || ifc.DHCP6):
		return "auto"
	case len(addrs) > 0 || fam == 4:
		return "manual"
	case slices.ContainsFunc(lp.Routes, func(r Route) bool { return r.To.Addr().Is6() }),
		slices.ContainsFunc(lp.Rules, func(r Rule) bool { return ruleOfFamily(r, 6) }):
		return "manual"
	}
	return ""
}

// stanza is one iface stanza being written: the link's plan, its name,
// the family (fam 4 or 6, f as text), the family's addresses and the
// stanza's method.
type stanza struct {
	b       *strings.Builder
	lp      *LinkPlan
	name, f string
	fam     int
	addrs   []netip.Prefix
	method  string
}

func (st *stanza) line(s string) { st.b.WriteString("    " + s + "\n") }

// write writes the stanza: its options, then the up, post-up and down
// commands of its addresses, routes and rules.
func (st *stanza) write() {
	ifc, name, f := st.lp.Interface, st.name, st.f
	inet := map[int]string{4: "inet", 6: "inet6"}[st.fam]
	st.b.WriteString("iface " + name + " " + inet + " " + st.method + "\n")
	st.options()
	if st.method == "manual" {
		st.line("up ip link set dev " + name + " up")
	}
	for _, a := range st.addrs {
		st.line("up ip -" + f + " addr replace " + a.String() + " dev " + name)
	}
	st.routes()
	for _, r := range st.lp.Rules {
		if ruleOfFamily(r, st.fam) {
			// add fails on a rule seedkeeper has applied already.
			st.line("up ip -" + f + " rule add " + ipRule(r) + " || true")
		}
	}
	for _, a := range st.addrs {
		st.line("down ip -" + f + " addr del " + a.String() + " dev " + name + " || true")
	}
	for _, r := range st.lp.Rules {
		if ruleOfFamily(r, st.fam) {
			st.line("down ip -" + f + " rule del " + ipRule(r) + " || true")
		}
	}
	if st.fam == 4 && ifc.DHCP4 && ifc.DHCPMetric != 0 {
		st.line("metric " + strconv.Itoa(ifc.DHCPMetric))
	}
}

// options writes the stanza's own options: DHCPv6 beside SLAAC; the
// MTU, new MAC and DHCP host name in the inet stanza; an explicit
// accept-ra in the inet6 one.
func (st *stanza) options() {
	ifc := st.lp.Interface
	if st.fam == 6 && st.method == "auto" && ifc.DHCP6 {
		st.line("dhcp 1")
	}
	if st.fam == 4 {
		if ifc.MTU != 0 {
			st.line("mtu " + strconv.Itoa(ifc.MTU))
		}
		if ifc.SetMAC != "" {
			st.line("hwaddress ether " + ifc.SetMAC)
		}
		if st.method == "dhcp" && ifc.DHCP4Overrides.Hostname != "" {
			st.line("hostname " + ifc.DHCP4Overrides.Hostname)
		}
	}
	// Only an explicit accept-ra: without one, ifupdown's methods take
	// router advertisements as they need them.
	if st.fam == 6 && st.method != "manual" && ifc.AcceptRA != nil {
		st.line("accept_ra " + map[bool]string{true: "2", false: "0"}[*ifc.AcceptRA])
	}
}

// routes writes an "ip route replace" for each of the family's routes:
// at up, or after the DHCP client has set its own routes at post-up.
func (st *stanza) routes() {
	for _, r := range st.lp.Routes {
		if r.To.Addr().Is4() != (st.fam == 4) {
			continue
		}
		cmd := "ip -" + st.f + " route replace " + r.To.String()
		if r.Via.IsValid() {
			cmd += " via " + r.Via.String()
			if r.OnLink {
				cmd += " onlink"
			}
		}
		cmd += " dev " + st.name
		if r.Metric != 0 {
			cmd += " metric " + strconv.Itoa(r.Metric)
		}
		if r.Table != 0 {
			cmd += " table " + strconv.Itoa(r.Table)
		}
		if st.method == "dhcp" || st.method == "auto" {
			st.line("post-up " + cmd)
		} else {
			st.line("up " + cmd)
		}
	}
}

// ipRule is a routing rule in ip-rule(8)'s words (those of
// NetworkManager's routing-rule, which has the same grammar).
func ipRule(r Rule) string { return nmRule(r) }
