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

// nmKeyfiles renders the links NetworkManager configures (physicalPlan's
// links: the plain NICs among the owned links) as NetworkManager keyfiles
// for nmConnectionDir: file name → content. The files must be written
// 0600 (NetworkManager ignores keyfiles others can read).
//
//   - One profile per link, "seedkeeper-<id>" (the ID hashed when it is
//     not a plain file name), matched by MAC address (by
//     interface name where the configuration has no MAC), with a fixed
//     UUID made from the ID so the same configuration gives the same bytes.
//   - Static addresses and DHCP as NetworkManager's ipv4/ipv6 methods;
//     gateways and routes as routeN; DNS as dns=/dns-search= on the links
//     networkdFiles would put it on.
//   - A profile's autoconnect-priority is high, so NetworkManager picks
//     it over the "Wired connection N" it would otherwise make.
//
// Bonds, bridges and VLANs, and the links under them, are not among the
// links: physicalPlan returns them in skipped for the caller to report. A
// value NetworkManager could not read back (a line break or other control
// character, which would start a new key) is an error naming the
// interface and field.
func nmKeyfiles(links []*LinkPlan) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, lp := range links {
		name := fileBase(lp.ID) + ".nmconnection"
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("render NetworkManager: two links map to file %s", name)
		}
		b, err := renderKeyfile(lp, nil)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// physicalPlan is the plan (Config.Plan) of the owned links, made once
// for a render by a stack that renders plain NICs only (NetworkManager,
// ifupdown): plans is every owned link's, and links are those the stack
// writes, with the global DNS placed among them; skipped are the IDs of
// the owned links of other kinds, and of the members of an owned bond or
// bridge or the parents of an owned VLAN. A NIC whose bond is not owned
// is a plain link here. A global route the plan puts on a link it skips
// is not written: the stack that configures that link has it. Every file
// of the render is a view of this one plan.
func physicalPlan(c *Config, owned func(*Interface) bool) (plans []LinkPlan, links []*LinkPlan, skipped []string) {
	plans, _ = c.Plan(owned)
	for i := range plans {
		lp := &plans[i]
		if lp.Kind != Physical || lp.Master != nil || len(lp.VLANs) > 0 {
			skipped = append(skipped, lp.ID)
			continue
		}
		links = append(links, lp)
	}
	placeDNS(links, c.DNS)
	return plans, links, skipped
}

