package netcfg

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ifupdownFile is the name of the stanza file renderIfupdown's output goes
// into, in the directory the image's /etc/network/interfaces sources
// (Detection.Dir).
const ifupdownFile = "50-seedkeeper"

// renderIfupdown renders the physical interfaces for which owned returns
// true (all when owned is nil) as ifupdown stanzas (interfaces(5)), one
// file's content. Interfaces are named by LinkName: seedkeeper renames the
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
// Bonds, bridges and VLANs are returned in skipped, and so is a link whose
// name is not a ValidLinkName or is another's (a model built by hand; the
// parsers and the plan never make one).
func renderIfupdown(c *Config, owned func(*Interface) bool) (file []byte, skipped []string, err error) {
	links, dnsLinks, extraRoutes, skipped := physicalPlan(c, owned)
	var b strings.Builder
	b.WriteString(Header + "\n")
	seen := map[string]bool{}
	for _, ifc := range links {
		name := ifc.LinkName()
		who := "render ifupdown: interface " + strconv.Quote(ifc.ID)
		if !ValidLinkName(name) || seen[name] {
			skipped = append(skipped, ifc.ID)
			continue
		}
		seen[name] = true
		var extraDNS DNS
		if slices.Contains(dnsLinks, ifc) {
			extraDNS = c.DNS
		}
		if err := writeStanzas(&b, ifc, name, extraDNS, extraRoutes[ifc], who); err != nil {
			return nil, nil, err
		}
	}
	return []byte(b.String()), skipped, nil
}

func writeStanzas(b *strings.Builder, ifc *Interface, name string, extraDNS DNS, extraRoutes []Route, who string) error {
	dns := DNS{
		Nameservers: dedupe(slices.Concat(ifc.DNS.Nameservers, extraDNS.Nameservers)),
		Search:      dedupe(slices.Concat(ifc.DNS.Search, extraDNS.Search)),
	}
	for _, d := range dns.Search {
		if err := checkDomain(d); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
	}
	// An optional link is brought up when it appears, and the boot does
	// not wait for it (auto would make networking.service wait).
	b.WriteString("\nallow-hotplug " + name + "\n")
	if !ifc.Optional {
		b.WriteString("auto " + name + "\n")
	}
	routes := slices.Concat(ifc.Routes, extraRoutes)
	dnsDone := false
	for _, fam := range []int{4, 6} {
		is := func(a netip.Addr) bool { return a.Is4() == (fam == 4) }
		var addrs []netip.Prefix
		for _, a := range ifc.Addresses {
			if is(a.Addr()) {
				addrs = append(addrs, a)
			}
		}
		inet := map[int]string{4: "inet", 6: "inet6"}[fam]
		// Static addresses are "manual" with "ip ... replace" commands:
		// seedkeeper has usually applied them already, and ifupdown's
		// "static" method fails the whole interface on "File exists".
		var method string
		switch {
		case fam == 4 && ifc.DHCP4:
			method = "dhcp"
		case fam == 6 && ifc.DHCP6 && !ifc.SLAAC:
			method = "dhcp"
		case fam == 6 && (ifc.SLAAC || ifc.DHCP6):
			method = "auto"
		case len(addrs) > 0 || fam == 4:
			// Also a link with no IPv4 at all is brought up.
			method = "manual"
		default:
			continue
		}
		b.WriteString("iface " + name + " " + inet + " " + method + "\n")
		if fam == 6 && method == "auto" && ifc.DHCP6 {
			b.WriteString("    dhcp 1\n")
		}
		if fam == 4 {
			if ifc.MTU != 0 {
				b.WriteString("    mtu " + strconv.Itoa(ifc.MTU) + "\n")
			}
			if ifc.SetMAC != "" {
				b.WriteString("    hwaddress ether " + ifc.SetMAC + "\n")
			}
			if method == "dhcp" && ifc.DHCP4Overrides.Hostname != "" {
				b.WriteString("    hostname " + ifc.DHCP4Overrides.Hostname + "\n")
			}
		}
		if fam == 6 && method != "manual" {
			// Only an explicit accept-ra: without one, ifupdown's
			// methods take router advertisements as they need them.
			if ifc.AcceptRA != nil {
				b.WriteString("    accept_ra " + map[bool]string{true: "2", false: "0"}[*ifc.AcceptRA] + "\n")
			}
		}
		f := strconv.Itoa(fam)
		if method == "manual" {
			b.WriteString("    up ip link set dev " + name + " up\n")
		}
		for _, a := range addrs {
			b.WriteString("    up ip -" + f + " addr replace " + a.String() + " dev " + name + "\n")
		}
		for _, r := range routes {
			if !is(r.To.Addr()) {
				continue
			}
			cmd := "ip -" + f + " route replace " + r.To.String()
			if r.Via.IsValid() {
				cmd += " via " + r.Via.String()
				if r.OnLink || !containsAddr(addrs, r.Via) && !r.Via.IsLinkLocalUnicast() && !dynamicFor(ifc, r.Via) {
					cmd += " onlink"
				}
			}
			cmd += " dev " + name
			if r.Metric != 0 {
				cmd += " metric " + strconv.Itoa(r.Metric)
			}
			if r.Table != 0 {
				cmd += " table " + strconv.Itoa(r.Table)
			}
			// After the DHCP client has set its own routes.
			if method == "dhcp" || method == "auto" {
				b.WriteString("    post-up " + cmd + "\n")
			} else {
				b.WriteString("    up " + cmd + "\n")
			}
		}
		for _, r := range ifc.RoutingPolicy {
			if (r.From.IsValid() && !is(r.From.Addr())) || (r.To.IsValid() && !is(r.To.Addr())) {
				continue
			}
			// add fails on a rule seedkeeper has applied already.
			b.WriteString("    up ip -" + f + " rule add " + ipRule(r) + " || true\n")
		}
		for _, a := range addrs {
			b.WriteString("    down ip -" + f + " addr del " + a.String() + " dev " + name + " || true\n")
		}
		for _, r := range ifc.RoutingPolicy {
			if (r.From.IsValid() && !is(r.From.Addr())) || (r.To.IsValid() && !is(r.To.Addr())) {
				continue
			}
			b.WriteString("    down ip -" + f + " rule del " + ipRule(r) + " || true\n")
		}
		if fam == 4 && ifc.DHCP4 && ifc.DHCPMetric != 0 {
			b.WriteString("    metric " + strconv.Itoa(ifc.DHCPMetric) + "\n")
		}
		if !dnsDone && len(dns.Nameservers) > 0 {
			var ns []string
			for _, a := range dns.Nameservers {
				ns = append(ns, a.String())
			}
			b.WriteString("    dns-nameservers " + strings.Join(ns, " ") + "\n")
			if len(dns.Search) > 0 {
				b.WriteString("    dns-search " + strings.Join(dns.Search, " ") + "\n")
			}
			dnsDone = true
		}
	}
	return nil
}

// ipRule is a routing rule in ip-rule(8)'s words (those of
// NetworkManager's routing-rule, which has the same grammar).
func ipRule(r Rule) string { return nmRule(r) }
