package netcfg_test

import (
	"fmt"
	"sort"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

func ExampleParse() {
	// A Proxmox VE seed's network-config (cloud-init network config v1).
	seed := []byte(`version: 1
config:
    - type: physical
      name: eth0
      mac_address: 'bc:24:11:aa:bb:01'
      subnets:
      - type: static
        address: '192.0.2.10'
        netmask: '255.255.255.0'
        gateway: '192.0.2.1'
      - type: ipv6_slaac
    - type: nameserver
      address:
      - '192.0.2.53'
`)
	c, err := netcfg.Parse(seed)
	if err != nil {
		fmt.Println(err)
		return
	}
	eth0 := c.ByMAC("BC:24:11:AA:BB:01")
	fmt.Println(eth0.Name, eth0.Addresses, eth0.SLAAC)
	fmt.Println(eth0.Routes[0].To, "via", eth0.Routes[0].Via)
	fmt.Println(c.DNS.Nameservers)

	// One bad field leaves out what it belongs to, and says so.
	c, err = netcfg.Parse([]byte("version: 1\nconfig:\n- {type: physical, name: eth0, subnets: [{type: dhcp}, {type: static, address: 10.0.0.300/24}]}\n"))
	fmt.Println(err, c.Interfaces[0].DHCP4, c.Notes)
	// Output:
	// eth0 [192.0.2.10/24] true
	// 0.0.0.0/0 via 192.0.2.1
	// [192.0.2.53]
	// <nil> true [config[0].subnets[1].address: not an IP address; the subnet left out]
}

// Rendering for a stack: the files of its directory, each named for its
// link.
func ExampleStack_Render() {
	c, err := netcfg.Parse([]byte(`version: 2
ethernets:
  net0:
    match: {macaddress: "bc:24:11:aa:bb:01"}
    set-name: eth0
    addresses: [192.0.2.10/24]
    routes: [{to: default, via: 192.0.2.1, metric: 100}]
    nameservers: {addresses: [192.0.2.53], search: [example.lan]}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	sf, err := netcfg.Networkd.Render(netcfg.Detection{Stack: netcfg.Networkd}, c, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for name := range sf.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Println(sf.Dir)
	for _, name := range names {
		fmt.Printf("--- %s\n%s", name, sf.Files[name])
	}
	// Output:
	// /run/systemd/network
	// --- 05-seedkeeper-net0.network
	// # Written by seedkeeper; changes will be overwritten.
	//
	// [Match]
	// MACAddress=bc:24:11:aa:bb:01
	// Type=ether
	//
	// [Network]
	// KeepConfiguration=static
	// DHCP=no
	// Address=192.0.2.10/24
	// DNS=192.0.2.53
	// Domains=example.lan
	//
	// [Route]
	// Gateway=192.0.2.1
	// Metric=100
}

// A NIC the configuration names that is not present yet (the live plan's
// apply.Plan.Absent) gets its networkd file ahead, matched so that only a
// NIC of an allowed driver takes it.
func ExampleStack_RenderAhead() {
	c, err := netcfg.Parse([]byte(`version: 2
ethernets:
  net2:
    match: {macaddress: "bc:24:11:aa:bb:03"}
    set-name: eth2
    addresses: [10.0.3.20/24]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	notOwned := func(*netcfg.Interface) bool { return false }
	absent := func(i *netcfg.Interface) bool { return i.ID == "net2" }
	ahead, err := netcfg.Networkd.RenderAhead(c, notOwned, absent, []string{"virtio_net", "e1000"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s%s\n", ahead.Files["05-seedkeeper-net2.network"], ahead.Notes[0])
	// Output:
	// # Written by seedkeeper; changes will be overwritten.
	//
	// [Match]
	// MACAddress=bc:24:11:aa:bb:03
	// Type=ether
	// Driver=e1000 virtio_net
	//
	// [Network]
	// KeepConfiguration=static
	// DHCP=no
	// Address=10.0.3.20/24
	// eth2: not present; 05-seedkeeper-net2.network written ahead (MAC bc:24:11:aa:bb:03, drivers e1000 virtio_net), so networkd configures it from it the moment it appears
}

func ExampleCheck() {
	doc := []byte(`version: 2
ethernets:
  eth0:
    dhcp4: maybe
    addresses: [192.0.2.10/24]
`)
	for _, p := range netcfg.Check(doc) {
		fmt.Printf("%d:%d: %s\n", p.Line, p.Column, p.Msg)
	}
	// Output:
	// 4:12: ethernets.eth0.dhcp4: not a boolean; the setting left out
}

func ExampleConfig_Plan() {
	// A bond with an address on a member, and a global route that only
	// the bond's subnet reaches.
	c, err := netcfg.Parse([]byte(`version: 1
config:
- {type: physical, name: eth0, mac_address: 'bc:24:11:aa:bb:01', subnets: [{type: static, address: 10.9.0.5/24}]}
- {type: physical, name: eth1, mac_address: 'bc:24:11:aa:bb:02'}
- {type: bond, name: bond0, bond_interfaces: [eth0, eth1], subnets: [{type: static, address: 192.0.2.10/24}]}
- {type: route, destination: 198.51.100.0/24, gateway: 192.0.2.1}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	links, notes := c.Plan(nil)
	for _, l := range links {
		fmt.Println(l.ID, l.Addresses, len(l.Routes))
	}
	fmt.Println(notes)
	// Output:
	// eth0 [] 0
	// eth1 [] 0
	// bond0 [192.0.2.10/24] 1
	// [eth0: a member of bond0: its own addresses, routes, rules and DNS are left out (the bond carries them)]
}
