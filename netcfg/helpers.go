package netcfg

import (
	"net"
	"slices"
)

// MACs returns the MAC addresses of the physical interfaces, in
// configuration order, each once. These are the NICs the configuration
// can own.
func (c *Config) MACs() []string {
	var out []string
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		if ifc.Kind == Physical && ifc.MAC != "" && !slices.Contains(out, ifc.MAC) {
			out = append(out, ifc.MAC)
		}
	}
	return out
}

// ByMAC returns the interface that selects the link with this hardware
// address, in any notation net.ParseMAC reads, or nil. Physical entries
// come first: a bond or VLAN that sets the same MAC does not select a NIC.
func (c *Config) ByMAC(mac string) *Interface {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return nil
	}
	want := hw.String()
	var other *Interface
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		if ifc.MAC != want {
			continue
		}
		if ifc.Kind == Physical {
			return ifc
		}
		if other == nil {
			other = ifc
		}
	}
	return other
}

// Lookup returns the interface with this ID (the v2 key, the v1 name), or
// nil. Bond and bridge Links and VLANLink are such IDs.
func (c *Config) Lookup(id string) *Interface {
	for i := range c.Interfaces {
		if c.Interfaces[i].ID == id {
			return &c.Interfaces[i]
		}
	}
	return nil
}

// LinkName is the kernel name the entry's link has once configured: its
// Name, else (a v2 ethernet without set-name) its ID.
func (i *Interface) LinkName() string {
	if i.Name != "" {
		return i.Name
	}
	return i.ID
}

// Members returns the interfaces a bond or bridge enslaves, in order,
// skipping IDs the configuration does not define.
func (c *Config) Members(i *Interface) []*Interface {
	var out []*Interface
	for _, id := range i.Links {
		if m := c.Lookup(id); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// Master returns the bond or bridge that enslaves the interface, or nil.
func (c *Config) Master(i *Interface) *Interface {
	for j := range c.Interfaces {
		m := &c.Interfaces[j]
		if (m.Kind == Bond || m.Kind == Bridge) && slices.Contains(m.Links, i.ID) {
			return m
		}
	}
	return nil
}

// VLANs returns the VLANs whose link is the interface.
func (c *Config) VLANs(i *Interface) []*Interface {
	var out []*Interface
	for j := range c.Interfaces {
		v := &c.Interfaces[j]
		if v.Kind == VLAN && v.VLANLink == i.ID {
			out = append(out, v)
		}
	}
	return out
}

// HasL3 reports whether the interface asks for any address configuration:
// static addresses, DHCP or SLAAC.
func (i *Interface) HasL3() bool {
	return len(i.Addresses) > 0 || i.DHCP4 || i.DHCP6 || i.SLAAC
}
