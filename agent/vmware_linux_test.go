package agent_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/nstest"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// The duties of cloud-init's VMware datasource that boot does: the wait
// wait-on-network asks for, and guestinfo.local-ipv4/-ipv6, through the
// stub vmware-rpctool and vmtoolsd, in a namespace of the test's own.

func (g *vmwareGuest) boot(t *testing.T, n *nstest.NS) (*agent.Status, *notifyLog, string) {
	t.Helper()
	log, nl := &syncBuffer{}, &notifyLog{}
	e := netEnv(g.root, n, log)
	e.Notify = nl.notify
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatalf("Boot: %v\n%s", err, log)
	}
	return st, nl, log.String()
}

// A NIC whose peer is up, so that IPv6 duplicate address detection runs.
func addLiveVeth(t *testing.T, n, peers *nstest.NS, name, mac string) {
	t.Helper()
	n.AddVeth(t, peers, name, mac)
	if err := peers.Netlink.LinkSetUp(peers.Link(t, "p-"+name)); err != nil {
		t.Fatal(err)
	}
}

// tentative lists the IPv6 addresses of name still in duplicate address
// detection, link-local ones left out.
func tentative(t *testing.T, n *nstest.NS, name string) []string {
	t.Helper()
	as, err := n.Netlink.AddrList(n.Link(t, name), netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		if a.Flags&unix.IFA_F_TENTATIVE != 0 && a.Scope == unix.RT_SCOPE_UNIVERSE {
			out = append(out, a.IPNet.String())
		}
	}
	return out
}

// wait-on-network's ipv6 holds boot until the static address is past
// duplicate address detection (before, boot went on with it tentative),
// and then both addresses are published through the tool that read the
// guestinfo, one info-set each, as cloud-init sends them.
func TestIntegrationBootVMwareWaitAndPublish(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", vmwareMetadata("wait-on-network: {ipv4: true, ipv6: 'yes'}\n"))
	addLiveVeth(t, n, peers, "eth0", vmwareMAC)

	st, nl, log := g.boot(t, n)
	if tt := tentative(t, n, "eth0"); len(tt) != 0 {
		t.Errorf("boot returned with %q still tentative: wait-on-network did not wait", tt)
	}
	if st.VMware == nil || !strings.HasPrefix(st.VMware.Wait, "wait-on-network asks for ipv4 and ipv6: ipv4 and ipv6 ready on the owned links after ") {
		t.Fatalf("status vmware = %+v\n%s", st.VMware, log)
	}
	want := []string{
		"vmware-rpctool|info-set guestinfo.local-ipv4 192.0.2.71",
		"vmware-rpctool|info-set guestinfo.local-ipv6 2001:db8:7::71",
		"vmware-rpctool|info-set guestinfo.cloudinit.updates.supported network=boot;boot-new-instance;hotplug",
		"vmware-rpctool|info-set guestinfo.cloudinit.updates.enabled network=boot;boot-new-instance;hotplug",
	}
	if got := g.sets(t); !slices.Equal(got, want) {
		t.Errorf("info-set calls %q, want %q", got, want)
	}
	if g.get("local-ipv4") != "192.0.2.71" || g.get("local-ipv6") != "2001:db8:7::71" {
		t.Errorf("VMX holds local-ipv4 %q, local-ipv6 %q", g.get("local-ipv4"), g.get("local-ipv6"))
	}
	if !slices.Equal(st.VMware.Published[:2], []string{"guestinfo.local-ipv4 192.0.2.71", "guestinfo.local-ipv6 2001:db8:7::71"}) {
		t.Errorf("published = %q", st.VMware.Published)
	}
	if saved := readStatus(t, g.root); saved.VMware == nil || saved.VMware.Wait != st.VMware.Wait {
		t.Errorf("status file vmware = %+v", saved.VMware)
	}
	if !strings.Contains(log, "vmware: published guestinfo.local-ipv6 2001:db8:7::71") {
		t.Errorf("log lacks the publication:\n%s", log)
	}
	_ = nl
}

