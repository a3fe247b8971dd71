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
// Errors name the key and index: sdc:nics[1].ips[0]: ...
func FromSmartOS(nics, routes, resolvers []byte, dnsDomain string) (*Config, error) {
	nicList, err := smartosArray("sdc:nics", nics)
	if err != nil {
		return nil, err
	}
	routeList, err := smartosArray("sdc:routes", routes)
	if err != nil {
		return nil, err
	}
	resolverList, err := smartosArray("sdc:resolvers", resolvers)
	if err != nil {
		return nil, err
	}

	var sdcRoutes []Route
	for _, rf := range routeList {
		rm, err := rf.mapping()
		if err != nil {
			return nil, err
		}
		var r Route
		gf, err := rm.required("gateway")
		if err != nil {
			return nil, err
		}
		if r.Via, err = gf.addr(); err != nil {
			return nil, err
		}
		df, err := rm.required("dst")
		if err != nil {
			return nil, err
		}
		if r.To, err = parseDestination(df, field{}, field{}, r.Via); err != nil {
			return nil, err
		}
		if err := checkFamily(gf, r.Via, r.To.Addr().Is4()); err != nil {
			return nil, err
		}
		sdcRoutes = append(sdcRoutes, r)
	}

	c := &Config{}
	gw4, gw6 := false, false // a primary gateway was placed for the family
	seen := map[string]string{}
	for _, nf := range nicList {
		nm, err := nf.mapping()
		if err != nil {
			return nil, err
		}
		namef, err := nm.required("interface")
		if err != nil {
			return nil, err
		}
		name, err := namef.ifname()
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[name]; dup {
			return nil, namef.errorf("%q is already used by %s", name, prev)
		}
		seen[name] = nm.path
		ifc := Interface{ID: name, Kind: Physical, Name: name}
		if f := nm.get("mac"); f.present() {
			if ifc.MAC, err = f.mac(); err != nil {
				return nil, err
			}
		} else {
			ifc.MatchName = name
		}
		if f := nm.get("mtu"); f.present() {
			if ifc.MTU, err = f.mtu(); err != nil {
				return nil, err
			}
		}
		primary := false
		if f := nm.get("primary"); f.present() {
			if primary, err = f.boolean(); err != nil {
				return nil, err
			}
		}
		var gateways []field
		if primary {
			if gateways, err = nm.get("gateways").list(); err != nil {
				return nil, err
			}
		}
		ips, err := nm.get("ips").list()
		if err != nil {
			return nil, err
		}
		for _, ipf := range ips {
			s, err := ipf.str()
			if err != nil {
				return nil, err
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
				return nil, err
			}
			ifc.Addresses = append(ifc.Addresses, a)
			is4 := a.Addr().Is4()
			placed := &gw6
			if is4 {
				placed = &gw4
			}
			if !primary || *placed {
				continue
			}
			for _, gf := range gateways {
				gs, err := gf.str()
				if err != nil {
					return nil, err
				}
				// cloud-init picks the family by text: "." or ":".
				if is4 && !strings.Contains(gs, ".") || !is4 && !strings.Contains(gs, ":") {
					continue
				}
				gw, err := gf.addr()
				if err != nil {
					return nil, err
				}
				if err := checkFamily(gf, gw, is4); err != nil {
					return nil, err
				}
				ifc.Routes = append(ifc.Routes, defaultRoute(gw, 0))
				*placed = true
				break
			}
		}
		c.Interfaces = append(c.Interfaces, ifc)
	}
	placeRoutes(c, sdcRoutes)

	if len(resolverList) > 0 {
		for _, rf := range resolverList {
			a, err := rf.addr()
			if err != nil {
				return nil, err
			}
			c.DNS.Nameservers = append(c.DNS.Nameservers, a)
		}
		if d := strings.TrimSpace(dnsDomain); d != "" {
			if err := checkDomain(d); err != nil {
				return nil, fmt.Errorf("sdc:dns_domain: %w", err)
			}
			c.DNS.Search = []string{d}
		}
	}
	c.dedupeDNS()
	if err := c.checkFileNames(); err != nil {
		return nil, err
	}
	return c, nil
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
// which the apply reports as not applied live.
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
