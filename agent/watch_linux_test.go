package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// hotplugNetworkConfig configures, by MAC, one static address per entry.
func hotplugNetworkConfig(nics map[string]string) string {
	var b strings.Builder
	b.WriteString("version: 2\nethernets:\n")
	for _, mac := range slices.Sorted(func(yield func(string) bool) {
		for m := range nics {
			if !yield(m) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "  %s:\n    match: {macaddress: %q}\n    addresses: [%s]\n", nicID(mac), mac, nics[mac])
	}
	return b.String()
}

// nicID is the name hotplugNetworkConfig gives the NIC with mac.
func nicID(mac string) string { return "nic" + strings.ReplaceAll(mac[len(mac)-5:], ":", "") }

// netSeedRoot makes a root whose NoCloud seed is in the nocloud-net seed
// directory (read afresh on every fetch: the test changes it as metadata
// changes) with the given network-config ("" for none), and boots once
// without touching the network, so that the identity state and the seed
// for cloud-init exist.
func netSeedRoot(t *testing.T, networkConfig string) string {
	t.Helper()
	root := kvmRoot(t, map[string]string{
		"var/lib/cloud/seed/nocloud-net/meta-data": "instance-id: iid-hotplug\nlocal-hostname: hp\n",
		"var/lib/cloud/seed/nocloud-net/user-data": "#cloud-config\n",
	})
	if networkConfig != "" {
		setNetworkConfig(t, root, networkConfig)
	}
	if _, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{Network: agent.NetworkOff}); err != nil {
		t.Fatalf("Boot: %v", err)
	}
	return root
}

// setNetworkConfig replaces the metadata's network-config atomically.
func setNetworkConfig(t *testing.T, root, data string) {
	t.Helper()
	p := filepath.Join(root, "var/lib/cloud/seed/nocloud-net/network-config")
	writeFile(t, p+".tmp", data)
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationWatchHotplugVeth(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	const (
		macStart = "02:5e:00:00:01:01" // there before watch starts
		macAdded = "02:5e:00:00:01:02" // added later, in the metadata
		macLate  = "02:5e:00:00:01:03" // added before the metadata lists it
	)
	nics := map[string]string{macStart: "192.0.2.11/24", macAdded: "192.0.2.12/24"}
	root := netSeedRoot(t, hotplugNetworkConfig(nics))
	identityFile := filepath.Join(root, "var/lib/seedkeeper/identity.json")
	metaData := filepath.Join(root, "var/lib/cloud/seed/nocloud/meta-data")
	before := map[string]fileState{"identity.json": statFile(t, identityFile), "meta-data": statFile(t, metaData)}

	n.AddVeth(t, peers, "eth1", macStart)
	w := startWatch(t, n, root, "veth")

	// READY comes after the first reconcile: the NIC that was there
	// before watch started already has its address.
	waitFor(t, "READY=1", func() bool { return w.notify.has("READY=1") })
	if !n.HasAddr(t, "eth1", "192.0.2.11/24") {
		t.Errorf("READY=1 sent before the NIC present at start was applied: eth1 has %q\n%s", n.Addrs(t, "eth1"), w.log)
	}

	n.AddVeth(t, peers, "eth2", macAdded)
	waitFor(t, "eth2's address", func() bool { return n.HasAddr(t, "eth2", "192.0.2.12/24") })
	if l := n.Link(t, "eth2"); l.Attrs().Flags&net.FlagUp == 0 {
		t.Error("eth2 is not up")
	}

	// The metadata lags the device (cloud-init GH #5373): applied once
	// a re-fetch finds the MAC.
	n.AddVeth(t, peers, "eth3", macLate)
	w.waitLog(t, "the metadata does not list eth3 ("+macLate)
	nics[macLate] = "192.0.2.13/24"
	setNetworkConfig(t, root, hotplugNetworkConfig(nics))
	waitFor(t, "eth3's address", func() bool { return n.HasAddr(t, "eth3", "192.0.2.13/24") })
	// The networkd files are rendered after the live apply.
	waitFor(t, "a networkd file for each applied NIC", func() bool { return len(networkdFiles(root, ".network")) == 3 })
	// The record is written as the loop hears the apply's result.
	waitFor(t, "the watch's record of the three", func() bool {
		r, _, err := agent.ReadWatchRecord(sysroot.Root(root))
		return err == nil && len(r.Hotplug) == 3
	})

	w.stop(t)
	if !w.notify.has("STOPPING=1") || !slices.ContainsFunc(w.notify.lines(), func(s string) bool { return strings.HasPrefix(s, "STATUS=watching links for veth") }) {
		t.Errorf("sd_notify lines: %q", w.notify.lines())
	}
	// The hotplug path never writes the identity state or the seed.
	after := map[string]fileState{"identity.json": statFile(t, identityFile), "meta-data": statFile(t, metaData)}
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s changed across hotplug events:\n%+v\n%+v", name, b, after[name])
		}
	}
	// seedkeeper status is told: boot (run without the network) applied
	// none of them, the watch all three. The late one was looked for
	// and not found first, which is no result.
	rec := watchRecord(t, root)
	var got []string
	for _, n := range rec.Hotplug {
		for _, ev := range n.Events {
			got = append(got, n.MAC+" "+ev.Name+" "+ev.Result+ev.Error)
		}
	}
	if want := []string{macStart + " eth1 applied", macAdded + " eth2 applied", macLate + " eth3 applied"}; !slices.Equal(got, want) {
		t.Errorf("the watch's record: %q, want %q", got, want)
	}
	for _, mac := range []string{macStart, macAdded, macLate} {
		f := filepath.Join(root, agent.NetworkDir, "05-seedkeeper-"+nicID(mac)+".network")
		if b, err := os.ReadFile(f); err != nil || !strings.Contains(string(b), mac) {
			t.Errorf("networkd file for %s: %v\n%s", mac, err, b)
		}
	}
}

