package agent_test

import (
	"slices"
	"strings"
	"testing"
)

// cloud-init's fallback on VMware: metadata without a network key gets
// DHCP on the first NIC seedkeeper may own (one with a carrier before one
// without, in name order), said in the status; a NIC whose driver is not
// on the allowlist is never the one.
func TestIntegrationBootVMwareDHCPFallback(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespaces: run without -short, as root (sudo make test)")
	}
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