// interfacesOf are the interfaces of links.
func interfacesOf(links []*LinkPlan) []*Interface {
	out := make([]*Interface, len(links))
	for i, lp := range links {
		out[i] = lp.Interface
	}
	return out
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

// renderKeyfile renders one profile of a link as the plan has it;
// matchDrivers, when there are any, are the only drivers of a NIC it may
// go on ([match] driver=).
func renderKeyfile(lp *LinkPlan, matchDrivers []string) ([]byte, error) {
	ifc := lp.Interface
	w := &keyfile{who: "render NetworkManager: interface " + strconv.Quote(ifc.ID)}
	w.WriteString(Header + "\n")
	if err := nmConnection(w, ifc); err != nil {
		return nil, err
	}
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
	for _, fam := range []int{4, 6} {
		nmFamily(w, lp, fam)
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

// nmConnection writes the [connection] section: the profile's name and
// UUID, and the interface name a NIC without a MAC is matched by.
func nmConnection(w *keyfile, ifc *Interface) error {
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
		return fmt.Errorf("%s: matched by glob or driver only, which a keyfile cannot say", w.who)
	}
	w.kv("autoconnect", "true")
	w.kv("autoconnect-priority", "100")
	return nil
}

// ofFamily are the addresses of the family (4 or 6) among as.
func ofFamily(as []netip.Prefix, fam int) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range as {
		if a.Addr().Is4() == (fam == 4) {
			out = append(out, a)
		}
	}
	return out
}

// ruleOfFamily reports whether a rule is one of the family (4 or 6).
func ruleOfFamily(r Rule, fam int) bool {
	is := func(p netip.Prefix) bool { return !p.IsValid() || p.Addr().Is4() == (fam == 4) }
	return is(r.From) && is(r.To)
}

// nmMethod is NetworkManager's method of the family (4 or 6) for the
// link: DHCP, SLAAC ("auto"), static addresses ("manual"), or none. A
// link with IPv6 routes or rules but no other IPv6 configuration is
// "link-local": with "ignore" NetworkManager leaves out its routes,
// which the live apply adds.
func nmMethod(lp *LinkPlan, fam int, addrs []netip.Prefix) string {
	ifc := lp.Interface
	switch {
	case fam == 4 && ifc.DHCP4:
		return "auto"
	case fam == 6 && ifc.DHCP6:
		if ifc.SLAAC || ifc.AcceptRA == nil || *ifc.AcceptRA {
			return "auto" // RA first, then DHCPv6 as it says
		}
		return "dhcp"
	case fam == 6 && ifc.SLAAC:
		return "auto"
	case len(addrs) > 0:
		return "manual"
	case fam == 4:
		return "disabled"
	case slices.ContainsFunc(lp.Routes, func(r Route) bool { return r.To.Addr().Is6() }),
		slices.ContainsFunc(lp.Rules, func(r Rule) bool { return ruleOfFamily(r, 6) }):
		return "link-local"
	}
	return "ignore"
}

// nmFamily writes the [ipv4] or [ipv6] section (fam 4 or 6).
func nmFamily(w *keyfile, lp *LinkPlan, fam int) {
	ifc := lp.Interface
	addrs := ofFamily(lp.Addresses, fam)
	method := nmMethod(lp, fam, addrs)
	w.section(map[int]string{4: "ipv4", 6: "ipv6"}[fam])
	w.kv("method", method)
	for i, a := range addrs {
		w.kv("address"+strconv.Itoa(i+1), a.String())
	}
	if method != "disabled" {
		nmRoutes(w, lp, fam)
	}
	var ns []string
	for _, a := range lp.DNS.Nameservers {
		if a.Is4() == (fam == 4) {
			ns = append(ns, a.String())
		}
	}
	if method != "disabled" && method != "ignore" {
		w.list("dns", ns)
		if fam == 4 || len(ns) > 0 {
			w.list("dns-search", lp.DNS.Search)
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
	n := 0
	for _, r := range lp.Rules {
		if ruleOfFamily(r, fam) && method != "disabled" {
			n++
			w.kv("routing-rule"+strconv.Itoa(n), nmRule(r))
		}
	}
	if fam == 6 && method != "ignore" {
		w.kv("addr-gen-mode", "eui64")
	}
}

// nmUnwritten says, per link of physicalPlan's, what the plan has a link
// carry that its profile cannot: IPv4 routes and rules on a link without
// IPv4 addresses or DHCP (NetworkManager configures no IPv4 with
// method=disabled, and method=manual needs an address).
func nmUnwritten(links []*LinkPlan) []string {
	var out []string
	for _, lp := range links {
		if nmMethod(lp, 4, ofFamily(lp.Addresses, 4)) != "disabled" {
			continue
		}
		if slices.ContainsFunc(lp.Routes, func(r Route) bool { return r.To.Addr().Is4() }) ||
			slices.ContainsFunc(lp.Rules, func(r Rule) bool { return ruleOfFamily(r, 4) }) {
			out = append(out, lp.ID+": not applied by networkmanager: IPv4 routes and rules on a link without IPv4 addresses or DHCP")
		}
	}
	return out
}

// nmRoutes writes the routeN keys of the family's routes (fam 4 or 6).
func nmRoutes(w *keyfile, lp *LinkPlan, fam int) {
	n := 0
	for _, r := range lp.Routes {
		if r.To.Addr().Is4() != (fam == 4) {
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
		if r.OnLink {
			opts = append(opts, "onlink=true")
		}
		if r.Table != 0 {
			opts = append(opts, "table="+strconv.Itoa(r.Table))
		}
		if len(opts) > 0 {
			w.kv("route"+strconv.Itoa(n)+"_options", strings.Join(opts, ","))
		}
	}
}