// A bridge, and a veth when veth is not allowlisted, are left alone even
// though the metadata lists their MACs, and cost no metadata fetch (the
// docker veth storm, cloud-init LP #1946003).
func TestIntegrationWatchLeavesOtherLinksAlone(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	const macVeth, macBridge, macTap = "02:5e:00:00:02:01", "02:5e:00:00:02:02", "02:5e:00:00:02:03"
	root := netSeedRoot(t, hotplugNetworkConfig(map[string]string{
		macVeth: "192.0.2.21/24", macBridge: "192.0.2.22/24", macTap: "192.0.2.23/24",
	}))
	w := startWatch(t, n, root, "tun")
	waitFor(t, "READY=1", func() bool { return w.notify.has("READY=1") })

	n.AddVeth(t, peers, "eth1", macVeth)
	if err := n.Netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br1", HardwareAddr: mustMAC(macBridge)}}); err != nil {
		t.Fatal(err)
	}
	// The tap (driver tun, allowlisted) comes last: once it has its
	// address, the events before it have been judged.
	addTap(t, n, peers, "tap1", macTap)
	waitFor(t, "tap1's address", func() bool { return n.HasAddr(t, "tap1", "192.0.2.23/24") })
	w.stop(t)

	for _, name := range []string{"eth1", "br1"} {
		l := n.Link(t, name)
		if a := n.Addrs(t, name); len(a) != 0 || l.Attrs().Flags&net.FlagUp != 0 {
			t.Errorf("%s was touched: addresses %q, flags %v", name, a, l.Attrs().Flags)
		}
	}
	if got := strings.Count(w.log.String(), `msg="nocloud seed read"`); got != 1 {
		t.Errorf("%d metadata fetches, want 1 (the tap's only)\n%s", got, w.log)
	}
	if strings.Contains(w.log.String(), "eth1") || strings.Contains(w.log.String(), "br1") {
		t.Errorf("the log mentions links that are not allowlisted:\n%s", w.log)
	}
}

// An allowlist that cannot be read allows nothing: a typo closes the gate.
func TestIntegrationWatchBrokenAllowlist(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac = "02:5e:00:00:03:01"
	root := netSeedRoot(t, hotplugNetworkConfig(map[string]string{mac: "192.0.2.31/24"}))
	cfg := filepath.Join(root, "etc/seedkeeper/config.yaml")
	writeFile(t, cfg, "hotplug: {drivers: [veth}\n")
	n.AddVeth(t, peers, "eth1", mac)

	w := startWatch(t, n, root, "")
	waitFor(t, "READY=1", func() bool { return w.notify.has("READY=1") })
	w.stop(t)

	if a := n.Addrs(t, "eth1"); len(a) != 0 {
		t.Errorf("eth1 got %q from a broken allowlist", a)
	}
	log := w.log.String()
	if !strings.Contains(log, "allows nothing") || !strings.Contains(log, cfg) || !strings.Contains(log, "did not find expected") {
		t.Errorf("the log does not say why nothing is allowed:\n%s", log)
	}
	if !w.notify.has("STATUS=watching links; allowlist allows nothing") {
		t.Errorf("sd_notify lines: %q", w.notify.lines())
	}
	for _, p := range []string{agent.ReceiptPath, agent.NetworkDir} {
		if _, err := os.Stat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a watch that may apply nothing (%v)", p, err)
		}
	}
}

// A watch that only plans changes nothing, and so records nothing for
// seedkeeper status: no NIC is told as applied that was not.
func TestIntegrationWatchPlanRecordsNothing(t *testing.T) {
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac = "02:5e:00:00:04:01"
	root := netSeedRoot(t, hotplugNetworkConfig(map[string]string{mac: "192.0.2.41/24"}))
	log := &syncBuffer{}
	e := netEnv(root, n, log)
	a := hotplug.NewAllowlist(hotplug.OriginFlag, []string{"veth"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Watch(ctx, e, agent.WatchOptions{Drivers: &a, Network: agent.NetworkPlan}) }()
	n.AddVeth(t, peers, "eth1", mac)
	waitFor(t, "the plan for eth1", func() bool { return strings.Contains(log.String(), "hotplug: applied network config to eth1") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch: %v\n%s", err, log)
	}
	if !strings.Contains(log.String(), "network: would ") || n.HasAddr(t, "eth1", "192.0.2.41/24") {
		t.Fatalf("not a plan:\n%s", log)
	}
	if _, err := os.Lstat(filepath.Join(root, agent.WatchRecordPath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a watch that only plans left a record (%v)", err)
	}
}
