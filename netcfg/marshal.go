package netcfg

import (
	"bytes"
	"fmt"
	"net/netip"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// MarshalV1 writes the configuration as a cloud-init network config version
// 1 document, unwrapped (no top-level "network:" key, which cloud-init 22.4
// rejects in a NoCloud seed). Parse reads it back to an equal Config for
// every configuration v1 can express; what it cannot is dropped:
//
//   - v1 names links: an entry is written with its Name, else its ID, and
//     references (bond and bridge members, VLAN links) are rewritten to
//     those names; a v2 match on a name glob or a driver is lost;
//   - route tables are lost, and so are the v2 settings v1 has no key
//     for: optional, the DHCP overrides but DHCPv4's route metric,
//     dhcp-identifier, routing-policy and an ethernet's macaddress;
//   - SLAAC together with DHCPv6 is written as ipv6_dhcpv6-stateless.
//
// String values are single-quoted so that YAML 1.1 readers (cloud-init's
// PyYAML) cannot take a MAC address or a version-like name for a number.
func (c *Config) MarshalV1() ([]byte, error) {
	names := map[string]string{} // ID → v1 name
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		names[ifc.ID] = ifc.LinkName()
	}
	v1name := func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		return id
	}
	used := map[string]string{}
	var entries []*yaml.Node
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		name := ifc.LinkName()
		if prev, dup := used[name]; dup {
			return nil, fmt.Errorf("marshal v1: %s and %s would both be named %q", prev, ifc.ID, name)
		}
		used[name] = ifc.ID
		e := newMap()
		e.add("type", plain(string(ifc.Kind)))
		e.add("name", quoted(name))
		if ifc.MAC != "" {
			e.add("mac_address", quoted(ifc.MAC))
		}
		if ifc.MTU != 0 {
			e.add("mtu", num(ifc.MTU))
		}
		if ifc.AcceptRA != nil {
			e.add("accept-ra", boolean(*ifc.AcceptRA))
		}
		switch ifc.Kind {
		case Bond, Bridge:
			members := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, id := range ifc.Links {
				members.Content = append(members.Content, quoted(v1name(id)))
			}
			e.add(string(ifc.Kind)+"_interfaces", members)
			params := newMap()
			for _, k := range sortedKeys(ifc.Params) {
				params.add(v2ToV1Param(ifc.Kind, k), v1ParamValue(k, ifc.Params[k]))
			}
			// cloud-init requires params on a bond.
			if ifc.Kind == Bond || len(ifc.Params) > 0 {
				e.add("params", params.node)
			}
		case VLAN:
			e.add("vlan_link", quoted(v1name(ifc.VLANLink)))
			e.add("vlan_id", num(ifc.VLANID))
		}
		if subnets := v1Subnets(ifc); len(subnets.Content) > 0 {
			e.add("subnets", subnets)
		}
		entries = append(entries, e.node)
	}
	for _, r := range c.Routes {
		e := newMap()
		e.add("type", plain("route"))
		addRoute(e, r, "destination")
		entries = append(entries, e.node)
	}
	if len(c.DNS.Nameservers) > 0 || len(c.DNS.Search) > 0 {
		e := newMap()
		e.add("type", plain("nameserver"))
		// cloud-init 22.4 requires the address key, even empty.
		e.add("address", addrSeq(c.DNS.Nameservers))
		if len(c.DNS.Search) > 0 {
			e.add("search", strSeq(c.DNS.Search))
		}
		entries = append(entries, e.node)
	}

	doc := newMap()
	doc.add("version", num(1))
	doc.add("config", &yaml.Node{Kind: yaml.SequenceNode, Content: entries})
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc.node); err != nil {
		return nil, fmt.Errorf("marshal v1: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("marshal v1: %w", err)
	}
	return buf.Bytes(), nil
}

