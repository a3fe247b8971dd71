package netcfg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// FromSmartOS builds a configuration from the SmartOS metadata keys
// sdc:nics, sdc:routes and sdc:resolvers (JSON arrays; nil or empty means
// the key is absent) and sdc:dns_domain, with the rules of cloud-init's
// convert_smartos_network_data:
//
//   - one physical interface per nic, named by "interface", selected by
//     "mac", with its "mtu";
//   - each "ips" entry is a subnet: "dhcp" is DHCPv4, "addrconf" is SLAAC
//     plus DHCPv6 (as cloud-init ≥ 24.4 has it), anything else a static
//     address;
//   - only nics with "primary": true give gateways: for each address
//     family, the first of that nic's "gateways" goes on its first static
//     address of the family, once across all nics;
//   - each of sdc:routes goes on the nics with an address on its
//     gateway's subnet, or becomes a global route when there is none
//     ("linklocal" is ignored). cloud-init puts every route on every nic
//     with a static address, which the kernel refuses on the nics that
//     cannot reach the gateway;
//   - sdc:resolvers, if any, are global DNS servers, searched in dnsDomain.
//
// One bad field degrades only what it belongs to, as in Parse: a bad
// route, address, gateway or resolver is left out, a bad mtu left unset,
// a nic whose interface or mac is bad left out, each a line of
// Config.Notes naming the key and index (sdc:nics[1].ips[0]: ...). Only
// sdc:nics that is not a JSON array is an error.
func FromSmartOS(nics, routes, resolvers []byte, dnsDomain string) (*Config, error) {
	return fromSmartOS(nics, routes, resolvers, dnsDomain, &notes{})
}

// fromSmartOS is FromSmartOS collecting its notes in n.
func fromSmartOS(nics, routes, resolvers []byte, dnsDomain string, n *notes) (*Config, error) {
	nicList, err := smartosArray("sdc:nics", nics)
	if err != nil {
		return nil, err
	}
	routeList, err := smartosArray("sdc:routes", routes)
	if err != nil {
		n.drop(err, "every route")
	}
	resolverList, err := smartosArray("sdc:resolvers", resolvers)
	if err != nil {
		n.drop(err, "every resolver")
	}

	var sdcRoutes []Route
	for _, rf := range routeList {
		r, err := smartosRoute(rf)
		if err != nil {
			n.drop(err, "the route")
			continue
		}
		sdcRoutes = append(sdcRoutes, r)
	}

	c := &Config{}
	gw4, gw6 := false, false // a primary gateway was placed for the family
	seen := map[string]string{}
	for _, nf := range nicList {
		ifc, err := smartosNIC(nf, seen, &gw4, &gw6, n)
		if err != nil {
			n.drop(err, "the nic")
			continue
		}
		c.Interfaces = append(c.Interfaces, ifc)
	}
	placeRoutes(c, sdcRoutes)

	for _, rf := range resolverList {
		a, err := rf.addr()
		if err != nil {
			n.drop(err, "the resolver")
			continue
		}
		c.DNS.Nameservers = append(c.DNS.Nameservers, a)
	}
	if d := strings.TrimSpace(dnsDomain); d != "" && len(c.DNS.Nameservers) > 0 {
		if err := checkDomain(d); err != nil {
			n.drop(&FieldError{Path: "sdc:dns_domain", Msg: err.Error()}, "the search domain")
		} else {
			c.DNS.Search = []string{d}
		}
	}
	c.dedupeDNS()
	if err := c.checkFileNames(); err != nil {
		return nil, err
	}
	c.Notes = n.result()
	return c, nil
}

// smartosRoute reads one entry of sdc:routes.
func smartosRoute(rf field) (Route, error) {
	var r Route
	rm, err := rf.mapping()
	if err != nil {
		return r, err
	}
	gf, err := rm.required("gateway")
	if err != nil {
		return r, err
	}
	if r.Via, err = gf.addr(); err != nil {
		return r, err
	}
	df, err := rm.required("dst")
	if err != nil {
		return r, err
	}
	if r.To, err = parseDestination(df, field{}, field{}, r.Via); err != nil {
		return r, err
	}
	return r, checkFamily(gf, r.Via, r.To.Addr().Is4())
}

