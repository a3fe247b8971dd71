package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/syncbuf"
)

// calls are every call the stub tools got, as "TOOL|ARG".
func (g *vmwareGuest) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(g.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, "|deployPkg.") || strings.Contains(l, "|info-set guestinfo.gc.") {
			out = append(out, l)
		}
	}
	return out
}

func (g *vmwareGuest) spec(t *testing.T, cfg string) {
	t.Helper()
	p := filepath.Join(g.root, "var/run/vmware-imc/cust.cfg")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

const imcSpec = `[NETWORK]
HOSTNAME = imc-vm
DOMAINNAME = example.com

[PASSWORD]
-PASS = SW1jLVBhNTUK

[DATETIME]
TIMEZONE = Europe/Paris

[MISC]
MARKER-ID = 0b1c2d3e-aaaa-4bbb-8ccc-000000000001
INSTANCE-ID = imc-0001
POST-GC-STATUS = yes
`

// A boot from a customization spec reports to vCenter through
// vmware-rpctool (running, then done; guestinfo.gc.status as asked),
// keeps the marker, and does not set the password again on the next boot
// of the same customization; the password reaches neither the status nor
// the log, and the seed holds it only in the 0600 vendor-data.
func TestBootVMwareIMC(t *testing.T) {
	g := newVMwareGuest(t, "")
	g.spec(t, imcSpec)
	log := &syncbuf.Buffer{}
	env := agent.LoadEnv(g.root, "", agent.NewLogger(log))
	st, err := agent.Boot(context.Background(), env, agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatalf("Boot: %v\n%s", err, log)
	}
	if st.Transport != "imc" || st.Identity == nil || st.Identity.InstanceID != "imc-0001" {
		t.Fatalf("transport %q identity %+v", st.Transport, st.Identity)
	}
	want := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-boot",
		"vmware-rpctool|info-set guestinfo.gc.status Started",
		"vmware-rpctool|deployPkg.update.state 5 0 journalctl -u seedkeeper-boot",
		"vmware-rpctool|info-set guestinfo.gc.status Successful",
	}
	if got := g.calls(t); !slices.Equal(got, want) {
		t.Errorf("reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	marker, err := os.ReadFile(filepath.Join(g.root, "var/lib/seedkeeper/vmware-imc-marker"))
	if err != nil || string(marker) != "0b1c2d3e-aaaa-4bbb-8ccc-000000000001\n" {
		t.Errorf("marker %q, %v", marker, err)
	}
	vd := filepath.Join(g.root, "var/lib/cloud/seed/nocloud/vendor-data")
	b, err := os.ReadFile(vd)
	if err != nil || !strings.Contains(string(b), "password: Imc-Pa55") || !strings.Contains(string(b), "timezone: Europe/Paris") {
		t.Errorf("vendor-data %q, %v", b, err)
	}
	if fi, err := os.Stat(vd); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("vendor-data mode %v, %v", fi.Mode(), err)
	}
	status, _ := os.ReadFile(filepath.Join(g.root, "var/lib/seedkeeper/status.json"))
	meta, _ := os.ReadFile(filepath.Join(g.root, "var/lib/cloud/seed/nocloud/meta-data"))
	for what, s := range map[string]string{"log": log.String(), "status": string(status), "meta-data": string(meta)} {
		if strings.Contains(s, "Imc-Pa55") || strings.Contains(s, "SW1jLVBhNTUK") {
			t.Errorf("the password reached the %s", what)
		}
	}
	if !strings.Contains(string(meta), "imc-vm.example.com") {
		t.Errorf("meta-data %q has no hostname", meta)
	}

	// The same customization on the next boot: the same instance, no
	// password set again, reported done again (Tools waits for it).
	os.Remove(g.log)
	st, err = agent.Boot(context.Background(), env, agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatal(err)
	}
	if st.Identity.InstanceID != "imc-0001" || st.Identity.Changed {
		t.Errorf("second boot identity %+v", st.Identity)
	}
	if b, _ := os.ReadFile(vd); strings.Contains(string(b), "password") || !strings.Contains(string(b), "timezone: Europe/Paris") {
		t.Errorf("second boot vendor-data %q", b)
	}
	if !slices.ContainsFunc(st.VMware.Customization, func(s string) bool {
		return strings.Contains(s, "was applied on an earlier boot: the root password is not set again")
	}) {
		t.Errorf("customization %q", st.VMware.Customization)
	}

	// The boot after: the spec is gone from /run and guestinfo is
	// empty. The spec kept at the first boot is read again: the same
	// instance, hostname and vendor-data, no password, and nothing
	// reported to vCenter.
	kept := filepath.Join(g.root, "var/lib/seedkeeper/vmware-imc-spec.json")
	kb, err := os.ReadFile(kept)
	if err != nil {
		t.Fatalf("no kept spec: %v", err)
	}
	if fi, err := os.Stat(kept); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kept spec mode %v, %v", fi.Mode(), err)
	}
	if strings.Contains(string(kb), "SW1jLVBhNTUK") || strings.Contains(string(kb), "Imc-Pa55") || strings.Contains(string(kb), "-PASS") {
		t.Error("the kept spec holds the password")
	}
	if err := os.RemoveAll(filepath.Join(g.root, "var/run/vmware-imc")); err != nil {
		t.Fatal(err)
	}
	os.Remove(g.log)
	log = &syncbuf.Buffer{}
	env = agent.LoadEnv(g.root, "", agent.NewLogger(log))
	st, err = agent.Boot(context.Background(), env, agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatalf("the boot after the customization: %v\n%s", err, log)
	}
	if st.Transport != "imc" || st.Identity == nil || st.Identity.InstanceID != "imc-0001" || st.Identity.Changed {
		t.Errorf("third boot: transport %q identity %+v", st.Transport, st.Identity)
	}
	if got := g.calls(t); len(got) != 0 {
		t.Errorf("the kept spec was reported to vCenter again: %q", got)
	}
	if b, _ := os.ReadFile(vd); strings.Contains(string(b), "password") || !strings.Contains(string(b), "timezone: Europe/Paris") {
		t.Errorf("third boot vendor-data %q", b)
	}
	if meta, _ := os.ReadFile(filepath.Join(g.root, "var/lib/cloud/seed/nocloud/meta-data")); !strings.Contains(string(meta), "imc-vm.example.com") {
		t.Errorf("third boot meta-data %q", meta)
	}
	if !slices.ContainsFunc(st.VMware.Customization, func(s string) bool {
		return strings.Contains(s, "the spec applied at ") && strings.Contains(s, "marker 0b1c2d3e-aaaa-4bbb-8ccc-000000000001") && strings.Contains(s, "/var/lib/seedkeeper/vmware-imc-spec.json")
	}) {
		t.Errorf("third boot customization %q", st.VMware.Customization)
	}
	if !strings.Contains(log.String(), "the spec applied at ") {
		t.Errorf("the log does not say the kept spec was read:\n%s", log)
	}
	if strings.Contains(log.String(), "Imc-Pa55") {
		t.Error("the password reached the log")
	}
}