// A wait that cannot end (no carrier: the IPv6 address stays tentative)
// ends at vmware.network_wait with a progress line extending systemd's
// timeout, sent as the wait begins (a wait shorter than the progress
// interval still extends it: boot may come to it with little of the
// timeout left); the boot still succeeds, says so, and publishes what it
// has.
func TestIntegrationBootVMwareWaitBounded(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "vmware:\n  network_wait: 1s\n")
	g.set(t, "metadata", vmwareMetadata("wait-on-network:\n  ipv6: true\n"))
	n.AddVeth(t, peers, "eth0", vmwareMAC) // peer down: no carrier

	st, nl, _ := g.boot(t, n)
	if st.Outcome != "ok" {
		t.Errorf("outcome %q, want ok", st.Outcome)
	}
	const head = "wait-on-network asks for ipv6: ipv6 NOT ready after "
	if st.VMware == nil || !strings.HasPrefix(st.VMware.Wait, head) ||
		!strings.HasSuffix(st.VMware.Wait, " (the limit, vmware.network_wait, is 1s): no usable ipv6 address on the owned links; going on") {
		t.Errorf("status vmware wait = %q", st.VMware.Wait)
	}
	ext := false
	for _, l := range nl.lines() {
		ext = ext || strings.HasPrefix(l, "EXTEND_TIMEOUT_USEC=")
	}
	progress := false
	for _, l := range nl.lines() {
		progress = progress || strings.HasPrefix(l, "STATUS=waiting for ipv6 on the owned links (") && strings.HasSuffix(l, " of at most 1s)")
	}
	if !progress || !ext {
		t.Errorf("no progress line with EXTEND_TIMEOUT_USEC while waiting: %q", nl.lines())
	}
	// IPv4 is up (its default route's link has one address); IPv6 is not.
	if got, want := g.localSets(t), []string{"vmware-rpctool|info-set guestinfo.local-ipv4 192.0.2.71"}; !slices.Equal(got, want) {
		t.Errorf("info-set calls %q, want %q", got, want)
	}
	if !slices.Contains(st.VMware.Notes, "eth0, which holds the IPv6 default route, has no usable IPv6 address") {
		t.Errorf("notes %q", st.VMware.Notes)
	}
}

// vmware.network_wait 0 turns the wait off, and the status still says
// why each family asked for was not waited for.
func TestIntegrationBootVMwareWaitOff(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "vmware:\n  network_wait: 0s\n")
	g.set(t, "metadata", `instance-id: i-vmware-off
wait-on-network: {ipv4: true, ipv6: true}
network:
  version: 2
  ethernets:
    lan:
      match: {macaddress: "`+vmwareMAC+`"}
      addresses: [192.0.2.74/24]
      dhcp6: true
`)
	addLiveVeth(t, n, peers, "eth0", vmwareMAC)
	st, nl, _ := g.boot(t, n)
	want := "wait-on-network asks for ipv4 and ipv6: ipv4 not waited for: vmware.network_wait is 0; " +
		"ipv6 not waited for in boot: the owned links have no static address of that family, and their DHCP or router advertisements are handled by the network stack, which starts after seedkeeper-boot"
	if st.VMware == nil || st.VMware.Wait != want {
		t.Errorf("wait = %+v, want %q", st.VMware, want)
	}
	for _, l := range nl.lines() {
		if strings.Contains(l, "EXTEND_TIMEOUT_USEC=") {
			t.Errorf("a wait that is off extended the start timeout: %q", l)
		}
	}
}

