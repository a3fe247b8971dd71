package agent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// cloud-init's fallback on VMware: metadata without a network key gets
// DHCP on the first NIC seedkeeper may own (one with a carrier before one
// without, in name order), said in the status; a NIC whose driver is not
// on the allowlist is never the one.
func TestIntegrationBootVMwareDHCPFallback(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", "instance-id: i-fallback\n")
	n.AddVeth(t, peers, "eth10", "02:5e:00:00:07:10") // no carrier: its peer is down
	addLiveVeth(t, n, peers, "eth2", "02:5e:00:00:07:02")
	addLiveVeth(t, n, peers, "eth1", vmwareMAC)
	if err := n.Netlink.LinkSetUp(n.Link(t, "eth1")); err != nil {
		t.Fatal(err)
	}
	if err := n.Netlink.LinkSetUp(n.Link(t, "eth2")); err != nil {
		t.Fatal(err)
	}

	st, _, log := g.boot(t, n)
	want := "no network configuration in the metadata: DHCP on eth1 (" + vmwareMAC + "), the first NIC seedkeeper may own, as cloud-init's fallback"
	if st.VMware == nil || st.VMware.Fallback != want {
		t.Fatalf("vmware status %+v, want fallback %q\n%s", st.VMware, want, log)
	}
	if st.Network == nil || st.Network.Action != "applied" || !slices.Equal(st.Network.Links, []string{"eth1"}) {
		t.Errorf("network %+v", st.Network)
	}

	// The allowlist decides: with no driver allowed, no fallback.
	g2 := newVMwareGuest(t, "")
	g2.set(t, "metadata", "instance-id: i-fallback\nnetwork-drivers: [vmxnet3]\n")
	st, _, log = g2.boot(t, n)
	if st.VMware == nil || !strings.HasPrefix(st.VMware.Fallback, "no network configuration in the metadata: no DHCP fallback: no NIC with a driver on the allowlist") {
		t.Errorf("vmware status %+v\n%s", st.VMware, log)
	}
	if st.Network == nil || st.Network.Action != "skipped" {
		t.Errorf("network %+v", st.Network)
	}
}

// A traditional spec applied in a namespace of the test's own: each NIC
// by its MAC, the static addresses and the default route through the
// first gateway, and no IPv4 at all on a NIC whose IPv4_MODE is DISABLED.
func TestIntegrationBootVMwareIMCNetwork(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	g.spec(t, `[NETWORK]
HOSTNAME = imc-net
[NIC-CONFIG]
NICS = NIC1,NIC2
[NIC1]
MACADDR = 02:5E:00:00:08:01
BOOTPROTO = static
IPADDR = 192.0.2.81
NETMASK = 255.255.255.0
GATEWAY = 192.0.2.1, 192.0.2.2
[NIC2]
MACADDR = 02:5e:00:00:08:02
IPv4_MODE = DISABLED
BOOTPROTO = dhcp
IPv6ADDR|1 = 2001:db8:8::82
IPv6NETMASK|1 = 64
[MISC]
INSTANCE-ID = imc-net-1
`)
	addLiveVeth(t, n, peers, "eth0", "02:5e:00:00:08:01")
	addLiveVeth(t, n, peers, "eth1", "02:5e:00:00:08:02")
	st, _, log := g.boot(t, n)
	if st.Transport != "imc" || st.Network == nil || st.Network.Action != "applied" || len(st.Network.Failed) != 0 {
		t.Fatalf("transport %q network %+v\n%s", st.Transport, st.Network, log)
	}
	addrs := func(name string, family int) []string {
		as, err := n.Netlink.AddrList(n.Link(t, name), family)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range as {
			if a.IP.IsLinkLocalUnicast() {
				continue
			}
			out = append(out, a.IPNet.String())
		}
		return out
	}
	if got := addrs("eth0", netlink.FAMILY_V4); !slices.Equal(got, []string{"192.0.2.81/24"}) {
		t.Errorf("eth0 IPv4 %q", got)
	}
	if got := addrs("eth1", netlink.FAMILY_V4); len(got) != 0 {
		t.Errorf("eth1 has IPv4 %q: IPv4_MODE DISABLED means none", got)
	}
	if got := addrs("eth1", netlink.FAMILY_V6); !slices.Equal(got, []string{"2001:db8:8::82/64"}) {
		t.Errorf("eth1 IPv6 %q", got)
	}
	routes, err := n.Netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var defaults []string
	for _, r := range routes {
		if r.Dst == nil || r.Dst.String() == "0.0.0.0/0" {
			defaults = append(defaults, r.Gw.String())
		}
	}
	if !slices.Equal(defaults, []string{"192.0.2.1"}) {
		t.Errorf("IPv4 default routes via %q, want only 192.0.2.1", defaults)
	}
	if st.VMware == nil || st.VMware.Fallback != "" {
		t.Errorf("vmware status %+v: a spec with NICs gets no fallback", st.VMware)
	}
	// Nor does the network stack get a DHCPv4 client for it.
	var eth1 string
	for _, p := range st.Network.Rendered {
		b, err := os.ReadFile(filepath.Join(g.root, "/run/systemd/network", p))
		if err == nil && strings.Contains(string(b), "02:5e:00:00:08:02") {
			eth1 = string(b)
		}
	}
	if eth1 == "" || strings.Contains(eth1, "DHCP=yes") || strings.Contains(eth1, "DHCP=ipv4") || strings.Contains(eth1, "inet dhcp") || strings.Contains(eth1, "method=auto\n[ipv6]") {
		t.Errorf("stack %q: the file rendered for eth1 is missing or asks for DHCPv4:\n%s\n(rendered %q)", st.Network.Stack, eth1, st.Network.Rendered)
	}

	// A reboot: /run is empty (the spec and the rendered files gone), the
	// NICs have no address, guestinfo is still empty. The kept spec
	// gives the same network again.
	if err := os.RemoveAll(filepath.Join(g.root, "run")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(g.root, "var/run/vmware-imc")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"eth0", "eth1"} {
		for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			as, err := n.Netlink.AddrList(n.Link(t, name), fam)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range as {
				if !a.IP.IsLinkLocalUnicast() {
					if err := n.Netlink.AddrDel(n.Link(t, name), &a); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if got := addrs("eth0", netlink.FAMILY_V4); len(got) != 0 {
		t.Fatalf("eth0 still has %q", got)
	}
	st, _, log = g.boot(t, n)
	if st.Transport != "imc" || st.Identity == nil || st.Identity.InstanceID != "imc-net-1" || st.Identity.Changed {
		t.Fatalf("the boot after: transport %q identity %+v\n%s", st.Transport, st.Identity, log)
	}
	if st.Network == nil || st.Network.Action != "applied" || len(st.Network.Failed) != 0 {
		t.Fatalf("the boot after: network %+v\n%s", st.Network, log)
	}
	if got := addrs("eth0", netlink.FAMILY_V4); !slices.Equal(got, []string{"192.0.2.81/24"}) {
		t.Errorf("the boot after: eth0 IPv4 %q", got)
	}
	if got := addrs("eth1", netlink.FAMILY_V6); !slices.Equal(got, []string{"2001:db8:8::82/64"}) {
		t.Errorf("the boot after: eth1 IPv6 %q", got)
	}
}
