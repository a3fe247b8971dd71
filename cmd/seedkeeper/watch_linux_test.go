package main

// Whole-process tests of "seedkeeper watch" (the HOTPLUG event) and of the
// network step of "seedkeeper boot" (the BOOT event); the behaviour of
// both is tested in process in package agent. Each test has named
// network namespaces of its own ("ip netns add"), runs the built binary
// inside with "ip netns exec", and looks at the links through netlink.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/internal/nstest"
)

// testNetns is a named network namespace and a netlink handle into it.
type testNetns struct {
	name string
	fd   netns.NsHandle
	h    *netlink.Handle
}

// newTestNetns creates a named namespace, removed at cleanup with
// everything in it.
func newTestNetns(t *testing.T) *testNetns {
	t.Helper()
	needTool(t, "ip") // the binary runs inside with "ip netns exec"
	n := nstest.New(t, "skcmd")
	return &testNetns{name: n.Name, fd: n.NS, h: n.Netlink}
}

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// addVeth creates a veth whose end name (with mac) is in n and whose peer
// is in peers, so that only the one link appears in n.
func addVeth(t *testing.T, n, peers *testNetns, name, mac string) {
	t.Helper()
	err := peers.h.LinkAdd(&netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: mustMAC(mac), Namespace: netlink.NsFd(n.fd)},
		PeerName:  "p-" + name,
	})
	if err != nil {
		t.Fatalf("adding veth %s: %v", name, err)
	}
}

func (n *testNetns) link(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := n.h.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	return l
}

// addrs lists the IPv4 addresses of a link, as "a.b.c.d/len".
func (n *testNetns) addrs(t *testing.T, name string) []string {
	t.Helper()
	as, err := n.h.AddrList(n.link(t, name), netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		out = append(out, a.IPNet.String())
	}
	return out
}

func (n *testNetns) hasAddr(t *testing.T, name, addr string) bool {
	return slices.Contains(n.addrs(t, name), addr)
}

// watchProc is a running "seedkeeper watch".
type watchProc struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

// startWatch runs "seedkeeper watch ARGS" inside n, with sd_notify going
// to notify. The process is killed at cleanup if the test did not stop it.
func startWatch(t *testing.T, n *testNetns, notify *notifySocket, args ...string) *watchProc {
	t.Helper()
	bin := seedkeeperBinary(t)
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.name, bin, "watch", "--network", "apply"}, args...)...)
	cmd.Env = testEnv([]string{"NOTIFY_SOCKET=" + notify.path})
	p := &watchProc{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop sends SIGTERM and checks that watch exits 0.
func (p *watchProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("watch did not stop within 20s of SIGTERM\n%s", p.log)
	}
	if p.err != nil {
		t.Errorf("watch after SIGTERM: %v, want exit 0\n%s", p.err, p.log)
	}
}

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
		id := "nic" + strings.ReplaceAll(mac[len(mac)-5:], ":", "")
		fmt.Fprintf(&b, "  %s:\n    match: {macaddress: %q}\n    addresses: [%s]\n", id, mac, nics[mac])
	}
	return b.String()
}

// netSeedRoot makes a root whose NoCloud seed is in the nocloud-net seed
// directory (read afresh on every fetch: the test changes it as metadata
// changes) with the given network-config ("" for none), and runs boot
// once without touching the network, so that the identity state and the
// seed for cloud-init exist.
func netSeedRoot(t *testing.T, networkConfig string) string {
	t.Helper()
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	dir := filepath.Join(root, "var/lib/cloud/seed/nocloud-net")
	writeFile(t, filepath.Join(dir, "meta-data"), "instance-id: iid-hotplug\nlocal-hostname: hp\n", 0o644)
	writeFile(t, filepath.Join(dir, "user-data"), "#cloud-config\n", 0o644)
	if networkConfig != "" {
		setNetworkConfig(t, root, networkConfig)
	}
	if r := runBinary(t, nil, "boot", "--root", root, "--network", "off"); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	return root
}

