package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// The spec the VM booted with: one NIC.
const liveBootSpec = `[NETWORK]
HOSTNAME = live-a
[NIC-CONFIG]
NICS = NIC1
[NIC1]
MACADDR = 02:5e:00:00:09:01
BOOTPROTO = static
IPADDR = 192.0.2.91
NETMASK = 255.255.255.0
[MISC]
MARKER-ID = live-0001
INSTANCE-ID = imc-live-1
`

// The spec vCenter hands over while the VM runs, once a second NIC was
// hot-added: both NICs, DNS, a time zone, another hostname and another
// instance ID.
const liveSpec = `[NETWORK]
HOSTNAME = live-b
DOMAINNAME = example.com
[NIC-CONFIG]
NICS = NIC1,NIC2
[NIC1]
MACADDR = 02:5e:00:00:09:01
BOOTPROTO = static
IPADDR = 192.0.2.91
NETMASK = 255.255.255.0
[NIC2]
MACADDR = 02:5E:00:00:09:02
BOOTPROTO = static
IPADDR = 198.51.100.92
NETMASK = 255.255.255.0
GATEWAY = 198.51.100.1
[DNS]
NAMESERVER|1 = 192.0.2.53
[DATETIME]
TIMEZONE = Europe/Oslo
[MISC]
MARKER-ID = live-0002
INSTANCE-ID = imc-live-2
POST-GC-STATUS = yes
`

// livePasswordSpec is liveSpec as another customization, with a root
// password.
var livePasswordSpec = strings.Replace(liveSpec, "live-0002", "live-0004", 1) + "[PASSWORD]\n-PASS = TGl2ZS1QYTU1Cg==\nRESET = yes\n"

// handOver leaves cfg as VMware Tools does on a hand-over: written
// under another name, then renamed to cust.cfg.
func (g *vmwareGuest) handOver(t *testing.T, cfg string) {
	t.Helper()
	dir := filepath.Join(g.root, "var/run/vmware-imc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "cust.cfg.tmp"), cfg)
	if err := os.Rename(filepath.Join(dir, "cust.cfg.tmp"), filepath.Join(dir, "cust.cfg")); err != nil {
		t.Fatal(err)
	}
}

// commands records what a flow runs through Env.RunCommand.
type commands struct {
	mu  sync.Mutex
	ran []ran
}

func (c *commands) list() []ran {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ran)
}

