package identity

import (
	"fmt"
	"strings"
)

// proxmoxVM is the part of a Proxmox VM config that reaches its NoCloud
// seed. Seeds are generated the way qemu-server's Cloudinit.pm does
// (docs/cloud-init.md, "Proxmox VE"): user-data from name/user/keys, v1
// network-config with one physical entry per netN that has an ipconfigN
// and one global nameserver entry, and meta-data holding only the SHA-1
// instance ID.
type proxmoxVM struct {
	Name       string
	User       string
	SSHKeys    []string
	NICs       []proxmoxNIC
	Nameserver []string // VM "nameserver"; empty: use the host's
	Search     []string // VM "searchdomain"; empty: use the host's
}

type proxmoxNIC struct {
	Index int    // N of netN / ipconfigN
	MAC   string // as in netN, any case
	IP    string // ipconfigN ip=: "dhcp" or "a.b.c.d/len"
	GW    string
}

// proxmoxHost is the host's /etc/resolv.conf as Proxmox reads it.
type proxmoxHost struct {
	Nameservers []string
	Search      []string
}

// seed returns user-data, network-config and meta-data.
func (vm proxmoxVM) seed(host proxmoxHost) (userData, networkConfig, metaData []byte) {
	var u strings.Builder
	u.WriteString("#cloud-config\n")
	host1, _, _ := strings.Cut(vm.Name, ".")
	fmt.Fprintf(&u, "hostname: %s\nmanage_etc_hosts: true\nfqdn: %s\n", host1, vm.Name)
	if vm.User != "" {
		fmt.Fprintf(&u, "user: %s\n", vm.User)
	}
	if len(vm.SSHKeys) > 0 {
		u.WriteString("ssh_authorized_keys:\n")
		for _, k := range vm.SSHKeys {
			fmt.Fprintf(&u, "  - %s\n", k)
		}
	}
	u.WriteString("chpasswd:\n  expire: False\nusers:\n  - default\npackage_upgrade: true\n")

	var n strings.Builder
	n.WriteString("version: 1\nconfig:\n")
	for _, nic := range vm.NICs {
		fmt.Fprintf(&n, "    - type: physical\n      name: eth%d\n      mac_address: '%s'\n      subnets:\n", nic.Index, strings.ToLower(nic.MAC))
		if nic.IP == "dhcp" {
			n.WriteString("      - type: dhcp4\n")
			continue
		}
		addr, mask := splitCIDR(nic.IP)
		fmt.Fprintf(&n, "      - type: static\n        address: '%s'\n        netmask: '%s'\n", addr, mask)
		if nic.GW != "" {
			fmt.Fprintf(&n, "        gateway: '%s'\n", nic.GW)
		}
	}
	ns, search := vm.Nameserver, vm.Search
	if len(ns) == 0 && len(search) == 0 {
		ns, search = host.Nameservers, host.Search
		if len(ns) > 3 {
			ns = ns[:3]
		}
	}
	n.WriteString("    - type: nameserver\n")
	if len(ns) > 0 {
		n.WriteString("      address:\n")
		for _, a := range ns {
			fmt.Fprintf(&n, "      - '%s'\n", a)
		}
	}
	if len(search) > 0 {
		n.WriteString("      search:\n")
		for _, s := range search {
			fmt.Fprintf(&n, "      - '%s'\n", s)
		}
	}
	userData, networkConfig = []byte(u.String()), []byte(n.String())
	metaData = []byte("instance-id: " + DerivedID(userData, networkConfig) + "\n")
	return userData, networkConfig, metaData
}

func splitCIDR(s string) (addr, mask string) {
	addr, l, _ := strings.Cut(s, "/")
	var bits int
	fmt.Sscan(l, &bits)
	m := uint32(0xffffffff) << (32 - bits)
	return addr, fmt.Sprintf("%d.%d.%d.%d", m>>24, m>>16&0xff, m>>8&0xff, m&0xff)
}
