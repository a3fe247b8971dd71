package netcfg

import (
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
	n      *notes
	idPath map[string]string // interface name → path of its entry
	// dns for named interfaces from nameserver entries, applied at the end.
	ifDNS []ifDNS
}

type ifDNS struct {
	name string
	path string
	dns  DNS
}

func parseV1(top mapping, n *notes) (*Config, error) {
	p := &v1Parser{c: &Config{}, n: n, idPath: map[string]string{}}
	entries, err := top.get("config").list()
	if err != nil {
		return nil, err
	}
	if !top.has("config") {
		return nil, top.get("config").errorf("missing")
	}
	for _, e := range entries {
		if err := p.entry(e); err != nil {
			p.n.drop(err, "the entry")
		}
	}
	for _, d := range p.ifDNS {
		i := p.c.Lookup(d.name)
		if i == nil {
			p.n.drop(&FieldError{Path: d.path, Msg: "no interface of that name is configured"}, "the nameserver entry")
			continue
		}
		i.DNS.Nameservers = append(i.DNS.Nameservers, d.dns.Nameservers...)
		i.DNS.Search = append(i.DNS.Search, d.dns.Search...)
	}
	p.c.dedupeDNS()
	p.c.Notes = p.n.result()
	return p.c, nil
}

// entry reads one item of config; an error leaves the whole entry out.
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
		p.nameserver(m)
		return nil
	case "route":
		r, err := v1Route(m, p.n)
		if err != nil {
			return err
		}
		p.c.Routes = append(p.c.Routes, r)
		return nil
	case "loopback":
		// cloud-init brings lo up; so does the kernel. Nothing to do.
		return nil
	}
	return tf.errorf("not a type seedkeeper handles (physical, bond, vlan, bridge, nameserver, route or loopback)")
}