// v1Subnets writes addresses, DHCP, routes and DNS as v1 subnets, placing
// routes so that Parse reads them back in the same order: a plain default
// route becomes the "gateway" of the next static subnet of its family that
// has nothing yet, every other route goes under the current subnet.
func v1Subnets(ifc *Interface) *yaml.Node {
	type subnet struct {
		m       nodeMap
		static  bool
		is4     bool
		gateway bool
		routes  *yaml.Node
	}
	var subnets []*subnet
	for _, a := range ifc.Addresses {
		typ := "static"
		if a.Addr().Is6() {
			typ = "static6"
		}
		s := &subnet{m: newMap(), static: true, is4: a.Addr().Is4()}
		s.m.add("type", plain(typ))
		s.m.add("address", quoted(a.String()))
		subnets = append(subnets, s)
	}
	dyn := func(typ string) *subnet {
		s := &subnet{m: newMap()}
		s.m.add("type", plain(typ))
		subnets = append(subnets, s)
		return s
	}
	if ifc.DHCP4 {
		s := dyn("dhcp4")
		if ifc.DHCPMetric != 0 {
			s.m.add("metric", num(ifc.DHCPMetric))
		}
	}
	switch {
	case ifc.SLAAC && ifc.DHCP6:
		dyn("ipv6_dhcpv6-stateless")
	case ifc.DHCP6:
		dyn("dhcp6")
	case ifc.SLAAC:
		dyn("ipv6_slaac")
	}
	hasDNS := len(ifc.DNS.Nameservers) > 0 || len(ifc.DNS.Search) > 0
	if len(subnets) == 0 && (len(ifc.Routes) > 0 || hasDNS) {
		dyn("manual")
	}

	j := 0
	for _, r := range ifc.Routes {
		if isPlainDefault(r) {
			k := j
			for ; k < len(subnets); k++ {
				s := subnets[k]
				if s.static && s.is4 == r.Via.Is4() && !s.gateway && s.routes == nil {
					break
				}
			}
			if k < len(subnets) {
				j = k
				subnets[k].m.add("gateway", quoted(r.Via.String()))
				subnets[k].gateway = true
				continue
			}
		}
		s := subnets[j]
		if s.routes == nil {
			s.routes = &yaml.Node{Kind: yaml.SequenceNode}
		}
		rm := newMap()
		addRoute(rm, r, "destination")
		rm.node.Style = yaml.FlowStyle
		s.routes.Content = append(s.routes.Content, rm.node)
	}

	out := &yaml.Node{Kind: yaml.SequenceNode}
	for i, s := range subnets {
		if i == 0 && hasDNS {
			if len(ifc.DNS.Nameservers) > 0 {
				s.m.add("dns_nameservers", addrSeq(ifc.DNS.Nameservers))
			}
			if len(ifc.DNS.Search) > 0 {
				s.m.add("dns_search", strSeq(ifc.DNS.Search))
			}
		}
		if s.routes != nil {
			s.m.add("routes", s.routes)
		}
		out.Content = append(out.Content, s.m.node)
	}
	return out
}

// isPlainDefault reports whether a route can be written as a subnet's
// gateway: a default route with a gateway, no metric and the main table.
func isPlainDefault(r Route) bool {
	return r.To.Bits() == 0 && r.Via.IsValid() && r.Metric == 0 && r.Table == 0
}

func addRoute(m nodeMap, r Route, destKey string) {
	m.add(destKey, quoted(r.To.String()))
	if r.Via.IsValid() {
		m.add("gateway", quoted(r.Via.String()))
	}
	if r.Metric != 0 {
		m.add("metric", num(r.Metric))
	}
}

// v1ParamValue writes a parameter the way the v1 parser reads it back.
func v1ParamValue(name, value string) *yaml.Node {
	switch name {
	case "path-cost", "port-priority":
		// "eth0=50 eth1=60" → ["eth0 50", "eth1 60"]
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, f := range splitFields(value) {
			k, v, _ := cutLast(f, "=")
			seq.Content = append(seq.Content, quoted(k+" "+v))
		}
		return seq
	case "arp-ip-target":
		return strSeq(splitFields(value))
	}
	return quoted(value)
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// nodeMap builds a YAML mapping with keys in insertion order.
type nodeMap struct{ node *yaml.Node }

func newMap() nodeMap { return nodeMap{&yaml.Node{Kind: yaml.MappingNode}} }

func (m nodeMap) add(k string, v *yaml.Node) {
	m.node.Content = append(m.node.Content, plain(k), v)
}

func plain(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func quoted(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.SingleQuotedStyle}
}

func num(n int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(n)}
}

func boolean(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func strSeq(l []string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range l {
		seq.Content = append(seq.Content, quoted(s))
	}
	return seq
}

func addrSeq(l []netip.Addr) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, a := range l {
		seq.Content = append(seq.Content, quoted(a.String()))
	}
	if len(l) == 0 {
		seq.Style = yaml.FlowStyle
	}
	return seq
}
