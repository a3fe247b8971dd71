package netcfg

import (
	"fmt"
	"strings"
)

// v1ToV2Params maps cloud-init v1 bond and bridge parameter names to the
// v2 (netplan) names the model keeps (cloud-init's NET_CONFIG_TO_V2).
var v1ToV2Params = map[Kind]map[string]string{
	Bond: {
		"bond-ad-select":        "ad-select",
		"bond-arp-interval":     "arp-interval",
		"bond-arp-ip-target":    "arp-ip-target",
		"bond-arp-validate":     "arp-validate",
		"bond-downdelay":        "down-delay",
		"bond-fail-over-mac":    "fail-over-mac-policy",
		"bond-lacp-rate":        "lacp-rate",
		"bond-miimon":           "mii-monitor-interval",
		"bond-min-links":        "min-links",
		"bond-mode":             "mode",
		"bond-num-grat-arp":     "gratuitous-arp",
		"bond-primary":          "primary",
		"bond-primary-reselect": "primary-reselect-policy",
		"bond-updelay":          "up-delay",
		"bond-xmit-hash-policy": "transmit-hash-policy",
	},
	Bridge: {
		"bridge_ageing":     "ageing-time",
		"bridge_bridgeprio": "priority",
		"bridge_fd":         "forward-delay",
		"bridge_hello":      "hello-time",
		"bridge_maxage":     "max-age",
		"bridge_pathcost":   "path-cost",
		"bridge_portprio":   "port-priority",
		"bridge_stp":        "stp",
	},
}

// v1Param turns a v1 parameter name into the model's (v2) name. Bond names
// are also accepted with underscores (bond_miimon) or without the prefix;
// names the table does not know are kept as they are.
func v1Param(k Kind, name string) string {
	if k == Bond {
		name = strings.ReplaceAll(name, "_", "-")
	}
	if v2, ok := v1ToV2Params[k][name]; ok {
		return v2
	}
	return name
}

// v2ToV1Param is the reverse of v1Param, for MarshalV1.
func v2ToV1Param(k Kind, name string) string {
	best := ""
	for v1, v2 := range v1ToV2Params[k] {
		if v2 == name && (best == "" || len(v1) < len(best) || (len(v1) == len(best) && v1 < best)) {
			best = v1
		}
	}
	if best == "" {
		return name
	}
	return best
}

type v1Parser struct {
	c      *Config
	idPath map[string]string // interface name → path of its entry
	// dns for named interfaces from nameserver entries, applied at the end.
	ifDNS []ifDNS
}

type ifDNS struct {
	name string
	path string
	dns  DNS
}

func parseV1(top mapping) (*Config, error) {
	p := &v1Parser{c: &Config{}, idPath: map[string]string{}}
	entries, err := top.get("config").list()
	if err != nil {
		return nil, err
	}
	if !top.has("config") {
		return nil, top.get("config").errorf("missing")
	}
	for _, e := range entries {
		if err := p.entry(e); err != nil {
			return nil, err
		}
	}
	for _, d := range p.ifDNS {
		i := p.c.Lookup(d.name)
		if i == nil {
			return nil, &FieldError{Path: d.path, Msg: fmt.Sprintf("interface %q is not defined", d.name)}
		}
		i.DNS.Nameservers = append(i.DNS.Nameservers, d.dns.Nameservers...)
		i.DNS.Search = append(i.DNS.Search, d.dns.Search...)
	}
	p.c.dedupeDNS()
	return p.c, nil
}

func (p *v1Parser) entry(e field) error {
	m, err := e.mapping()
	if err != nil {
		return err
	}
	tf, err := m.required("type")
	if err != nil {
		return err
	}
	typ, err := tf.str()
	if err != nil {
		return err
	}
	switch typ {
	case "physical", "bond", "vlan", "bridge":
		return p.link(m, Kind(typ))
	case "nameserver":
		return p.nameserver(m)
	case "route":
		r, err := v1Route(m)
		if err != nil {
			return err
		}
		p.c.Routes = append(p.c.Routes, r)
		return nil
	case "loopback":
		// cloud-init brings lo up; so does the kernel. Nothing to do.
		return nil
	}
	return tf.errorf("unknown type %q (want physical, bond, vlan, bridge, nameserver or route)", typ)
}

