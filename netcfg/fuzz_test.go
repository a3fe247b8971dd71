package netcfg

import (
	"encoding/json"
	"testing"
)

// checkAccepted is what every accepted configuration must allow: MarshalV1
// works, Parse reads its output back, and the v1 form is a fixed point.
func checkAccepted(t *testing.T, c *Config) {
	t.Helper()
	out, err := c.MarshalV1()
	if err != nil {
		t.Fatalf("MarshalV1: %v\n%+v", err, c)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("re-Parse: %v\n%s", err, out)
	}
	again, err := back.MarshalV1()
	if err != nil || string(again) != string(out) {
		t.Fatalf("MarshalV1 not a fixed point (%v):\n%s\n---\n%s", err, out, again)
	}
	checkNetworkdRoundTrip(t, c)
}

func FuzzParse(f *testing.F) {
	for _, fx := range validFixtures(f) {
		if !fx.smarts {
			f.Add(fx.data)
		}
	}
	for _, s := range []string{
		"version: 1\nconfig:\n- type: nameserver\n",
		"network: {config: disabled}",
		"version: 2\nethernets: {eth0: {addresses: ['10.0.0.1/8'], routes: [{to: default, via: '::1'}]}}",
		"version: 1\nconfig: [{type: physical, name: a, subnets: [{type: static, address: '::', netmask: 'ffff::'}]}]",
		"version: 2\nbonds: {b: {interfaces: [x], parameters: {path-cost: {x: 5}}}}",
		"version: 2\nbonds: {b: {interfaces: [x], parameters: {foo_bar: 1, mode: 4, gratuitious-arp: 2}}}",
		"version: 2\nbridges: {br: {interfaces: [e], parameters: {path-cost: [a, b], stp: on}}}",
		"version: 2\nethernets: {a: {set-name: b}, c: {match: {}, routes: [{to: default}], accept-ra: yes}}",
		"version: 1\nconfig: [{type: physical, name: e, accept-ra: 'yes'}, {type: nameserver, interface: e, search: x}]",
		"version: 1\nconfig: [{type: bond, name: b, bond_interfaces: [], params: {mode: 1, bond_miimon: 5}, subnets: [{type: manual, routes: [{network: 10.0.0.0/8}]}]}]",
		// One seed per key the network-config meaning work added.
		"version: 2\nethernets: {e: {dhcp6: true, accept-ra: false}}",
		"version: 2\nethernets: {e: {addresses: [10.0.0.2/8], routes: [{to: 10.1.2.3, via: 10.0.0.1, on-link: true, type: unicast}, {to: '::1', type: blackhole}]}}",
		"version: 2\nethernets: {e: {dhcp4: true, optional: yes, dhcp-identifier: mac}}",
		"version: 2\nethernets: {e: {dhcp4: true, dhcp6: true, dhcp4-overrides: {use-dns: false, use-ntp: no, use-hostname: false, use-domains: route, use-routes: false, use-mtu: false, send-hostname: false, hostname: h.example, route-metric: 9}, dhcp6-overrides: {use-dns: false, route-metric: 5, hostname: 'a b'}}}",
		"version: 2\nethernets: {e: {macaddress: '02:00:00:00:00:01', match: {macaddress: '52:54:00:00:00:01'}}, f: {}}\nbonds: {b: {interfaces: [f], macaddress: '02:00:00:00:00:02'}}\nvlans: {v: {id: 5, link: e, macaddress: x}}",
		"version: 2\nethernets: {e: {}, f: {}}\nbridges: {br: {interfaces: [e, f], parameters: {path-cost: {e: 50, f: x}, port-priority: {e: 7}}}}",
		"version: 2\nethernets: {e: {addresses: [10.0.0.2/8], routing-policy: [{from: 10.0.0.0/8, table: 100, priority: 10, mark: 3, type-of-service: 8}, {to: '2001:db8::1'}, {table: 5}, {from: 10.0.0.0/8, to: '::/0'}]}}",
		"version: 2\nrenderer: networkd\nethernets: {e: {wakeonlan: true, link-local: [], critical: true, ignore-carrier: true, generic-receive-offload: false, routes: [{to: default, via: 10.0.0.1, mtu: 1400}], \"k\\ney\": 1}}\ntunnels: {t: {mode: gre}}\nwifis: [x]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		checkAccepted(t, c)
	})
}

func FuzzFromSmartOS(f *testing.F) {
	for _, fx := range validFixtures(f) {
		if !fx.smarts {
			continue
		}
		var sc sdcCase
		if err := json.Unmarshal(fx.data, &sc); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(sc.Nics), []byte(sc.Routes), []byte(sc.Resolvers), sc.DNSDomain)
	}
	f.Add([]byte(`[{"interface":"net0","ips":["addrconf","dhcp","::1/128"],"primary":"true","gateways":["::2"]}]`), []byte(`null`), []byte(`[]`), "")
	f.Fuzz(func(t *testing.T, nics, routes, resolvers []byte, domain string) {
		c, err := FromSmartOS(nics, routes, resolvers, domain)
		if err != nil {
			return
		}
		checkAccepted(t, c)
	})
}
