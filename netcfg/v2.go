package netcfg

import (
	"fmt"
	"net/netip"
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

func parseV2(top mapping) (*Config, error) {
	c := &Config{}
	idPath := map[string]string{}
	for _, sec := range v2Sections {
		f := top.get(sec.key)
		if !f.present() {
			continue
		}
		m, err := f.mapping()
		if err != nil {
			return nil, err
		}
		for _, id := range m.keys() {
			ef := m.get(id)
			if err := CheckLine(id); err != nil {
				return nil, &FieldError{Path: m.path, Msg: fmt.Sprintf("an ID: %v", err)}
			}
			if prev, dup := idPath[id]; dup {
				return nil, ef.errorf("ID %q is already defined by %s", id, prev)
			}
			idPath[id] = ef.path
			ifc, err := v2Link(ef, id, sec.kind)
			if err != nil {
				return nil, err
			}
			c.Interfaces = append(c.Interfaces, ifc)
		}
	}
	names := map[string]string{}
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		n := ifc.LinkName()
		if prev, dup := names[n]; dup {
			return nil, &FieldError{Path: idPath[ifc.ID], Msg: fmt.Sprintf("link name %q is already used by %s", n, prev)}
		}
		names[n] = idPath[ifc.ID]
		for j, id := range ifc.Links {
			if _, ok := idPath[id]; !ok && !ValidLinkName(id) {
				return nil, &FieldError{Path: fmt.Sprintf("%s.interfaces[%d]", idPath[ifc.ID], j), Msg: fmt.Sprintf("%q is neither defined nor an interface name", id)}
			}
		}
		if ifc.Kind == VLAN {
			if _, ok := idPath[ifc.VLANLink]; !ok && !ValidLinkName(ifc.VLANLink) {
				return nil, &FieldError{Path: idPath[ifc.ID] + ".link", Msg: fmt.Sprintf("%q is neither defined nor an interface name", ifc.VLANLink)}
			}
		}
	}
	c.dedupeDNS()
	return c, nil
}

func v2Link(ef field, id string, kind Kind) (Interface, error) {
	ifc := Interface{ID: id, Kind: kind}
	if ef.v == nil {
		// "eth0: {}" written as "eth0:" decodes to null.
		ef.v = map[string]any{}
	}
	m, err := ef.mapping()
	if err != nil {
		return ifc, err
	}
	if kind == Physical {
		if err := v2Match(&ifc, m); err != nil {
			return ifc, err
		}
		if ifc.Name == "" && !ValidLinkName(id) {
			return ifc, ef.errorf("%q is not an interface name (1 to 15 characters, no \"/\", \":\" or white space); without set-name the ID names the link", id)
		}
	} else {
		if !ValidLinkName(id) {
			return ifc, ef.errorf("%q is not an interface name (1 to 15 characters, no \"/\", \":\" or white space)", id)
		}
		ifc.Name = id
	}
	if f := m.get("mtu"); f.present() {
		if ifc.MTU, err = f.mtu(); err != nil {
			return ifc, err
		}
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
		if ifc.Params, err = v2Params(m.get("parameters"), kind); err != nil {
			return ifc, err
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
	return ifc, v2IP(&ifc, m)
}

// v2Match reads match and set-name of an ethernet. Without match, the ID is
// the name of the link.
func v2Match(ifc *Interface, m mapping) error {
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
	if f := mm.get("macaddress"); f.present() {
		if ifc.MAC, err = f.mac(); err != nil {
			return err
		}
	}
	if f := mm.get("name"); f.present() {
		if ifc.MatchName, err = f.str(); err != nil {
			return err
		}
		if ifc.MatchName == "" || strings.ContainsAny(ifc.MatchName, "/ \t\n") {
			return f.errorf("%q is not an interface name or glob", ifc.MatchName)
		}
	}
	if f := mm.get("driver"); f.present() {
		if ifc.MatchDriver, err = f.str(); err != nil {
			return err
		}
		if ifc.MatchDriver == "" || strings.ContainsAny(ifc.MatchDriver, " \t") {
			// networkd reads Driver= as a list of globs.
			return f.errorf("not a driver name or glob (empty, or white space in it)")
		}
	}
	return nil
}

// v2IP reads the keys every v2 link type shares: DHCP, addresses,
// gateways, routes, nameservers, accept-ra.
func v2IP(ifc *Interface, m mapping) error {
	var err error
	if f := m.get("dhcp4"); f.present() {
		if ifc.DHCP4, err = f.boolean(); err != nil {
			return err
		}
	}
	if f := m.get("dhcp6"); f.present() {
		if ifc.DHCP6, err = f.boolean(); err != nil {
			return err
		}
	}
	if f := m.get("accept-ra"); f.present() {
		b, err := f.boolean()
		if err != nil {
			return err
		}
		ifc.AcceptRA = &b
	}
	if f := m.get("dhcp4-overrides"); f.present() {
		om, err := f.mapping()
		if err != nil {
			return err
		}
		if mf := om.get("route-metric"); mf.present() {
			if ifc.DHCPMetric, err = mf.metric(); err != nil {
				return err
			}
		}
	}
	addrs, err := m.get("addresses").list()
	if err != nil {
		return err
	}
	for _, af := range addrs {
		// netplan also allows "- 10.0.0.1/24: {lifetime: 0}".
		if am, ok := af.v.(map[string]any); ok && len(am) == 1 {
			for k := range am {
				af.v = k
			}
		}
		s, err := af.str()
		if err != nil {
			return err
		}
		if !strings.Contains(s, "/") {
			if _, perr := netip.ParseAddr(s); perr != nil {
				return af.errorf("%q is not an IP address", s)
			}
			return af.errorf("%q has no prefix length (want address/prefix)", s)
		}
		a, err := parseAddress(af, field{}, field{})
		if err != nil {
			return err
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
		if err != nil {
			return err
		}
		if err := checkFamily(f, gw, g.v4); err != nil {
			return err
		}
		ifc.Routes = append(ifc.Routes, defaultRoute(gw, 0))
	}
	routes, err := m.get("routes").list()
	if err != nil {
		return err
	}
	for _, rf := range routes {
		r, err := v2Route(rf)
		if err != nil {
			return err
		}
		ifc.Routes = append(ifc.Routes, r)
	}
	if f := m.get("nameservers"); f.present() {
		nm, err := f.mapping()
		if err != nil {
			return err
		}
		if af := nm.get("addresses"); af.present() {
			if ifc.DNS.Nameservers, err = af.addrList(); err != nil {
				return err
			}
		}
		if sf := nm.get("search"); sf.present() {
			if ifc.DNS.Search, err = sf.domains(); err != nil {
				return err
			}
		}
	}
	return nil
}

func v2Route(rf field) (Route, error) {
	var r Route
	rm, err := rf.mapping()
	if err != nil {
		return r, err
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
	if r.To, err = parseDestination(tf, field{}, field{}, r.Via); err != nil {
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
	return r, nil
}

func v2Params(f field, kind Kind) (map[string]string, error) {
	// v1 spellings are accepted too, as is the old misspelling netplan
	// knows (LP #1756701), which params corrects.
	return params(f, kind, func(name string, vf field) (string, error) {
		switch vf.v.(type) {
		case []any:
			l, err := vf.strList()
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
