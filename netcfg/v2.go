package netcfg

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// v2Sections are the netplan maps we read, in the order their entries are
// added to the model (members before the links built on them).
var v2Sections = []struct {
	key  string
	kind Kind
}{
	{"ethernets", Physical},
	{"bonds", Bond},
	{"bridges", Bridge},
	{"vlans", VLAN},
}

// v2Unhandled are the netplan device types seedkeeper does not read:
// each entry of one is left out alone, and said.
var v2Unhandled = []string{"dummy-devices", "modems", "nm-devices", "tunnels", "virtual-ethernets", "vrfs", "wifis"}

func parseV2(top mapping, n *notes) (*Config, error) {
	c := &Config{}
	for _, key := range top.keys() {
		if !slices.Contains(v2Unhandled, key) {
			continue
		}
		f := top.get(key)
		m, err := f.mapping()
		if err != nil {
			n.drop(f.errorf("a device type seedkeeper does not handle"), "the section")
			continue
		}
		for _, id := range m.keys() {
			ef := m.get(id)
			if CheckLine(id) != nil {
				ef = field{path: m.path}
			}
			n.drop(ef.errorf("a device type seedkeeper does not handle"), "the link")
		}
	}
	rest := mapping{top.path, maps.Clone(top.m)}
	for _, key := range v2Unhandled {
		delete(rest.m, key)
	}
	rest.noteKeys(2, n, "network")
	idPath := map[string]string{}
	for _, sec := range v2Sections {
		f := top.get(sec.key)
		if !f.present() {
			continue
		}
		m, err := f.mapping()
		if err != nil {
			n.drop(err, "the section")
			continue
		}
		for _, id := range m.keys() {
			ef := m.get(id)
			if err := CheckLine(id); err != nil {
				n.drop(&FieldError{Path: m.path, Msg: fmt.Sprintf("an ID: %v", err)}, "the link")
				continue
			}
			if prev, dup := idPath[id]; dup {
				n.drop(ef.errorf("the ID is already defined by %s", prev), "the link")
				continue
			}
			ifc, err := v2Link(ef, id, sec.kind, n)
			if err != nil {
				n.drop(err, "the link")
				continue
			}
			idPath[id] = ef.path
			c.Interfaces = append(c.Interfaces, ifc)
		}
	}
	// What names other links: a link's name is its own, a member or a
	// VLAN link is defined or at least a link name. A link that breaks
	// either is left out.
	names := map[string]string{}
	kept := c.Interfaces[:0]
	for i := range c.Interfaces {
		ifc := c.Interfaces[i]
		if err := v2Refs(&ifc, idPath, names); err != nil {
			n.drop(err, "the link")
			continue
		}
		names[ifc.LinkName()] = idPath[ifc.ID]
		kept = append(kept, ifc)
	}
	c.Interfaces = kept
	c.dedupeDNS()
	c.Notes = n.result()
	return c, nil
}

// v2Refs checks the names an entry gives or uses: its link name is not
// another's, its members and VLAN link are defined IDs or link names.
func v2Refs(ifc *Interface, idPath, names map[string]string) error {
	if prev, dup := names[ifc.LinkName()]; dup {
		return &FieldError{Path: idPath[ifc.ID], Msg: "its link name is already used by " + prev}
	}
	for j, id := range ifc.Links {
		if _, ok := idPath[id]; !ok && !ValidLinkName(id) {
			return &FieldError{Path: fmt.Sprintf("%s.interfaces[%d]", idPath[ifc.ID], j), Msg: "neither a defined ID nor a link name"}
		}
	}
	if ifc.Kind == VLAN {
		if _, ok := idPath[ifc.VLANLink]; !ok && !ValidLinkName(ifc.VLANLink) {
			return &FieldError{Path: idPath[ifc.ID] + ".link", Msg: "neither a defined ID nor a link name"}
		}
	}
	return nil
}

