package main

// The whole-process test of "seedkeeper watch" (the HOTPLUG event); what
// Watch and Boot do to the links is tested in process in package agent.
// The test has named network namespaces of its own ("ip netns add"), runs
// the built binary inside with "ip netns exec", and looks at the links
// through netlink.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/nstest"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// newTestNetns creates a named namespace, removed at cleanup with
// everything in it.
func newTestNetns(t *testing.T) *nstest.NS {
	t.Helper()
	needTool(t, "ip") // the binary runs inside with "ip netns exec"
	return nstest.New(t, "skcmd")
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
func startWatch(t *testing.T, n *nstest.NS, notify *notifySocket, args ...string) *watchProc {
	t.Helper()
	bin := seedkeeperBinary(t)
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, bin, "watch", "--network", "apply"}, args...)...)
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
	testenv.Integration(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac = "02:5e:00:00:01:01"
	root := netSeedRoot(t, hotplugNetworkConfig(map[string]string{mac: "192.0.2.11/24"}))
	notify := newNotifySocket(t)
	w := startWatch(t, n, notify, "--root", root, "--drivers", "veth")
	waitFor(t, "READY=1", func() bool { return notify.has("READY=1") })

	n.AddVeth(t, peers, "eth1", mac)
	waitFor(t, "eth1's address", func() bool { return n.HasAddr(t, "eth1", "192.0.2.11/24") })
	w.stop(t)
	if !notify.has("STOPPING=1") || !slices.ContainsFunc(notify.lines(), func(s string) bool { return strings.HasPrefix(s, "STATUS=watching links for veth") }) {
		t.Errorf("sd_notify lines: %q", notify.lines())
	}
}