// A spec naming a customization script: the script is not run, and
// vCenter is told "script disabled" (error 6) instead of done; a boot
// that only plans reports nothing.
func TestBootVMwareIMCScriptAndPlan(t *testing.T) {
	g := newVMwareGuest(t, "")
	g.spec(t, "[NETWORK]\nHOSTNAME = s1\n[CUSTOM-SCRIPT]\nSCRIPT-NAME = customize.sh\n[MISC]\nINSTANCE-ID = s-1\n")
	if _, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := g.calls(t); len(got) != 0 {
		t.Errorf("a planned boot reported %q", got)
	}
	st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-boot",
		"vmware-rpctool|deployPkg.update.state 4 6 journalctl -u seedkeeper-boot@script disabled",
	}
	if got := g.calls(t); !slices.Equal(got, want) {
		t.Errorf("reports %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(g.root, "var/lib/seedkeeper/vmware-imc-marker")); !os.IsNotExist(err) {
		t.Errorf("a spec without a marker left one: %v", err)
	}
	if st.VMware == nil || !slices.ContainsFunc(st.VMware.Customization, func(s string) bool { return strings.Contains(s, "runs no customization script") }) {
		t.Errorf("vmware status %+v", st.VMware)
	}
}

// A boot that fails after reading the spec (the state directory is a
// link, so the seed cannot be written) reports the failure to vCenter
// with its reason, and keeps no marker: the next boot tries again.
func TestBootVMwareIMCFailed(t *testing.T) {
	g := newVMwareGuest(t, "")
	g.spec(t, imcSpec)
	if err := os.MkdirAll(filepath.Join(g.root, "var/lib/elsewhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(g.root, "var/lib/seedkeeper")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(g.root, "var/lib/seedkeeper")); err != nil {
		t.Fatal(err)
	}
	st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{Network: agent.NetworkApply})
	if err == nil || st.Outcome != "error" {
		t.Fatalf("Boot: %v, outcome %q; want it to fail", err, st.Outcome)
	}
	want := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-boot",
		"vmware-rpctool|info-set guestinfo.gc.status Started",
		"vmware-rpctool|deployPkg.update.state 4 100 journalctl -u seedkeeper-boot@customization failed",
		"vmware-rpctool|info-set guestinfo.gc.status Customization failed",
	}
	if got := g.calls(t); !slices.Equal(got, want) {
		t.Errorf("reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(g.root, "var/lib/elsewhere/vmware-imc-marker")); !os.IsNotExist(err) {
		t.Errorf("a failed boot kept the marker: %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.root, "var/lib/elsewhere/vmware-imc-spec.json")); !os.IsNotExist(err) {
		t.Errorf("a failed boot kept the spec: %v", err)
	}
}

// One tool budget bounds every tool call of a boot, the reports to
// vCenter and the info-set calls alike: a guestinfo.gc.status that hangs
// at the start spends it, and the calls left (the other info-set calls,
// the report at the end) are not made, each with a note saying so.
func TestBootVMwareIMCToolCallsShareOneBudget(t *testing.T) {
	agent.SetToolBudget(t, 500*time.Millisecond)
	g := newVMwareGuest(t, "")
	g.spec(t, imcSpec)
	g.set(t, "gc.status.hang-vmware-rpctool", "")
	st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-boot",
		"vmware-rpctool|info-set guestinfo.gc.status Started",
	}
	if got := g.calls(t); !slices.Equal(got, want) {
		t.Errorf("calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := g.sets(t); len(got) != 1 {
		t.Errorf("info-set calls %q, want only the one that hung", got)
	}
	spent := "not tried, the tool calls of this boot (info-set and reports to vCenter) ran out of their 500ms"
	for _, n := range []string{
		"guestinfo.cloudinit.updates.supported not published: " + spent,
		"not reported to vCenter (deployPkg.update.state 5 0): " + spent,
		"guestinfo.gc.status not published: " + spent,
	} {
		if st.VMware == nil || !slices.Contains(st.VMware.Notes, n) {
			t.Errorf("no note %q in %+v", n, st.VMware)
		}
	}
	if st.Outcome != "ok" {
		t.Errorf("outcome %q, want ok", st.Outcome)
	}
}

// The marker kept before is read once per boot, at its start: one that
// cannot be read (here a directory) says so once, not at the start and
// again at the end.
func TestBootVMwareIMCReadsTheMarkerOnce(t *testing.T) {
	g := newVMwareGuest(t, "")
	g.spec(t, imcSpec)
	if err := os.MkdirAll(filepath.Join(g.root, "var/lib/seedkeeper/vmware-imc-marker"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	if _, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", agent.NewLogger(log)), agent.BootOptions{Network: agent.NetworkApply}); err != nil {
		t.Fatalf("Boot: %v\n%s", err, log)
	}
	if n := strings.Count(log.String(), "reading the customization marker"); n != 1 {
		t.Errorf("the marker was read %d times, want once:\n%s", n, log)
	}
}

// VMware Tools writes its log for a spec it hands over as well as for
// one it applies itself: a hand-over that seedkeeper applied since (its
// marker written after the log) is said, not warned of; one it has not
// applied, a failed hand-over and Tools' own customization are warnings,
// each saying what it is.
func TestBootVMwareToolsLogSaysWhoApplied(t *testing.T) {
	const (
		handedOver = "[2026-11-30T09:12:01.301Z] [    info] Executing cloud-init workflow.\n[2026-11-30T09:12:01.601Z] [    info] Deployment delegated to Cloud-init. Returning success.\n"
		failed     = "[2026-11-30T09:12:01.301Z] [    info] Executing cloud-init workflow.\n[2026-11-30T09:12:01.400Z] [   error] Deployment for cloud-init failed.\n"
		byTools    = "[2026-11-30T09:12:01.301Z] [    info] Executing traditional GOSC workflow.\n"
	)
	logTime := time.Date(2026, 11, 30, 9, 12, 2, 0, time.UTC)
	for _, tc := range []struct {
		name, log string
		marker    time.Time // zero: none
		want      string
		warn      bool
	}{
		{"applied", handedOver, logTime.Add(time.Minute), "VMware Tools handed a customization spec over (/var/log/vmware-imc/toolsDeployPkg.log, last written 2026-11-30T09:12:02Z), and seedkeeper applied it since (/var/lib/seedkeeper/vmware-imc-marker)", false},
		{"not applied", handedOver, logTime.Add(-time.Hour), "VMware Tools handed a customization spec over (/var/log/vmware-imc/toolsDeployPkg.log, last written 2026-11-30T09:12:02Z), and seedkeeper has not applied it since", true},
		{"no marker", handedOver, time.Time{}, "VMware Tools handed a customization spec over (/var/log/vmware-imc/toolsDeployPkg.log, last written 2026-11-30T09:12:02Z), and seedkeeper has not applied it since", true},
		{"failed", failed, time.Time{}, "VMware Tools failed to hand a customization spec over to the guest's agent (/var/log/vmware-imc/toolsDeployPkg.log, last written 2026-11-30T09:12:02Z) and reported the customization to vCenter as failed", true},
		{"by tools", byTools, logTime.Add(time.Minute), "VMware Tools ran a guest customization itself here (/var/log/vmware-imc/toolsDeployPkg.log, last written 2026-11-30T09:12:02Z, its traditional workflow)", true},
	} {
		g := newVMwareGuest(t, "")
		g.set(t, "metadata", "instance-id: i-tools-log\n")
		for p, data := range map[string]string{"var/log/vmware-imc/toolsDeployPkg.log": tc.log, "var/lib/seedkeeper/vmware-imc-marker": "m-1\n"} {
			p = filepath.Join(g.root, p)
			if strings.HasSuffix(p, "marker") && tc.marker.IsZero() {
				continue
			}
			when := logTime
			if strings.HasSuffix(p, "marker") {
				when = tc.marker
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, when, when); err != nil {
				t.Fatal(err)
			}
		}
		log := &syncbuf.Buffer{}
		st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", agent.NewLogger(log)), agent.BootOptions{})
		if err != nil {
			t.Fatalf("%s: Boot: %v\n%s", tc.name, err, log)
		}
		if st.VMware == nil || len(st.VMware.Customization) != 1 || !strings.HasPrefix(st.VMware.Customization[0], tc.want) {
			t.Errorf("%s: customization %+v, want one line starting %q", tc.name, st.VMware, tc.want)
			continue
		}
		if warned := strings.Contains(log.String(), `level=WARN msg="vmware: `+tc.want); warned != tc.warn {
			t.Errorf("%s: warned %v, want %v:\n%s", tc.name, warned, tc.warn, log)
		}
	}
}

// vmware.imc_wait bounds the wait for a spec when guestinfo is empty and
// Tools' deployPkg plugin is installed: 0 does not wait, another value is
// the bound the no-source reason names.
func TestBootVMwareIMCWaitIsConfigured(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"vmware: {imc_wait: 0}\n", "no /var/run/vmware-imc/cust.cfg (not waited for)"},
		{"vmware: {imc_wait: 300ms}\n", "no /var/run/vmware-imc/cust.cfg after waiting 300ms for it"},
	} {
		g := newVMwareGuest(t, "boot: {device_wait: 0}\n"+tc.config)
		p := filepath.Join(g.root, "usr/lib/open-vm-tools/plugins/vmsvc/libdeployPkgPlugin.so")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{})
		if st.ConfigError != "" {
			t.Fatalf("%q: config error %s", tc.config, st.ConfigError)
		}
		if st.Outcome != "no-source" || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: outcome %q, %v; want no-source, saying %q", tc.config, st.Outcome, err, tc.want)
		}
	}
}

// The datasource option SourceOptions hands on for vmware.imc_wait: a
// file's 0 is no wait (negative), a file's bound is that bound, and a
// configuration that never set the key (the defaults, a file without
// it, or a Config a library caller built without config.Default) gets
// the documented 15 s, not no wait.
func TestSourceOptionsIMCWait(t *testing.T) {
	load := func(file string) *config.Config {
		t.Helper()
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		config *config.Config
		want   time.Duration
	}{
		{"explicit 0", load("vmware: {imc_wait: 0}\n"), -1},
		{"explicit 1s", load("vmware: {imc_wait: 1s}\n"), time.Second},
		{"file without the key", load("vmware: {redact: true}\n"), 15 * time.Second},
		{"the defaults", config.Default(), 15 * time.Second},
		{"zero Config", &config.Config{}, 0}, // the datasource's default, 15 s
	} {
		got := agent.Env{Root: "/nonexistent", Config: tc.config}.SourceOptions().VMware.IMCWait
		if got != tc.want {
			t.Errorf("%s: IMCWait %v, want %v", tc.name, got, tc.want)
		}
	}
}