// link reads a physical, bond, bridge or VLAN entry. What names or selects
// the link (name, MAC, members, VLAN ID and link) is returned as an error,
// which leaves the link out; a bad setting or subnet is noted and left out
// alone.
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
		return nf.errorf("the name is already defined by %s", prev)
	}
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
	// The link stands from here on; the rest degrades by field.
	p.idPath[name] = m.path
	m.noteKeys(1, p.n, string(kind), "config")
	if f := m.get("mtu"); f.present() {
		if ifc.MTU, err = f.mtu(); err != nil {
			p.n.drop(err, "the setting")
		}
	}
	if f := m.get("accept-ra"); f.present() {
		if b, err := f.boolean(); err != nil {
			p.n.drop(err, "the setting")
		} else {
			ifc.AcceptRA = &b
		}
	}
	if kind == Bond || kind == Bridge {
		ifc.Params = v1Params(m.get("params"), kind, p.n)
	}
	subnets, err := m.get("subnets").list()
	if err != nil {
		p.n.drop(err, "every subnet of the link")
	}
	for _, sf := range subnets {
		v1Subnet(&ifc, sf, p.n)
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

func v1Params(f field, kind Kind, n *notes) map[string]string {
	return params(f, kind, n, func(name string, vf field) (string, error) {
		if name != "path-cost" && name != "port-priority" && name != "arp-ip-target" {
			return vf.scalar()
		}
		// Lists: bridge_pathcost ["eth0 50"], bond-arp-ip-target.
		l, _, err := vf.strList()
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

// paramAliases are the other spellings of bond parameters netplan reads,
// by the model's name: its reference's arp-ip-targets, the newer
// all-members-active and packets-per-member, and the old misspelling of
// gratuitous-arp (LP #1756701).
var paramAliases = map[string]string{
	"arp-ip-targets":     "arp-ip-target",
	"all-members-active": "all-slaves-active",
	"packets-per-member": "packets-per-slave",
	"gratuitious-arp":    "gratuitous-arp",
}

// params reads a bond or bridge parameter mapping; value turns one entry,
// under its v2 name, into the model's string form. A bad parameter is
// noted and left out alone.
func params(f field, kind Kind, n *notes, value func(name string, vf field) (string, error)) map[string]string {
	if !f.present() {
		return nil
	}
	m, err := f.mapping()
	if err != nil {
		n.drop(err, "every parameter")
		return nil
	}
	out := map[string]string{}
	for _, k := range m.keys() {
		vf := m.get(k)
		if !paramText(k, false) {
			n.drop(&FieldError{Path: m.path, Msg: "a parameter name not made of A-Z a-z 0-9 . _ -"}, "the parameter")
			continue
		}
		name := v1Param(kind, k)
		if model, ok := paramAliases[name]; ok {
			name = model
		}
		s, err := value(name, vf)
		if err == nil {
			err = addParam(out, vf, name, s)
		}
		if err != nil {
			n.drop(err, "the parameter")
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// addParam validates a parameter and adds it under its model name; one
// given twice under two spellings (bond-mode and mode) is an error.
//
// The value is trimmed; an empty one, or one with a byte outside
// paramText's alphabet (a backslash systemd would join the next line to,
// a '$' or '`' a reader might expand), is an error.
func addParam(params map[string]string, f field, name, value string) error {
	value = strings.TrimSpace(value)
	switch {
	case value == "":
		return f.errorf("empty value")
	case !paramText(value, true):
		return f.errorf("a value not made of A-Z a-z 0-9 . _ - : + , = / and spaces")
	}
	if name == "stp" {
		if _, ok := parseBoolText(value); !ok {
			return f.errorf("not a boolean")
		}
	}
	if _, dup := params[name]; dup {
		return f.errorf("parameter %s is given twice", name)
	}
	params[name] = value
	return nil
}

// paramText reports whether s may be a parameter's name (value false) or
// value: the bytes of ValidLinkName, and for a value also ':' (an IPv6
// address), '+' (layer3+4), ',', '=' (port=cost), '/' and the space
// between list items.
// Parameters go into .netdev files as text and comments, and nothing of
// that alphabet is a glob, a quote, a specifier or an escape there.
func paramText(s string, value bool) bool {
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) && !(value && strings.IndexByte(" :+,=/", s[i]) >= 0) {
			return false
		}
	}
	return s != ""
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

// v1Subnet adds one subnet to ifc. A subnet whose type or address is bad
// is left out; a bad gateway, metric, nameserver, search domain or route
// is left out alone.
func v1Subnet(ifc *Interface, sf field, n *notes) {
	m, err := sf.mapping()
	if err != nil {
		n.drop(err, "the subnet")
		return
	}
	tf, err := m.required("type")
	if err != nil {
		n.drop(err, "the subnet")
		return
	}
	typ, err := tf.str()
	if err != nil {
		n.drop(err, "the subnet")
		return
	}
	m.noteKeys(1, n, "subnets")
	metric, metricOK := 0, true
	if f := m.get("metric"); f.present() {
		if metric, err = f.metric(); err != nil {
			// The metric orders this subnet's default route against
			// others: without it the route would win or lose by chance.
			n.drop(err, "the subnet's gateway and DHCP route metric")
			metric, metricOK = 0, false
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
			n.drop(err, "the subnet")
			return
		}
		a, err := parseAddress(af, m.get("netmask"), m.get("prefix"))
		if err != nil {
			n.drop(err, "the subnet")
			return
		}
		ifc.Addresses = append(ifc.Addresses, a)
		if gf := m.get("gateway"); gf.present() && metricOK {
			gw, err := gf.addr()
			if err == nil {
				err = checkFamily(gf, gw, a.Addr().Is4())
			}
			if err != nil {
				n.drop(err, "the gateway")
			} else {
				ifc.Routes = append(ifc.Routes, defaultRoute(gw, metric))
			}
		}
	default:
		n.drop(tf.errorf("not a subnet type seedkeeper handles"), "the subnet")
		return
	}
	if f := m.get("dns_nameservers"); f.present() {
		ifc.DNS.Nameservers = append(ifc.DNS.Nameservers, f.addrList(n)...)
	}
	if f := m.get("dns_search"); f.present() {
		ifc.DNS.Search = append(ifc.DNS.Search, f.domains(n)...)
	}
	routes, err := m.get("routes").list()
	if err != nil {
		n.drop(err, "every route of the subnet")
	}
	for _, rf := range routes {
		rm, err := rf.mapping()
		var r Route
		if err == nil {
			r, err = v1Route(rm, n)
		}
		if err != nil {
			n.drop(err, "the route")
			continue
		}
		ifc.Routes = append(ifc.Routes, r)
	}
}

// v1Route reads a route: destination (or network) with an optional netmask
// or prefix, gateway and metric.
func v1Route(m mapping, n *notes) (Route, error) {
	var r Route
	var err error
	m.noteKeys(1, n, "route")
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

// nameserver reads a nameserver entry; a bad address or search domain is
// left out alone.
func (p *v1Parser) nameserver(m mapping) {
	var d DNS
	m.noteKeys(1, p.n, "nameserver")
	if f := m.get("address"); f.present() {
		d.Nameservers = f.addrList(p.n)
	}
	if f := m.get("search"); f.present() {
		d.Search = f.domains(p.n)
	}
	if f := m.get("interface"); f.present() {
		name, err := f.str()
		if err != nil {
			p.n.drop(err, "the nameserver entry")
			return
		}
		p.ifDNS = append(p.ifDNS, ifDNS{name: name, path: f.path, dns: d})
		return
	}
	p.c.DNS.Nameservers = append(p.c.DNS.Nameservers, d.Nameservers...)
	p.c.DNS.Search = append(p.c.DNS.Search, d.Search...)
}
