package hotplug

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"
)

// Found in the systemd-booted guest: a NIC enslaved to a bond carries the
// bond's MAC, so the watcher named it by another NIC's address (or, with
// a generated bond MAC, by one the metadata does not list, and fetched
// the metadata again and again). A link is known by its own address.
func TestLinkInfoOfBondMember(t *testing.T) {
	own, _ := net.ParseMAC("52:54:00:5e:ed:12")
	bond, _ := net.ParseMAC("26:80:d7:6b:8a:ee")
	for _, tc := range []struct {
		name  string
		attrs netlink.LinkAttrs
	}{
		{"permanent address", netlink.LinkAttrs{Index: 3, Name: "eth1", EncapType: "ether", HardwareAddr: bond, PermHWAddr: own}},
		{"bond's record of it", netlink.LinkAttrs{Index: 3, Name: "eth1", EncapType: "ether", HardwareAddr: bond,
			Slave: &netlink.BondSlave{PermHardwareAddr: own}}},
	} {
		li := linkInfoOf(&netlink.Device{LinkAttrs: tc.attrs})
		if li.MAC != own.String() || !li.Ether {
			t.Errorf("%s: linkInfoOf = %+v, want MAC %s and ether", tc.name, li, own)
		}
	}
	li := linkInfoOf(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: 4, Name: "eth2", EncapType: "ether", HardwareAddr: own}})
	if li.MAC != own.String() {
		t.Errorf("a plain NIC: MAC %s, want its current one %s", li.MAC, own)
	}
}