// A NIC hot-added and then customized (vCenter's CustomizeGuest_Task on
// a running VM): seedkeeper watch notices the spec Tools leaves, reports
// running then done to vCenter, applies its network to the NICs it owns
// (the NIC added before the spec included), keeps the marker and the
// spec, and never changes the instance ID, not at once and not at the
// next boot. The same spec again, and a spec that cannot be read, apply
// nothing; the second is reported as failed. A root password is not set
// while the VM runs: said, reported as a failure, and kept nowhere.
func TestIntegrationWatchVMwareLiveSpec(t *testing.T) {
	testenv.Integration(t)
	poll := sourceduty.SpecPoll.Load()
	sourceduty.SpecPoll.Store(int64(20 * time.Millisecond))
	t.Cleanup(func() { sourceduty.SpecPoll.Store(poll) })
	n, peers := newTestNetns(t), newTestNetns(t)
	g := newVMwareGuest(t, "")
	g.spec(t, liveBootSpec)
	addLiveVeth(t, n, peers, "eth0", "02:5e:00:00:09:01")
	st, _, log := g.boot(t, n)
	if st.Transport != "imc" || st.Identity == nil || st.Identity.InstanceID != "imc-live-1" || st.Network == nil || st.Network.Action != "applied" {
		t.Fatalf("boot: transport %q identity %+v network %+v\n%s", st.Transport, st.Identity, st.Network, log)
	}
	state := filepath.Join(g.root, "var/lib/seedkeeper")
	seedMeta := filepath.Join(g.root, "var/lib/cloud/seed/nocloud/meta-data")
	before := map[string]fileState{"identity.json": statFile(t, filepath.Join(state, "identity.json")), "meta-data": statFile(t, seedMeta)}
	os.Remove(g.log)
	// What a reboot leaves, but for the boot itself: the spec gone from
	// /run, VMware Tools' deployPkg plugin installed. The watch's reads
	// of the metadata do not wait for a spec, as boot's does: the
	// watcher notices one.
	if err := os.Remove(filepath.Join(g.root, "var/run/vmware-imc/cust.cfg")); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(g.root, "usr/lib/open-vm-tools/plugins/vmsvc/libdeployPkgPlugin.so")
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, plugin, "")

	cmds := &commands{}
	w := startWatchWith(t, n, g.root, "", func(e *agent.Env) {
		e.RunCommand = func(_ context.Context, argv []string, stdin []byte) error {
			cmds.mu.Lock()
			defer cmds.mu.Unlock()
			cmds.ran = append(cmds.ran, ran{argv, string(stdin)})
			return nil
		}
	})
	waitFor(t, "READY=1", func() bool { return w.notify.has("READY=1") })

	// The NIC comes first; the metadata (the spec kept at boot) does not
	// list it.
	addLiveVeth(t, n, peers, "eth1", "02:5e:00:00:09:02")
	w.waitLog(t, "the metadata does not list eth1")
	g.handOver(t, liveSpec)
	waitFor(t, "eth1's address", func() bool { return n.HasAddr(t, "eth1", "198.51.100.92/24") })
	want := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-watch",
		"vmware-rpctool|info-set guestinfo.gc.status Started",
		"vmware-rpctool|deployPkg.update.state 5 0 journalctl -u seedkeeper-watch",
		"vmware-rpctool|info-set guestinfo.gc.status Successful",
	}
	waitFor(t, "the reports to vCenter", func() bool { return len(g.calls(t)) >= len(want) })
	if got := g.calls(t); !slices.Equal(got, want) {
		t.Errorf("reports\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), w.log)
	}
	waitFor(t, "the record of the customization", func() bool {
		r, _, err := agent.ReadWatchRecord(sysroot.Root(g.root))
		return err == nil && len(r.Customization) == 1
	})
	if !n.HasAddr(t, "eth0", "192.0.2.91/24") {
		t.Errorf("eth0 lost its address: %q", n.Addrs(t, "eth0"))
	}
	if got := readFile(t, filepath.Join(state, "vmware-imc-marker")); got != "live-0002\n" {
		t.Errorf("marker %q, want live-0002", got)
	}
	var kept struct {
		MarkerID   string `json:"marker_id"`
		InstanceID string `json:"instance_id"`
		CustCfg    []byte `json:"cust_cfg"`
	}
	keptFile := filepath.Join(state, "vmware-imc-spec.json")
	if err := json.Unmarshal([]byte(readFile(t, keptFile)), &kept); err != nil {
		t.Fatal(err)
	}
	if kept.MarkerID != "live-0002" || kept.InstanceID != "imc-live-1" || !strings.Contains(string(kept.CustCfg), "198.51.100.92") || strings.Contains(string(kept.CustCfg), "PASS") {
		t.Errorf("kept spec: marker %q, instance ID %q, cust.cfg\n%s", kept.MarkerID, kept.InstanceID, kept.CustCfg)
	}
	if fi, err := os.Stat(keptFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kept spec: %v, %v", fi, err)
	}
	// The instance ID and the seed are the boot's.
	for name, p := range map[string]string{"identity.json": filepath.Join(state, "identity.json"), "meta-data": seedMeta} {
		if statFile(t, p) != before[name] {
			t.Errorf("%s was rewritten by the watch", name)
		}
	}
	rec, _, err := agent.ReadWatchRecord(sysroot.Root(g.root))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Customization[0].Failed {
		t.Error("the customization applied whole is recorded as failed")
	}
	lines := strings.Join(rec.Customization[0].Lines, "\n")
	for _, s := range []string{
		"VMware customization spec (traditional kind, marker live-0002) arrived in /var/run/vmware-imc while the VM runs",
		"network: applied live to the spec's NICs seedkeeper owns (owned links now: eth0, eth1)",
		"instance ID: stays imc-live-1 (a spec applied while the VM runs never changes it, now or at a later boot: it is kept with the spec); the spec's own is not used",
		"hostname live-b.example.com: at the next boot",
		"time zone Europe/Oslo: not set",
		"customization live-0002 marked as applied",
	} {
		if !strings.Contains(lines, s) {
			t.Errorf("the record's lines lack %q:\n%s", s, lines)
		}
	}
	// DNS goes with the NICs: in the files rendered for the stack.
	if !slices.ContainsFunc(networkdFiles(g.root, ".network"), func(p string) bool {
		b, _ := os.ReadFile(p)
		return strings.Contains(string(b), "02:5e:00:00:09:02") && strings.Contains(string(b), "192.0.2.53")
	}) {
		t.Errorf("no rendered file of eth1 names the spec's name server: %q", networkdFiles(g.root, ".network"))
	}

	// The same spec handed over again: applied already, nothing done.
	g.handOver(t, liveSpec)
	w.waitLog(t, "is customization live-0002, applied already; nothing to do")
	// A spec that cannot be read: a clear error, nothing applied, and
	// vCenter told of the failure.
	keptBefore := readFile(t, keptFile)
	g.handOver(t, "[CLOUDINIT]\nMETADATA = ../secret-name\n[MISC]\nMARKER-ID = live-0003\n")
	waitFor(t, "the failure reported", func() bool { return len(g.calls(t)) > len(want) })
	if got, w := g.calls(t)[len(want):], []string{"vmware-rpctool|deployPkg.update.state 4 100 journalctl -u seedkeeper-watch@customization failed"}; !slices.Equal(got, w) {
		t.Errorf("reports after the bad spec %q, want %q", got, w)
	}
	waitFor(t, "the record of the bad spec", func() bool {
		r, _, err := agent.ReadWatchRecord(sysroot.Root(g.root))
		return err == nil && len(r.Customization) == 2
	})
	rec, _, _ = agent.ReadWatchRecord(sysroot.Root(g.root))
	bad := strings.Join(rec.Customization[1].Lines, "\n")
	if c := rec.Customization[1]; !c.Failed || !strings.Contains(c.Why, "cannot be read, nothing of it is applied") || strings.Contains(c.Why, "arrived") {
		t.Errorf("the bad spec is not recorded as failed, with why: %+v", c)
	}
	if !strings.Contains(bad, "cannot be read, nothing of it is applied") || !strings.Contains(bad, "[CLOUDINIT] METADATA does not name a file in the spec's directory") || strings.Contains(bad, "secret-name") {
		t.Errorf("the record of the bad spec:\n%s", bad)
	}
	if got := readFile(t, filepath.Join(state, "vmware-imc-marker")); got != "live-0002\n" {
		t.Errorf("marker after the bad spec %q", got)
	}
	if readFile(t, keptFile) != keptBefore {
		t.Error("the bad spec replaced the kept one")
	}

	// A spec with a root password: all but the password applied, the
	// password said to be left, vCenter told it failed, the spec kept
	// without it, and no command run to set it.
	g.handOver(t, livePasswordSpec)
	waitFor(t, "the record of the spec with a password", func() bool {
		r, _, err := agent.ReadWatchRecord(sysroot.Root(g.root))
		return err == nil && len(r.Customization) == 3
	})
	wantPW := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-watch",
		"vmware-rpctool|info-set guestinfo.gc.status Started",
		"vmware-rpctool|deployPkg.update.state 4 100 journalctl -u seedkeeper-watch@root password not set while the VM runs",
		"vmware-rpctool|info-set guestinfo.gc.status Customization failed",
	}
	if got := g.calls(t)[len(want)+1:]; !slices.Equal(got, wantPW) {
		t.Errorf("reports of the spec with a password\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantPW, "\n"))
	}
	rec, _, _ = agent.ReadWatchRecord(sysroot.Root(g.root))
	if pw := strings.Join(rec.Customization[2].Lines, "\n"); !rec.Customization[2].Failed || !strings.HasPrefix(rec.Customization[2].Why, "root password: not set: seedkeeper watch sets no password") || !strings.Contains(pw, rec.Customization[2].Why) {
		t.Errorf("the record of the spec with a password:\n%s", pw)
	}
	if got := readFile(t, filepath.Join(state, "vmware-imc-marker")); got != "live-0004\n" {
		t.Errorf("marker after the spec with a password %q", got)
	}
	if got := cmds.list(); len(got) != 0 {
		t.Errorf("commands run by the watch: %q", got)
	}
	w.stop(t)
	if strings.Contains(w.log.String(), "waiting for a VMware customization spec") {
		t.Errorf("the watch waited for a spec:\n%s", w.log)
	}
	if err := os.Remove(plugin); err != nil {
		t.Fatal(err)
	}

	// The password reached no log, record or file of seedkeeper's.
	status, _ := os.ReadFile(filepath.Join(state, "status.json"))
	record, _ := os.ReadFile(filepath.Join(g.root, agent.WatchRecordPath))
	for what, s := range map[string]string{"log": w.log.String(), "record": string(record), "kept spec": readFile(t, keptFile), "status": string(status)} {
		if strings.Contains(s, "Live-Pa55") || strings.Contains(s, "TGl2ZS1QYTU1Cg") {
			t.Errorf("the password reached the %s", what)
		}
	}

	// A reboot: /run is empty, guestinfo too. The kept spec gives both
	// NICs, the new hostname, and the instance ID the VM had: the same
	// instance, not a new one by the spec's INSTANCE-ID.
	for _, d := range []string{"run", "var/run/vmware-imc"} {
		if err := os.RemoveAll(filepath.Join(g.root, d)); err != nil {
			t.Fatal(err)
		}
	}
	st, _, log = g.boot(t, n)
	if st.Identity == nil || st.Identity.InstanceID != "imc-live-1" || st.Identity.Changed {
		t.Fatalf("the boot after: identity %+v\n%s", st.Identity, log)
	}
	if st.Network == nil || !slices.Equal(st.Network.Links, []string{"eth0", "eth1"}) {
		t.Errorf("the boot after: network %+v", st.Network)
	}
	if m := readFile(t, seedMeta); !strings.Contains(m, "live-b.example.com") || !strings.Contains(m, "imc-live-1") {
		t.Errorf("the boot after: meta-data\n%s", m)
	}
	if !slices.ContainsFunc(st.VMware.Customization, func(s string) bool {
		return strings.Contains(s, "it was applied while the VM ran, and its instance ID is the one the VM had then (imc-live-1)")
	}) {
		t.Errorf("the boot after: customization %q", st.VMware.Customization)
	}
}