// smartosNIC reads one entry of sdc:nics; an error leaves the nic out, a
// bad mtu, address or gateway is noted in n and left out alone. gw4 and
// gw6 say whether a primary gateway of the family was placed already.
func smartosNIC(nf field, seen map[string]string, gw4, gw6 *bool, n *notes) (Interface, error) {
	var ifc Interface
	nm, err := nf.mapping()
	if err != nil {
		return ifc, err
	}
	namef, err := nm.required("interface")
	if err != nil {
		return ifc, err
	}
	name, err := namef.ifname()
	if err != nil {
		return ifc, err
	}
	if prev, dup := seen[name]; dup {
		return ifc, namef.errorf("the name is already used by %s", prev)
	}
	ifc = Interface{ID: name, Kind: Physical, Name: name}
	if f := nm.get("mac"); f.present() {
		if ifc.MAC, err = f.mac(); err != nil {
			return ifc, err
		}
	} else {
		ifc.MatchName = name
	}
	seen[name] = nm.path
	if f := nm.get("mtu"); f.present() {
		if ifc.MTU, err = f.mtu(); err != nil {
			n.drop(err, "the setting")
		}
	}
	primary := false
	if f := nm.get("primary"); f.present() {
		if primary, err = f.boolean(); err != nil {
			n.drop(err, "the nic's gateways")
		}
	}
	var gateways []field
	if primary {
		if gateways, err = nm.get("gateways").list(); err != nil {
			n.drop(err, "the nic's gateways")
		}
	}
	ips, err := nm.get("ips").list()
	if err != nil {
		n.drop(err, "every address of the nic")
	}
	for _, ipf := range ips {
		s, err := ipf.str()
		if err != nil {
			n.drop(err, "the address")
			continue
		}
		switch s {
		case "dhcp":
			ifc.DHCP4 = true
			continue
		case "addrconf":
			ifc.SLAAC = true
			ifc.DHCP6 = true
			continue
		}
		a, err := parseAddress(ipf, field{}, field{})
		if err != nil {
			n.drop(err, "the address")
			continue
		}
		ifc.Addresses = append(ifc.Addresses, a)
		is4 := a.Addr().Is4()
		placed := gw6
		if is4 {
			placed = gw4
		}
		if !primary || *placed {
			continue
		}
		for _, gf := range gateways {
			gs, err := gf.str()
			if err != nil {
				n.drop(err, "the gateway")
				continue
			}
			// cloud-init picks the family by text: "." or ":".
			if is4 && !strings.Contains(gs, ".") || !is4 && !strings.Contains(gs, ":") {
				continue
			}
			gw, err := gf.addr()
			if err == nil {
				err = checkFamily(gf, gw, is4)
			}
			if err != nil {
				n.drop(err, "the gateway")
				continue
			}
			ifc.Routes = append(ifc.Routes, defaultRoute(gw, 0))
			*placed = true
			break
		}
	}
	return ifc, nil
}

// smartosArray decodes one of the sdc: JSON arrays.
func smartosArray(key string, data []byte) ([]field, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	// JSON is YAML's flow style: the same count bounds what the JSON
	// decoder would build.
	if err := yamlx.Check(data); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %w", key, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: invalid JSON: data after the array", key)
	}
	if v == nil {
		return nil, nil
	}
	return field{path: key, v: v}.list()
}

// placeRoutes gives each sdc:routes entry to the NICs that have an address
// on its gateway's subnet. cloud-init copies every route onto every NIC
// with a static address; the kernel refuses a gateway that is not on the
// link (ENETUNREACH), so a second NIC made every boot a partial failure.
// A route whose gateway is on no NIC's subnet becomes a global route,
// which Config.Plan leaves out with a note (a DHCP NIC's subnet is not
// known; cloud-init gives such a NIC no routes either).
func placeRoutes(c *Config, routes []Route) {
	for _, r := range routes {
		placed := false
		for i := range c.Interfaces {
			ifc := &c.Interfaces[i]
			for _, a := range ifc.Addresses {
				if r.Via.IsValid() && a.Masked().Contains(r.Via) {
					ifc.Routes = append(ifc.Routes, r)
					placed = true
					break
				}
			}
		}
		if !placed {
			c.Routes = append(c.Routes, r)
		}
	}
}