// A family the owned links get only from DHCP is not waited for in boot
// (the stack's DHCP client starts after it), and the status says so; with
// no wait asked, nothing is waited for.
func TestIntegrationBootVMwareWaitDHCP(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", `instance-id: i-vmware-dhcp
wait-on-network: {ipv4: true}
network:
  version: 2
  ethernets:
    lan:
      match: {macaddress: "`+vmwareMAC+`"}
      dhcp4: true
`)
	addLiveVeth(t, n, peers, "eth0", vmwareMAC)
	st, _, _ := g.boot(t, n)
	want := "wait-on-network asks for ipv4: ipv4 not waited for in boot: the owned links have no static address of that family, and their DHCP or router advertisements are handled by the network stack, which starts after seedkeeper-boot"
	if st.VMware == nil || st.VMware.Wait != want {
		t.Errorf("wait = %+v, want %q", st.VMware, want)
	}
	if got := g.localSets(t); len(got) != 0 {
		t.Errorf("published %q with no address up", got)
	}
	if !slices.Contains(st.VMware.Notes, "eth0, which holds the IPv4 default route, has no usable IPv4 address") &&
		!slices.Contains(st.VMware.Notes, "no owned link holds the IPv4 default route") {
		t.Errorf("notes %q", st.VMware.Notes)
	}
}

// cloud-init publishes an address only when the default route's link has
// exactly one of that family; secure RPC (vmware-rpctool refused) makes
// both the read and the publication go through vmtoolsd; a failed
// info-set is a status note, not a failed boot.
func TestIntegrationBootVMwarePublishRules(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	t.Setenv("GUESTINFO_FAIL_RPCTOOL", "Permission denied")
	g.set(t, "metadata", `instance-id: i-vmware-2
network:
  version: 2
  ethernets:
    lan:
      match: {macaddress: "`+vmwareMAC+`"}
      addresses: [192.0.2.72/24, 192.0.2.73/24, "2001:db8:7::72/64"]
      routes:
        - {to: default, via: 192.0.2.1}
`)
	g.set(t, "local-ipv6.fail-vmtoolsd", "Permission denied\n")
	n.AddVeth(t, peers, "eth0", vmwareMAC)
	if err := n.Netlink.LinkSetUp(n.Link(t, "eth0")); err != nil {
		t.Fatal(err)
	}
	st, _, log := g.boot(t, n)
	if st.Outcome != "ok" || st.Transport != "vmtoolsd" {
		t.Fatalf("outcome %q via %q\n%s", st.Outcome, st.Transport, log)
	}
	// IPv4: two addresses on the default route's link, none published.
	// IPv6: no IPv6 default route; the one IPv6 address of the link
	// holding the IPv4 pick would be taken, but there is no IPv4 pick.
	if got := g.localSets(t); len(got) != 0 {
		t.Errorf("info-set calls %q, want none", got)
	}
	if !slices.Contains(st.VMware.Notes, "eth0, which holds the IPv4 default route, has 2 IPv4 addresses (cloud-init publishes only a single one)") {
		t.Errorf("notes %q", st.VMware.Notes)
	}
}

// Boot publishes once, before the stack's DHCP client has run; the
// address a lease brings later (here added as a DHCP client adds it: the
// address, then the default route) is published by seedkeeper watch, once.
func TestIntegrationWatchVMwarePublishesLaterAddress(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", `instance-id: i-vmware-lease
network:
  version: 2
  ethernets:
    lan:
      match: {macaddress: "`+vmwareMAC+`"}
      dhcp4: true
`)
	addLiveVeth(t, n, peers, "eth0", vmwareMAC)
	st, _, _ := g.boot(t, n)
	if got := g.localSets(t); len(got) != 0 || st.Network == nil || !slices.Equal(st.Network.Links, []string{"eth0"}) {
		t.Fatalf("boot published %q; owned links %+v", got, st.Network)
	}
	w := startWatch(t, n, g.root, "veth")
	waitFor(t, "READY from watch", func() bool { return w.notify.has("READY=1") })

	l := n.Link(t, "eth0")
	addr, _ := netlink.ParseAddr("192.0.2.99/24")
	if err := n.Netlink.AddrAdd(l, addr); err != nil {
		t.Fatal(err)
	}
	gw, _ := netlink.ParseAddr("192.0.2.1/32")
	if err := n.Netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw.IP}); err != nil {
		t.Fatal(err)
	}
	w.waitLog(t, "vmware: published guestinfo.local-ipv4 192.0.2.99 (the owned addresses changed)")
	w.stop(t)
	want := []string{"vmware-rpctool|info-set guestinfo.local-ipv4 192.0.2.99"}
	if got := g.localSets(t); !slices.Equal(got, want) {
		t.Errorf("info-set calls %q, want %q (once)", got, want)
	}
	if g.get("local-ipv4") != "192.0.2.99" {
		t.Errorf("VMX holds %q", g.get("local-ipv4"))
	}
	// seedkeeper status is told: the watch's record of this boot has the
	// key it set, and not eth0, which boot applied.
	rec := watchRecord(t, g.root)
	if k := rec.Key("guestinfo.local-ipv4"); k == nil || k.Value != "192.0.2.99" || k.At.IsZero() || k.Failed != nil {
		t.Errorf("the watch's record of guestinfo.local-ipv4: %+v", k)
	}
	if rec.Key("guestinfo.local-ipv6") != nil || len(rec.Hotplug) != 0 {
		t.Errorf("the watch's record has what it did not do: %+v", rec)
	}
}

// watchRecord reads what seedkeeper watch recorded under root.
func watchRecord(t *testing.T, root string) *agent.WatchRecord {
	t.Helper()
	rec, warn, err := agent.ReadWatchRecord(sysroot.Root(root))
	if err != nil || len(warn) != 0 {
		t.Fatalf("the watch's record: %v %q", err, warn)
	}
	if rec.BootID != agent.CurrentBootID(sysroot.Root(root)) {
		t.Errorf("the watch's record names boot %q, not this one", rec.BootID)
	}
	return rec
}

// A VMX that refuses info-set (isolation.tools.setinfo.disable) is not
// asked again on every address or route event: each change of the
// IPv6 pick below wakes the watch, and the refused IPv4 key, tried once
// at boot and once as the watch starts, is then left to back off
// (before, every event ran the tool again).
func TestIntegrationWatchVMwareBacksOffAfterFailedSet(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", vmwareMetadata(""))
	g.set(t, "local-ipv4.fail-vmware-rpctool", "Permission denied\n")
	addLiveVeth(t, n, peers, "eth0", vmwareMAC)
	g.boot(t, n)
	w := startWatch(t, n, g.root, "veth")
	waitFor(t, "READY from watch", func() bool { return w.notify.has("READY=1") })
	w.waitLog(t, "vmware: publishing guestinfo.local-ipv4 failed; trying again in 30s at the earliest")

	l := n.Link(t, "eth0")
	prev := "2001:db8:7::71/64"
	for _, a := range []string{"2001:db8:7::81/64", "2001:db8:7::82/64", "2001:db8:7::83/64"} {
		na, _ := netlink.ParseAddr(a)
		na.Flags = unix.IFA_F_NODAD
		if err := n.Netlink.AddrAdd(l, na); err != nil {
			t.Fatal(err)
		}
		old, _ := netlink.ParseAddr(prev)
		if err := n.Netlink.AddrDel(l, old); err != nil {
			t.Fatal(err)
		}
		prev = a
		w.waitLog(t, "vmware: published guestinfo.local-ipv6 "+strings.TrimSuffix(a, "/64")+" (the owned addresses changed)")
	}
	w.stop(t)
	var v4 []string
	for _, c := range g.localSets(t) {
		if strings.Contains(c, "guestinfo.local-ipv4 ") {
			v4 = append(v4, c)
		}
	}
	if len(v4) != 2 {
		t.Errorf("info-set of the refused guestinfo.local-ipv4 ran %d times, want 2 (boot, and the watch's first try): %q", len(v4), v4)
	}
	if g.get("local-ipv6") != "2001:db8:7::83" {
		t.Errorf("VMX holds local-ipv6 %q", g.get("local-ipv6"))
	}
	// The record has the refused key's failure and back-off, and the last
	// IPv6 address set.
	rec := watchRecord(t, g.root)
	k := rec.Key("guestinfo.local-ipv4")
	if k == nil || k.Value != "" || k.Failed == nil || k.Failed.Value != "192.0.2.71" ||
		!strings.Contains(k.Failed.Error, "Permission denied") || k.Failed.RetryAt.Sub(k.Failed.At) < 29*time.Second {
		t.Errorf("the watch's record of the refused guestinfo.local-ipv4: %+v %+v", k, k.Failed)
	}
	if k := rec.Key("guestinfo.local-ipv6"); k == nil || k.Value != "2001:db8:7::83" || k.Failed != nil {
		t.Errorf("the watch's record of guestinfo.local-ipv6: %+v", k)
	}
}

// A boot and a watch that are not on VMware do nothing of the VMware
// step, with the tools installed: no tool runs (nothing read, nothing
// published, not even when a NIC is hot-added), no wait, no status.
func TestIntegrationNotVMwareRunsNoTool(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "") // only for the stub tools in $PATH and their log
	const mac, added = "02:5e:00:00:07:11", "02:5e:00:00:07:12"
	root := netSeedRoot(t, hotplugNetworkConfig(map[string]string{mac: "192.0.2.81/24", added: "192.0.2.82/24"}))
	addLiveVeth(t, n, peers, "eth0", mac)
	log, nl := &syncBuffer{}, &notifyLog{}
	e := netEnv(root, n, log)
	e.Notify = nl.notify
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkApply})
	if err != nil || st.Source != "nocloud" || st.Network == nil || st.Network.Action != "applied" {
		t.Fatalf("Boot: %v, %+v\n%s", err, st, log)
	}
	if st.VMware != nil {
		t.Errorf("a NoCloud boot has a VMware status: %+v", st.VMware)
	}
	w := startWatch(t, n, root, "veth")
	waitFor(t, "READY from watch", func() bool { return w.notify.has("READY=1") })
	addLiveVeth(t, n, peers, "eth1", added)
	waitFor(t, "eth1's address", func() bool { return n.HasAddr(t, "eth1", "192.0.2.82/24") })
	w.stop(t)
	if b, err := os.ReadFile(g.log); !os.IsNotExist(err) {
		t.Errorf("a guestinfo tool ran (%v):\n%s", err, b)
	}
	for _, l := range append(nl.lines(), w.notify.lines()...) {
		if strings.Contains(l, "EXTEND_TIMEOUT_USEC=") {
			t.Errorf("a NoCloud boot waited: %q", l)
		}
	}
	if strings.Contains(log.String(), "vmware:") || strings.Contains(w.log.String(), "vmware:") {
		t.Errorf("VMware lines in a NoCloud boot's log:\n%s\n%s", log, w.log)
	}
}