// v2Link reads one entry. What names or selects the link (match,
// set-name, an ID that is its name, members, VLAN ID and link) is returned
// as an error, which leaves the link out; a bad setting, address or route
// is noted in n and left out alone.
func v2Link(ef field, id string, kind Kind, n *notes) (Interface, error) {
	ifc := Interface{ID: id, Kind: kind}
	if ef.v == nil {
		// "eth0: {}" written as "eth0:" decodes to null.
		ef.v = map[string]any{}
	}
	m, err := ef.mapping()
	if err != nil {
		return ifc, err
	}
	m.noteKeys(2, n, v2SectionOf(kind), "link")
	if kind == Physical {
		if err := v2Match(&ifc, m, n); err != nil {
			return ifc, err
		}
		if ifc.Name == "" && !ValidLinkName(id) {
			return ifc, ef.errorf("the ID is %s; without set-name the ID names the link", linkNameRule)
		}
	} else {
		if !ValidLinkName(id) {
			return ifc, ef.errorf("the ID is %s", linkNameRule)
		}
		ifc.Name = id
	}
	switch kind {
	case Bond, Bridge:
		lf := m.get("interfaces")
		members, err := lf.list()
		if err != nil {
			return ifc, err
		}
		for _, mf := range members {
			s, err := mf.str()
			if err != nil {
				return ifc, err
			}
			ifc.Links = append(ifc.Links, s)
		}
	case VLAN:
		idf, err := m.required("id")
		if err != nil {
			return ifc, err
		}
		if ifc.VLANID, err = vlanID(idf); err != nil {
			return ifc, err
		}
		lf, err := m.required("link")
		if err != nil {
			return ifc, err
		}
		if ifc.VLANLink, err = lf.str(); err != nil {
			return ifc, err
		}
	}
	if f := m.get("mtu"); f.present() {
		if ifc.MTU, err = f.mtu(); err != nil {
			n.drop(err, "the setting")
		}
	}
	if f := m.get("macaddress"); f.present() {
		// The MAC the link is given, not one that selects it (that is
		// match.macaddress).
		mac, err := f.mac()
		switch {
		case err != nil:
			n.drop(err, "the setting")
		case kind == Physical:
			ifc.SetMAC = mac
		default:
			ifc.MAC = mac
		}
	}
	if kind == Bond || kind == Bridge {
		ifc.Params = v2Params(m.get("parameters"), kind, n)
	}
	v2IP(&ifc, m, n)
	return ifc, nil
}

// v2SectionOf is the v2 section a kind of link is listed in.
func v2SectionOf(k Kind) string {
	for _, s := range v2Sections {
		if s.kind == k {
			return s.key
		}
	}
	return ""
}

// v2Match reads match and set-name of an ethernet. Without match, the ID is
// the name of the link.
func v2Match(ifc *Interface, m mapping, n *notes) error {
	var err error
	if f := m.get("set-name"); f.present() {
		if ifc.Name, err = f.ifname(); err != nil {
			return err
		}
	}
	mf := m.get("match")
	if !mf.present() {
		ifc.MatchName = ifc.ID
		return nil
	}
	mm, err := mf.mapping()
	if err != nil {
		return err
	}
	mm.noteKeys(2, n, "match")
	if f := mm.get("macaddress"); f.present() {
		if ifc.MAC, err = f.mac(); err != nil {
			return err
		}
	}
	if f := mm.get("name"); f.present() {
		if ifc.MatchName, err = f.str(); err != nil {
			return err
		}
		if !validNameGlob(ifc.MatchName) {
			return f.errorf("not a link name or glob (1 to 15 of A-Z a-z 0-9 . _ - and the glob characters * ? [ ] ! ^)")
		}
	}
	if f := mm.get("driver"); f.present() {
		if ifc.MatchDriver, err = f.str(); err != nil {
			return err
		}
		if !validNameGlob(ifc.MatchDriver) {
			// networkd reads Driver= as a list of globs.
			return f.errorf("not a driver name or glob (1 to 64 of A-Z a-z 0-9 . _ - and the glob characters * ? [ ] ! ^)")
		}
	}
	return nil
}