// setNetworkConfig replaces the metadata's network-config atomically.
func setNetworkConfig(t *testing.T, root, data string) {
	t.Helper()
	p := filepath.Join(root, "var/lib/cloud/seed/nocloud-net/network-config")
	writeFile(t, p+".tmp", data, 0o644)
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

// The binary path of the hotplug daemon, once: "seedkeeper watch" in a
// namespace applies a hotplugged veth, tells sd_notify READY and STOPPING,
// and exits 0 on SIGTERM. What it applies and leaves alone is tested in
// process, in package agent.
func TestIntegrationWatchSmoke(t *testing.T) {
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac = "02:5e:00:00:01:01"
	root := netSeedRoot(t, hotplugNetworkConfig(map[string]string{mac: "192.0.2.11/24"}))
	notify := newNotifySocket(t)
	w := startWatch(t, n, notify, "--root", root, "--drivers", "veth")
	waitFor(t, "READY=1", func() bool { return notify.has("READY=1") })

	addVeth(t, n, peers, "eth1", mac)
	waitFor(t, "eth1's address", func() bool { return n.hasAddr(t, "eth1", "192.0.2.11/24") })
	w.stop(t)
	if !notify.has("STOPPING=1") || !slices.ContainsFunc(notify.lines(), func(s string) bool { return strings.HasPrefix(s, "STATUS=watching links for veth") }) {
		t.Errorf("sd_notify lines: %q", notify.lines())
	}
}

// The BOOT event: boot --network apply brings owned NICs to the metadata,
// renders networkd files and keeps a receipt; a second boot does nothing.
// netBootRoot is a scratch root for "boot --network apply" on a KVM guest:
// a NoCloud seed with the instance ID and network-config, and veth NICs on
// the driver allowlist.
func netBootRoot(t *testing.T, iid, networkConfig string) string {
	t.Helper()
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	seed := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	writeFile(t, filepath.Join(seed, "meta-data"), "instance-id: "+iid+"\n", 0o644)
	writeFile(t, filepath.Join(seed, "user-data"), "#cloud-config\n", 0o644)
	writeFile(t, filepath.Join(seed, "network-config"), networkConfig, 0o644)
	writeFile(t, filepath.Join(root, "etc/seedkeeper/config.yaml"), "hotplug:\n  drivers: [veth]\n", 0o644)
	return root
}

func TestIntegrationBootNetworkApply(t *testing.T) {
	n, peers := newTestNetns(t), newTestNetns(t)
	const macOwned, macBridge = "02:5e:00:00:04:01", "02:5e:00:00:04:02"
	root := netBootRoot(t, "iid-bootnet", `version: 2
ethernets:
  lan:
    match: {macaddress: "`+macOwned+`"}
    addresses: [192.0.2.41/24]
    routes:
      - {to: default, via: 192.0.2.1}
      - {to: 198.51.100.0/24, via: 192.0.2.254}
  br:
    match: {macaddress: "`+macBridge+`"}
    addresses: [192.0.2.42/24]
`)
	addVeth(t, n, peers, "eth1", macOwned)
	if err := n.h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br1", HardwareAddr: mustMAC(macBridge)}}); err != nil {
		t.Fatal(err)
	}

	boot := func() procResult {
		t.Helper()
		r := runCommand(t, nil, "ip", "netns", "exec", n.name, seedkeeperBinary(t), "boot", "--root", root, "--network", "apply")
		if r.code != exitOK {
			t.Fatalf("boot --network apply: %v", r)
		}
		return r
	}
	boot()
	if !n.hasAddr(t, "eth1", "192.0.2.41/24") {
		t.Errorf("eth1 addresses %q", n.addrs(t, "eth1"))
	}
	routes, err := n.h.RouteList(n.link(t, "eth1"), netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range routes {
		if r.Gw != nil {
			dst := "default"
			if r.Dst != nil && r.Dst.String() != "0.0.0.0/0" {
				dst = r.Dst.String()
			}
			got = append(got, dst+" via "+r.Gw.String())
		}
	}
	slices.Sort(got)
	if want := []string{"198.51.100.0/24 via 192.0.2.254", "default via 192.0.2.1"}; !slices.Equal(got, want) {
		t.Errorf("eth1 routes %q, want %q", got, want)
	}
	if a := n.addrs(t, "br1"); len(a) != 0 || n.link(t, "br1").Attrs().Flags&net.FlagUp != 0 {
		t.Errorf("the bridge (driver not allowlisted) was touched: %q", a)
	}
	files, _ := filepath.Glob(filepath.Join(root, networkDir, "10-seedkeeper-*.network"))
	if len(files) != 1 || !strings.Contains(readFile(t, files[0]), macOwned) || !strings.Contains(readFile(t, files[0]), "192.0.2.41/24") {
		t.Fatalf("networkd files %q", files)
	}
	if rc := readFile(t, filepath.Join(root, receiptPath)); !strings.Contains(rc, "192.0.2.41/24") {
		t.Errorf("receipt lacks the address it added:\n%s", rc)
	}
	st := readStatus(t, root)
	if st.Network == nil || st.Network.Action != "applied" || len(st.Network.Ops) == 0 || !slices.Equal(st.Network.Owned, []string{"lan"}) {
		t.Errorf("status network: %+v", st.Network)
	}

	networkd := statFile(t, files[0])
	r := boot()
	if st := readStatus(t, root); st.Network == nil || st.Network.Action != "applied" || len(st.Network.Ops) != 0 {
		t.Errorf("second boot: %+v, want zero operations", st.Network)
	}
	if !strings.Contains(r.stderr, `msg="network: no changes"`) {
		t.Errorf("second boot does not log that nothing changed:\n%s", r.stderr)
	}
	if statFile(t, files[0]) != networkd {
		t.Error("the second boot rewrote the networkd file")
	}
}

// No network key in the metadata: leave the network alone.
func TestIntegrationBootNoNetworkConfig(t *testing.T) {
	n, peers := newTestNetns(t), newTestNetns(t)
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	os.Remove(filepath.Join(root, "var/lib/cloud/seed/nocloud/network-config"))
	writeFile(t, filepath.Join(root, "etc/seedkeeper/config.yaml"), "hotplug:\n  drivers: [veth]\n", 0o644)
	addVeth(t, n, peers, "eth0", "52:54:00:12:34:56") // the fixture's MAC
	before := n.link(t, "eth0").Attrs()

	r := runCommand(t, nil, "ip", "netns", "exec", n.name, seedkeeperBinary(t), "boot", "--root", root, "--network", "apply")
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	after := n.link(t, "eth0").Attrs()
	if a := n.addrs(t, "eth0"); len(a) != 0 || after.Flags != before.Flags || after.MTU != before.MTU || after.Name != before.Name {
		t.Errorf("eth0 changed: %q %+v -> %+v", a, before, after)
	}
	st := readStatus(t, root)
	if st.Network == nil || st.Network.Action != "skipped" || !strings.Contains(st.Network.Reason, "no network configuration") {
		t.Errorf("status network: %+v", st.Network)
	}
	for _, p := range []string{receiptPath, networkDir} {
		if _, err := os.Stat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v)", p, err)
		}
	}
}

