package netcfg

import (
	"crypto/sha1"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// nmConnectionDir is where NetworkManager reads volatile connection
// profiles (keyfiles) from; they vanish with /run at the next boot.
const nmConnectionDir = "/run/NetworkManager/system-connections"

// renderNetworkManager renders the physical interfaces for which owned
// returns true (all when owned is nil) as NetworkManager keyfiles for
// nmConnectionDir: file name → content. The files must be written 0600
// (NetworkManager ignores keyfiles others can read).
//
//   - One profile per link, "seedkeeper-<id>" (the ID hashed when it is
//     not a plain file name), matched by MAC address (by
//     interface name where the configuration has no MAC), with a fixed
//     UUID made from the ID so the same configuration gives the same bytes.
//   - Static addresses and DHCP as NetworkManager's ipv4/ipv6 methods;
//     gateways and routes as routeN; DNS as dns=/dns-search= on the links
//     renderNetworkd would put it on.
//   - A profile's autoconnect-priority is high, so NetworkManager picks
//     it over the "Wired connection N" it would otherwise make.
//
// Bonds, bridges and VLANs are not rendered: they are returned in skipped
// (by ID) for the caller to report. A value NetworkManager could not read
// back (a line break or other control character, which would start a new
// key) is an error naming the interface and field.
func renderNetworkManager(c *Config, owned func(*Interface) bool) (files map[string][]byte, skipped []string, err error) {
	links, dnsLinks, extraRoutes, skipped := physicalPlan(c, owned)
	files = map[string][]byte{}
	for _, ifc := range links {
		name := fileBase(ifc.ID) + ".nmconnection"
		if _, dup := files[name]; dup {
			return nil, nil, fmt.Errorf("render NetworkManager: two links map to file %s", name)
		}
		var extraDNS DNS
		if slices.Contains(dnsLinks, ifc) {
			extraDNS = c.DNS
		}
		b, err := renderKeyfile(ifc, extraDNS, extraRoutes[ifc], nil)
		if err != nil {
			return nil, nil, err
		}
		files[name] = b
	}
	return files, skipped, nil
}

// physicalPlan picks the owned physical links, the ones that carry the
// global DNS, and the link each global route goes on, as renderNetworkd
// does; it returns the IDs of the owned links of other kinds, and of the
// members of an owned bond or bridge or the parents of an owned VLAN, as
// skipped. A NIC whose bond is not owned is a plain link here.
func physicalPlan(c *Config, owned func(*Interface) bool) (links, dnsLinks []*Interface, extraRoutes map[*Interface][]Route, skipped []string) {
	v := newView(c, owned)
	var plain []*Interface
	for _, ifc := range v.links {
		if ifc.Kind != Physical || v.master(ifc) != nil || len(v.vlans(ifc)) > 0 {
			skipped = append(skipped, ifc.ID)
			continue
		}
		plain = append(plain, ifc)
	}
	v.links = plain
	for _, ifc := range plain {
		if hasDefaultRoute(ifc) || ifc.DHCP4 || ifc.DHCP6 || ifc.SLAAC {
			dnsLinks = append(dnsLinks, ifc)
		}
	}
	if len(dnsLinks) == 0 {
		for _, ifc := range plain {
			if ifc.HasL3() {
				dnsLinks = append(dnsLinks, ifc)
			}
		}
	}
	return plain, dnsLinks, v.routeHomes(), skipped
}

// keyfile writes a GKeyFile as NetworkManager reads it. Values are
// checked, not escaped: a value with a control character is refused.
type keyfile struct {
	strings.Builder
	err error
	who string
}

func (w *keyfile) section(name string) {
	if w.Len() > 0 {
		w.WriteString("\n")
	}
	w.WriteString("[" + name + "]\n")
}

func (w *keyfile) kv(k, v string) {
	if w.err != nil {
		return
	}
	if i := strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		w.err = fmt.Errorf("%s: %s: a control character at byte %d cannot be written to a keyfile", w.who, k, i)
		return
	}
	// GKeyFile strips leading spaces of a value and reads "\" as an
	// escape; list values also split on ";".
	if strings.HasPrefix(v, " ") || strings.Contains(v, `\`) {
		w.err = fmt.Errorf("%s: %s: a leading space or a backslash cannot be written to a keyfile", w.who, k)
		return
	}
	w.WriteString(k + "=" + v + "\n")
}

func (w *keyfile) list(k string, vs []string) {
	for _, v := range vs {
		if strings.Contains(v, ";") {
			w.err = fmt.Errorf("%s: %s: a ';' cannot be written in a keyfile list", w.who, k)
			return
		}
	}
	if len(vs) > 0 {
		w.kv(k, strings.Join(vs, ";")+";")
	}
}

// nmDHCP writes the DHCP client settings NetworkManager has in the ipv4
// or ipv6 section (the stack's notes name the others).
func nmDHCP(w *keyfile, o DHCPOverrides, metric int) {
	if metric != 0 {
		w.kv("route-metric", strconv.Itoa(metric))
	}
	if o.UseDNS != nil && !*o.UseDNS {
		w.kv("ignore-auto-dns", "true")
	}
	if o.UseRoutes != nil && !*o.UseRoutes {
		// As netplan renders it: no routes and no default route from
		// the lease.
		w.kv("ignore-auto-routes", "true")
		w.kv("never-default", "true")
	}
	if o.SendHostname != nil {
		w.kv("dhcp-send-hostname", strconv.FormatBool(*o.SendHostname))
	}
	if o.Hostname != "" {
		w.kv("dhcp-hostname", o.Hostname)
	}
}

// nmRule is a routing rule in NetworkManager's routing-rule syntax (and
// ip-rule(8)'s), a rule without a table naming main.
func nmRule(r Rule) string {
	if r.Table == 0 {
		r.Table = 254 // main
	}
	return r.String()
}

// nmUUID is a fixed (name-based, version 5 layout) UUID for a profile.
func nmUUID(id string) string {
	h := sha1.Sum([]byte("seedkeeper/nm/" + id))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// renderKeyfile renders one profile; matchDrivers, when there are any,
// are the only drivers of a NIC it may go on ([match] driver=).
func renderKeyfile(ifc *Interface, extraDNS DNS, extraRoutes []Route, matchDrivers []string) ([]byte, error) {
	w := &keyfile{who: "render NetworkManager: interface " + strconv.Quote(ifc.ID)}
	w.WriteString(Header + "\n")
	w.section("connection")
	w.kv("id", fileBase(ifc.ID))
	w.kv("uuid", nmUUID(ifc.ID))
	w.kv("type", "ethernet")
	switch {
	case ifc.MAC != "":
	case ifc.MatchName != "" && !strings.ContainsAny(ifc.MatchName, "*?["):
		w.kv("interface-name", ifc.MatchName)
	case ifc.MatchName == "" && ifc.MatchDriver == "":
		w.kv("interface-name", ifc.LinkName())
	default:
		return nil, fmt.Errorf("%s: matched by glob or driver only, which a keyfile cannot say", w.who)
	}
	w.kv("autoconnect", "true")
	w.kv("autoconnect-priority", "100")
	if len(matchDrivers) > 0 {
		w.section("match")
		w.list("driver", matchDrivers)
	}
	w.section("ethernet")
	if ifc.MAC != "" {
		w.kv("mac-address", strings.ToUpper(ifc.MAC))
	}
	if ifc.MTU != 0 {
		w.kv("mtu", strconv.Itoa(ifc.MTU))
	}
	if ifc.SetMAC != "" {
		w.kv("cloned-mac-address", strings.ToUpper(ifc.SetMAC))
	}

	dns := DNS{
		Nameservers: dedupe(slices.Concat(ifc.DNS.Nameservers, extraDNS.Nameservers)),
		Search:      dedupe(slices.Concat(ifc.DNS.Search, extraDNS.Search)),
	}
	routes := slices.Concat(ifc.Routes, extraRoutes)
	for _, fam := range []int{4, 6} {
		is := func(a netip.Addr) bool { return a.Is4() == (fam == 4) }
		var addrs []netip.Prefix
		for _, a := range ifc.Addresses {
			if is(a.Addr()) {
				addrs = append(addrs, a)
			}
		}
		var method string
		switch {
		case fam == 4 && ifc.DHCP4, fam == 6 && ifc.DHCP6:
			method = map[int]string{4: "auto", 6: "dhcp"}[fam]
			if fam == 6 && (ifc.SLAAC || ifc.AcceptRA == nil || *ifc.AcceptRA) {
				method = "auto" // RA first, then DHCPv6 as it says
			}
		case fam == 6 && ifc.SLAAC:
			method = "auto"
		case len(addrs) > 0:
			method = "manual"
		default:
			method = map[int]string{4: "disabled", 6: "ignore"}[fam]
		}
		w.section(map[int]string{4: "ipv4", 6: "ipv6"}[fam])
		w.kv("method", method)
		for i, a := range addrs {
			w.kv("address"+strconv.Itoa(i+1), a.String())
		}
		n := 0
		for _, r := range routes {
			if !is(r.To.Addr()) {
				continue
			}
			n++
			v := r.To.String()
			if r.Via.IsValid() {
				v += "," + r.Via.String()
			}
			if r.Metric != 0 {
				if !r.Via.IsValid() {
					v += "," + map[int]string{4: "0.0.0.0", 6: "::"}[fam]
				}
				v += "," + strconv.Itoa(r.Metric)
			}
			w.kv("route"+strconv.Itoa(n), v)
			var opts []string
			if r.OnLink || r.Via.IsValid() && !r.Via.IsLinkLocalUnicast() && !containsAddr(addrs, r.Via) && !dynamicFor(ifc, r.Via) {
				opts = append(opts, "onlink=true")
			}
			if r.Table != 0 {
				opts = append(opts, "table="+strconv.Itoa(r.Table))
			}
			if len(opts) > 0 {
				w.kv("route"+strconv.Itoa(n)+"_options", strings.Join(opts, ","))
			}
		}
		var ns []string
		for _, a := range dns.Nameservers {
			if is(a) {
				ns = append(ns, a.String())
			}
		}
		if method != "disabled" && method != "ignore" {
			w.list("dns", ns)
			if fam == 4 || len(ns) > 0 {
				w.list("dns-search", dns.Search)
			}
		}
		if fam == 4 && ifc.DHCP4 {
			nmDHCP(w, ifc.DHCP4Overrides, ifc.DHCPMetric)
			if ifc.DHCPIdentifier == "mac" {
				w.kv("dhcp-client-id", "mac")
			}
		}
		if fam == 6 && ifc.DHCP6 {
			nmDHCP(w, ifc.DHCP6Overrides, ifc.DHCP6Overrides.RouteMetric)
		}
		n = 0
		for _, r := range ifc.RoutingPolicy {
			if a := r.From; (a.IsValid() && !is(a.Addr())) || (r.To.IsValid() && !is(r.To.Addr())) {
				continue
			}
			n++
			w.kv("routing-rule"+strconv.Itoa(n), nmRule(r))
		}
		if fam == 6 && method != "ignore" {
			w.kv("addr-gen-mode", "eui64")
		}
	}
	// The host name from a lease is one setting of the profile
	// (NetworkManager 1.30 and later), for both families.
	off := func(b *bool) bool { return b != nil && !*b }
	if ifc.DHCP4 && off(ifc.DHCP4Overrides.UseHostname) || ifc.DHCP6 && off(ifc.DHCP6Overrides.UseHostname) {
		w.section("hostname")
		w.kv("from-dhcp", "false")
	}
	if w.err != nil {
		return nil, w.err
	}
	return []byte(w.String()), nil
}