// v2IP reads the keys every v2 link type shares: DHCP, addresses,
// gateways, routes, nameservers, accept-ra. Each bad one is noted in n and
// left out alone.
func v2IP(ifc *Interface, m mapping, n *notes) {
	flag := func(key string) (bool, bool) {
		f := m.get(key)
		if !f.present() {
			return false, false
		}
		b, err := f.boolean()
		if err != nil {
			n.drop(err, "the setting")
			return false, false
		}
		return b, true
	}
	ifc.DHCP4, _ = flag("dhcp4")
	ifc.DHCP6, _ = flag("dhcp6")
	if b, ok := flag("accept-ra"); ok {
		ifc.AcceptRA = &b
	}
	ifc.Optional, _ = flag("optional")
	if f := m.get("dhcp-identifier"); f.present() {
		s, err := f.str()
		switch {
		case err != nil:
			n.drop(err, "the setting")
		case s == "mac":
			ifc.DHCPIdentifier = s
		case s != "duid":
			// duid is the stacks' default.
			n.drop(f.errorf("neither mac nor duid"), "the setting")
		}
	}
	// DHCPv4's route metric is DHCPMetric, which v1 sets too.
	o4 := v2Overrides(m.get("dhcp4-overrides"), "dhcp4-overrides", n)
	if o4.RouteMetric != 0 {
		ifc.DHCPMetric, o4.RouteMetric = o4.RouteMetric, 0
	}
	ifc.DHCP4Overrides = o4
	ifc.DHCP6Overrides = v2Overrides(m.get("dhcp6-overrides"), "dhcp6-overrides", n)
	if rl, err := m.get("routing-policy").list(); err != nil {
		n.drop(err, "every routing rule")
	} else {
		for _, rf := range rl {
			r, err := v2Rule(rf, n)
			if err != nil {
				n.drop(err, "the routing rule")
				continue
			}
			ifc.RoutingPolicy = append(ifc.RoutingPolicy, r)
		}
	}
	addrs, err := m.get("addresses").list()
	if err != nil {
		n.drop(err, "every address")
	}
	for _, af := range addrs {
		a, err := v2Address(af, n)
		if err != nil {
			n.drop(err, "the address")
			continue
		}
		ifc.Addresses = append(ifc.Addresses, a)
	}
	for _, g := range []struct {
		key string
		v4  bool
	}{{"gateway4", true}, {"gateway6", false}} {
		f := m.get(g.key)
		if !f.present() {
			continue
		}
		gw, err := f.addr()
		if err == nil {
			err = checkFamily(f, gw, g.v4)
		}
		if err != nil {
			n.drop(err, "the gateway")
			continue
		}
		ifc.Routes = append(ifc.Routes, defaultRoute(gw, 0))
	}
	routes, err := m.get("routes").list()
	if err != nil {
		n.drop(err, "every route")
	}
	for _, rf := range routes {
		r, err := v2Route(rf, n)
		if err != nil {
			n.drop(err, "the route")
			continue
		}
		ifc.Routes = append(ifc.Routes, r)
	}
	if f := m.get("nameservers"); f.present() {
		nm, err := f.mapping()
		if err != nil {
			n.drop(err, "the nameservers")
			return
		}
		nm.noteKeys(2, n, "nameservers")
		if af := nm.get("addresses"); af.present() {
			ifc.DNS.Nameservers = af.addrList(n)
		}
		if sf := nm.get("search"); sf.present() {
			ifc.DNS.Search = sf.domains(n)
		}
	}
}

// v2Address reads one item of addresses: "address/prefix", or netplan's
// "- 10.0.0.1/24: {lifetime: 0}", whose options are noted as the key
// table says.
func v2Address(af field, n *notes) (netip.Prefix, error) {
	if am, ok := af.v.(map[string]any); ok && len(am) == 1 {
		for k, opts := range am {
			af.v = k
			if om, err := (field{af.path, opts}).mapping(); err == nil {
				om.noteKeys(2, n, "addresses")
			}
		}
	}
	s, err := af.str()
	if err != nil {
		return netip.Prefix{}, err
	}
	if !strings.Contains(s, "/") {
		if _, perr := netip.ParseAddr(s); perr != nil {
			return netip.Prefix{}, af.errorf("not an IP address")
		}
		return netip.Prefix{}, af.errorf("no prefix length (want address/prefix)")
	}
	return parseAddress(af, field{}, field{})
}

// v2Route reads one item of routes. A destination without a prefix
// length is one host (/32, /128), as netplan reads it; a route of a type
// other than unicast is left out (made as unicast it would carry what the
// document keeps from it).
func v2Route(rf field, n *notes) (Route, error) {
	var r Route
	rm, err := rf.mapping()
	if err != nil {
		return r, err
	}
	if f := rm.get("type"); f.present() {
		t, err := f.str()
		if err != nil {
			return r, err
		}
		if t != "unicast" {
			return r, f.errorf("a route type other than unicast, which seedkeeper does not make")
		}
	}
	if f := rm.get("via"); f.present() {
		if r.Via, err = f.addr(); err != nil {
			return r, err
		}
	}
	tf, err := rm.required("to")
	if err != nil {
		return r, err
	}
	if r.To, err = v2Destination(tf, r.Via); err != nil {
		return r, err
	}
	if r.Via.IsValid() {
		if err := checkFamily(rm.get("via"), r.Via, r.To.Addr().Is4()); err != nil {
			return r, err
		}
	}
	if f := rm.get("metric"); f.present() {
		if r.Metric, err = f.metric(); err != nil {
			return r, err
		}
	}
	if f := rm.get("table"); f.present() {
		if r.Table, err = f.intIn("a routing table", 0, maxMetric); err != nil {
			return r, err
		}
	}
	if f := rm.get("on-link"); f.present() {
		b, err := f.boolean()
		if err != nil {
			n.drop(err, "the setting")
		}
		r.OnLink = b && r.Via.IsValid()
	}
	rm.noteKeys(2, n, "routes")
	return r, nil
}

// v2Destination reads a route's to or a rule's from and to: "default",
// a prefix, or an address alone, which is that one host.
func v2Destination(f field, via netip.Addr) (netip.Prefix, error) {
	s, err := f.str()
	if err != nil {
		return netip.Prefix{}, err
	}
	if s != "default" && !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, f.errorf("not an IP address or prefix")
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return parseDestination(f, field{}, field{}, via)
}