// A bridge of two owned NICs is created live at boot, with its address,
// rendered for networkd, listed as owned; a second boot changes nothing.
func TestIntegrationBootStackedBridge(t *testing.T) {
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac1, mac2 = "02:5e:00:00:05:01", "02:5e:00:00:05:02"
	root := netBootRoot(t, "iid-bootbridge", `version: 1
config:
  - {type: physical, name: eth1, mac_address: "`+mac1+`"}
  - {type: physical, name: eth2, mac_address: "`+mac2+`"}
  - type: bridge
    name: br0
    bridge_interfaces: [eth1, eth2]
    params: {bridge_stp: "off", bridge_fd: 0}
    subnets:
      - {type: static, address: 192.0.2.51/24, gateway: 192.0.2.1}
`)
	addVeth(t, n, peers, "eth1", mac1)
	addVeth(t, n, peers, "eth2", mac2)

	boot := func() procResult {
		t.Helper()
		r := runCommand(t, nil, "ip", "netns", "exec", n.name, seedkeeperBinary(t), "boot", "--root", root, "--network", "apply")
		if r.code != exitOK {
			t.Fatalf("boot --network apply: %v", r)
		}
		return r
	}
	r := boot()
	for _, want := range []string{`msg="network: br0 (bridge): create"`, `msg="network: eth1 (` + mac1 + `): enslave to br0"`,
		`msg="network: br0 (bridge): add address 192.0.2.51/24"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("boot log lacks %s:\n%s", want, r.stderr)
		}
	}
	br := n.link(t, "br0")
	if br.Type() != "bridge" || br.Attrs().Flags&net.FlagUp == 0 || !n.hasAddr(t, "br0", "192.0.2.51/24") {
		t.Errorf("br0: %s up=%v addresses %q", br.Type(), br.Attrs().Flags&net.FlagUp != 0, n.addrs(t, "br0"))
	}
	for _, p := range []string{"eth1", "eth2"} {
		if n.link(t, p).Attrs().MasterIndex != br.Attrs().Index {
			t.Errorf("%s is not a port of br0", p)
		}
	}
	netdev := filepath.Join(root, networkDir, "10-seedkeeper-br0.netdev")
	if !strings.Contains(readFile(t, netdev), "Kind=bridge") {
		t.Errorf("br0.netdev:\n%s", readFile(t, netdev))
	}
	if rc := readFile(t, filepath.Join(root, receiptPath)); !strings.Contains(rc, `"stacked": {`) || !strings.Contains(rc, "192.0.2.51/24") {
		t.Errorf("receipt lacks br0's address:\n%s", rc)
	}
	if st := readStatus(t, root); st.Network == nil || !slices.Equal(st.Network.Owned, []string{"eth1", "eth2", "br0"}) {
		t.Errorf("status network: %+v", st.Network)
	}

	before := statFile(t, netdev)
	receipt := statFile(t, filepath.Join(root, receiptPath))
	boot()
	if st := readStatus(t, root); st.Network == nil || len(st.Network.Ops) != 0 {
		t.Errorf("second boot: %+v, want zero operations", st.Network)
	}
	if statFile(t, netdev) != before || statFile(t, filepath.Join(root, receiptPath)) != receipt {
		t.Error("the second boot rewrote the netdev file or the receipt")
	}
}

// Found in review: a bridge the live apply refuses (a parameter it cannot
// read) was not rendered either, while its members' files named it. The
// files follow the live plan: br0 is neither made live nor rendered, and
// eth1's own file does not name it.
func TestIntegrationBootStackedRefusedIsNotNamed(t *testing.T) {
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac1 = "02:5e:00:00:06:01"
	root := netBootRoot(t, "iid-bootrefused", `version: 1
config:
  - {type: physical, name: eth1, mac_address: "`+mac1+`"}
  - type: bridge
    name: br0
    bridge_interfaces: [eth1]
    params: {bridge_hello: "two"}
    subnets:
      - {type: static, address: 192.0.2.61/24}
`)
	addVeth(t, n, peers, "eth1", mac1)
	r := runCommand(t, nil, "ip", "netns", "exec", n.name, seedkeeperBinary(t), "boot", "--root", root, "--network", "apply")
	if r.code != exitOK || !strings.Contains(r.stderr, "br0: parameter hello-time: not a duration") {
		t.Fatalf("boot: %v", r)
	}
	if _, err := n.h.LinkByName("br0"); err == nil {
		t.Error("br0 was made live with a parameter it could not read")
	}
	ents, err := os.ReadDir(filepath.Join(root, networkDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if b := readFile(t, filepath.Join(root, networkDir, e.Name())); strings.Contains(b, "br0") {
			t.Errorf("%s names br0, which nothing defines:\n%s", e.Name(), b)
		}
	}
	if !slices.Equal(names, []string{"10-seedkeeper-eth1.network"}) {
		t.Errorf("files %v, want eth1's own", names)
	}
}