func (p *v1Parser) link(m mapping, kind Kind) error {
	nf, err := m.required("name")
	if err != nil {
		return err
	}
	name, err := nf.ifname()
	if err != nil {
		return err
	}
	if prev, dup := p.idPath[name]; dup {
		return nf.errorf("%q is already defined by %s", name, prev)
	}
	p.idPath[name] = m.path
	ifc := Interface{ID: name, Kind: kind, Name: name}
	if f := m.get("mac_address"); f.present() {
		if ifc.MAC, err = f.mac(); err != nil {
			return err
		}
	}
	if kind == Physical && ifc.MAC == "" {
		// Without a MAC, v1 names the link to configure.
		ifc.MatchName = name
	}
	if f := m.get("mtu"); f.present() {
		if ifc.MTU, err = f.mtu(); err != nil {
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
	switch kind {
	case Bond, Bridge:
		key := string(kind) + "_interfaces"
		lf, err := m.required(key)
		if err != nil {
			return err
		}
		members, err := lf.list()
		if err != nil {
			return err
		}
		for _, mf := range members {
			id, err := mf.ifname()
			if err != nil {
				return err
			}
			ifc.Links = append(ifc.Links, id)
		}
		if ifc.Params, err = v1Params(m.get("params"), kind); err != nil {
			return err
		}
	case VLAN:
		idf, err := m.required("vlan_id")
		if err != nil {
			return err
		}
		if ifc.VLANID, err = vlanID(idf); err != nil {
			return err
		}
		lf, err := m.required("vlan_link")
		if err != nil {
			return err
		}
		if ifc.VLANLink, err = lf.ifname(); err != nil {
			return err
		}
	}
	subnets, err := m.get("subnets").list()
	if err != nil {
		return err
	}
	for _, sf := range subnets {
		if err := v1Subnet(&ifc, sf); err != nil {
			return err
		}
	}
	p.c.Interfaces = append(p.c.Interfaces, ifc)
	return nil
}

func vlanID(f field) (int, error) {
	n, err := f.intIn("a VLAN ID", 1, 4094)
	if err != nil {
		return 0, err
	}
	return n, nil
}

func v1Params(f field, kind Kind) (map[string]string, error) {
	return params(f, kind, func(name string, vf field) (string, error) {
		if name != "path-cost" && name != "port-priority" && name != "arp-ip-target" {
			return vf.scalar()
		}
		// Lists: bridge_pathcost ["eth0 50"], bond-arp-ip-target.
		l, err := vf.strList()
		if err != nil {
			return "", err
		}
		if name != "arp-ip-target" {
			for i, e := range l {
				l[i] = strings.Join(strings.Fields(e), "=")
			}
		}
		return strings.Join(l, " "), nil
	})
}

// params reads a bond or bridge parameter mapping; value turns one entry,
// under its v2 name, into the model's string form.
func params(f field, kind Kind, value func(name string, vf field) (string, error)) (map[string]string, error) {
	if !f.present() {
		return nil, nil
	}
	m, err := f.mapping()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range m.keys() {
		vf := m.get(k)
		if err := CheckLine(k); err != nil {
			return nil, &FieldError{Path: m.path, Msg: fmt.Sprintf("a parameter name: %v", err)}
		}
		name := v1Param(kind, k)
		s, err := value(name, vf)
		if err != nil {
			return nil, err
		}
		if name == "gratuitious-arp" {
			name = "gratuitous-arp"
		}
		if err := addParam(out, vf, name, s); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// addParam validates a parameter and adds it under its model name; one
// given twice under two spellings (bond-mode and mode) is an error.
//
// The value is trimmed; an empty one, or one that ends in a backslash
// (systemd would join the next line of the file to it), is an error.
func addParam(params map[string]string, f field, name, value string) error {
	value = strings.TrimSpace(value)
	switch {
	case value == "":
		return f.errorf("empty value")
	case strings.HasSuffix(value, "\\"):
		return f.errorf("value ends in a backslash")
	}
	if name == "stp" {
		if _, ok := parseBoolText(value); !ok {
			return f.errorf("%q is not a boolean", value)
		}
	}
	if _, dup := params[name]; dup {
		return f.errorf("parameter %q is given twice", name)
	}
	params[name] = value
	return nil
}

func parseBoolText(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

func v1Subnet(ifc *Interface, sf field) error {
	m, err := sf.mapping()
	if err != nil {
		return err
	}
	tf, err := m.required("type")
	if err != nil {
		return err
	}
	typ, err := tf.str()
	if err != nil {
		return err
	}
	metric := 0
	if f := m.get("metric"); f.present() {
		if metric, err = f.metric(); err != nil {
			return err
		}
	}
	switch typ {
	case "dhcp", "dhcp4":
		ifc.DHCP4 = true
		if metric != 0 {
			ifc.DHCPMetric = metric
		}
	case "dhcp6", "ipv6_dhcpv6-stateful":
		ifc.DHCP6 = true
	case "ipv6_slaac":
		ifc.SLAAC = true
	case "ipv6_dhcpv6-stateless":
		ifc.SLAAC = true
		ifc.DHCP6 = true
	case "manual":
	case "static", "static6":
		af, err := m.required("address")
		if err != nil {
			return err
		}
		a, err := parseAddress(af, m.get("netmask"), m.get("prefix"))
		if err != nil {
			return err
		}
		ifc.Addresses = append(ifc.Addresses, a)
		if gf := m.get("gateway"); gf.present() {
			gw, err := gf.addr()
			if err != nil {
				return err
			}
			if err := checkFamily(gf, gw, a.Addr().Is4()); err != nil {
				return err
			}
			ifc.Routes = append(ifc.Routes, defaultRoute(gw, metric))
		}
	default:
		return tf.errorf("unknown subnet type %q", typ)
	}
	if f := m.get("dns_nameservers"); f.present() {
		ns, err := f.addrList()
		if err != nil {
			return err
		}
		ifc.DNS.Nameservers = append(ifc.DNS.Nameservers, ns...)
	}
	if f := m.get("dns_search"); f.present() {
		s, err := f.domains()
		if err != nil {
			return err
		}
		ifc.DNS.Search = append(ifc.DNS.Search, s...)
	}
	routes, err := m.get("routes").list()
	if err != nil {
		return err
	}
	for _, rf := range routes {
		rm, err := rf.mapping()
		if err != nil {
			return err
		}
		r, err := v1Route(rm)
		if err != nil {
			return err
		}
		ifc.Routes = append(ifc.Routes, r)
	}
	return nil
}

// v1Route reads a route: destination (or network) with an optional netmask
// or prefix, gateway and metric.
func v1Route(m mapping) (Route, error) {
	var r Route
	var err error
	if gf := m.get("gateway"); gf.present() {
		if r.Via, err = gf.addr(); err != nil {
			return r, err
		}
	}
	df := m.get("destination")
	if !df.present() {
		df = m.get("network")
	}
	if !df.present() {
		return r, m.get("destination").errorf("missing")
	}
	if r.To, err = parseDestination(df, m.get("netmask"), m.get("prefix"), r.Via); err != nil {
		return r, err
	}
	if r.Via.IsValid() {
		if err := checkFamily(m.get("gateway"), r.Via, r.To.Addr().Is4()); err != nil {
			return r, err
		}
	}
	if f := m.get("metric"); f.present() {
		if r.Metric, err = f.metric(); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (p *v1Parser) nameserver(m mapping) error {
	var d DNS
	var err error
	if f := m.get("address"); f.present() {
		if d.Nameservers, err = f.addrList(); err != nil {
			return err
		}
	}
	if f := m.get("search"); f.present() {
		if d.Search, err = f.domains(); err != nil {
			return err
		}
	}
	if f := m.get("interface"); f.present() {
		name, err := f.str()
		if err != nil {
			return err
		}
		p.ifDNS = append(p.ifDNS, ifDNS{name: name, path: f.path, dns: d})
		return nil
	}
	p.c.DNS.Nameservers = append(p.c.DNS.Nameservers, d.Nameservers...)
	p.c.DNS.Search = append(p.c.DNS.Search, d.Search...)
	return nil
}