// v2Overrides reads dhcp4-overrides or dhcp6-overrides (where). A bad
// setting is left unset alone.
func v2Overrides(f field, where string, n *notes) DHCPOverrides {
	var o DHCPOverrides
	if !f.present() {
		return o
	}
	om, err := f.mapping()
	if err != nil {
		n.drop(err, "the setting")
		return o
	}
	om.noteKeys(2, n, where)
	for _, b := range []struct {
		key string
		to  **bool
	}{
		{"use-dns", &o.UseDNS}, {"use-ntp", &o.UseNTP}, {"use-hostname", &o.UseHostname}, {"use-domains", &o.UseDomains},
		{"use-routes", &o.UseRoutes}, {"use-mtu", &o.UseMTU}, {"send-hostname", &o.SendHostname},
	} {
		kf := om.get(b.key)
		if !kf.present() {
			continue
		}
		// netplan's use-domains may also be "route": the domains
		// route DNS queries and are not searched.
		if s, err := kf.str(); err == nil && s == "route" && b.key == "use-domains" {
			o.UseDomains, o.RouteDomains = &[]bool{true}[0], true
			continue
		}
		v, err := kf.boolean()
		if err != nil {
			n.drop(err, "the setting")
			continue
		}
		*b.to = &v
	}
	if hf := om.get("hostname"); hf.present() {
		h, err := hf.str()
		if err == nil {
			err = checkHostname(hf, h)
		}
		if err != nil {
			n.drop(err, "the setting")
		} else {
			o.Hostname = h
		}
	}
	if mf := om.get("route-metric"); mf.present() {
		if o.RouteMetric, err = mf.metric(); err != nil {
			n.drop(err, "the setting")
			o.RouteMetric = 0
		}
	}
	return o
}

// checkHostname accepts a host name sent to a DHCP server: 1 to 253 of
// the bytes of a search domain (checkDomain), which keeps it one word of
// every file it goes in.
func checkHostname(f field, h string) error {
	if checkDomain(h) != nil {
		return f.errorf("not a host name (1 to 253 of A-Z a-z 0-9 . - _)")
	}
	return nil
}

// v2Rule reads one item of routing-policy: from or to (or both), and the
// table, priority, firewall mark and type of service it may name.
func v2Rule(rf field, n *notes) (Rule, error) {
	var r Rule
	rm, err := rf.mapping()
	if err != nil {
		return r, err
	}
	rm.noteKeys(2, n, "routing-policy")
	for _, p := range []struct {
		key string
		to  *netip.Prefix
	}{{"from", &r.From}, {"to", &r.To}} {
		if f := rm.get(p.key); f.present() {
			if *p.to, err = v2Destination(f, netip.Addr{}); err != nil {
				return r, err
			}
			if p.to.Bits() == 0 {
				// "all", which the kernel keeps as no selector.
				*p.to = netip.Prefix{}
			}
		}
	}
	if !r.From.IsValid() && !r.To.IsValid() {
		return r, rf.errorf("neither from nor to (other than all), which a rule of seedkeeper's needs")
	}
	if r.From.IsValid() && r.To.IsValid() && r.From.Addr().Is4() != r.To.Addr().Is4() {
		return r, rm.get("to").errorf("not of the family of from")
	}
	for _, p := range []struct {
		key, what string
		hi        int
		to        *int
	}{{"table", "a routing table", maxMetric, &r.Table}, {"priority", "a rule priority", maxMetric, &r.Priority},
		{"mark", "a firewall mark", maxMetric, &r.Mark}, {"type-of-service", "a type of service", 255, &r.TOS}} {
		if f := rm.get(p.key); f.present() {
			if *p.to, err = f.intIn(p.what, 0, p.hi); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

func v2Params(f field, kind Kind, n *notes) map[string]string {
	// v1 spellings are accepted too, as is the old misspelling netplan
	// knows (LP #1756701), which params corrects.
	return params(f, kind, n, func(name string, vf field) (string, error) {
		switch vf.v.(type) {
		case []any:
			l, _, err := vf.strList()
			if err != nil {
				return "", err
			}
			return strings.Join(l, " "), nil
		case map[string]any, map[any]any:
			// path-cost and port-priority: {port: value}.
			pm, _ := vf.mapping()
			var parts []string
			for _, port := range pm.keys() {
				if err := CheckLine(port); err != nil {
					return "", vf.errorf("port name: %v", err)
				}
				ps, err := pm.get(port).scalar()
				if err != nil {
					return "", err
				}
				parts = append(parts, port+"="+ps)
			}
			sort.Strings(parts)
			return strings.Join(parts, " "), nil
		}
		return vf.scalar()
	})
}
