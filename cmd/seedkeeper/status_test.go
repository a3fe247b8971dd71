package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/agent/report"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/intent"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/nosource"
)

func TestStatusBeforeBoot(t *testing.T) {
	root := t.TempDir()
	r := runInProcess("status", "--root", root)
	if r.code != exitStatusNotRun || r.stdout != "" || r.stderr != "seedkeeper boot has not run on this machine yet\n" {
		t.Errorf("status before boot: %v", r)
	}
	p := filepath.Join(root, statusPath)
	writeFile(t, p, "{not json", 0o644)
	r = runInProcess("status", "--root", root, "--json")
	if r.code != exitStatusFailed || !strings.Contains(r.stderr, p) {
		t.Errorf("status with a corrupt status.json: %v", r)
	}
}

// A boot that fails says so, and why, in status.
func TestStatusAfterFailedBoot(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	seed := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	copyDir(t, fixtureSeed, seed)
	// A meta-data that is not a mapping leaves nothing to use (a bad
	// network-config only drops the network: one bad field degrades that
	// field, never the boot).
	writeFile(t, filepath.Join(seed, "meta-data"), "- a list\n", 0o644)
	r := runInProcess("boot", "--root", root)
	if r.code != exitError || !strings.Contains(r.stderr, "meta-data must be a mapping") {
		t.Fatalf("boot with a bad meta-data: %v", r)
	}
	shipDropIn(t, root)
	s := runInProcess("status", "--root", root)
	if s.code != exitStatusFailed || !strings.Contains(s.stdout, "): error\n") || !strings.Contains(s.stdout, "Error:       ") ||
		!strings.Contains(s.stdout, "/var/lib/cloud/seed/nocloud/meta-data") {
		t.Errorf("status after a failed boot:\n%s", s.stdout)
	}
}

// status prints the report's cloud-init warnings (which ones there are is
// tested in agent/report) as Warning: lines and in --json.
func TestStatusCloudConfigWarnings(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	if r := runInProcess("boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	const want = "95-seedkeeper.cfg is missing"
	r := runInProcess("status", "--root", root, "--json")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != exitStatusDegraded {
		t.Fatalf("status --json: %v %v", err, r)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], want) {
		t.Errorf("status --json warnings: %q", st.Warnings)
	}
	if s := runInProcess("status", "--root", root); s.code != exitStatusDegraded || !strings.Contains(s.stdout, "\nWarning:     ") || !strings.Contains(s.stdout, want) {
		t.Errorf("status text:\n%s", s.stdout)
	}
}

// The lines added for late devices, cloud-init's hold
// and dropped fields printed host text as it came, escapes included.
func TestPrintStatusEscapesEveryLine(t *testing.T) {
	bad := "x\x1b]0;owned\x07\u202ey"
	st := &agent.Status{
		Seedkeeper: bad, Outcome: bad, Error: bad, Config: bad,
		Candidates: []datasource.Candidate{{Source: bad, Found: true, Reason: bad}},
		Source:     bad, Transport: bad, DeviceWait: bad,
		CloudInit: &nosource.Hold{Held: true, Reason: bad},
		Dropped:   []string{bad},
		Identity:  &identity.Decision{InstanceID: bad, ReportedID: bad, RuleName: bad, Explanation: bad},
		Seed:      &agent.SeedStatus{Dir: bad, Written: []string{bad}, Warnings: []string{bad}},
		Network:   &agent.NetResult{Action: "applied", Owned: []string{bad}, Failed: []string{bad}, ResolvConf: bad, Allowlist: bad, Netplan: []string{bad}},
		Extra: sourceduty.Extra{Provision: bad,
			VMware: &sourceduty.VMwareStatus{Wait: bad, Published: []string{bad}, Notes: []string{bad}, Customization: []string{bad}}},
		Changes: &intent.Result{Changed: []intent.Change{{Setting: bad, Kind: "changed"}}, Applied: []string{bad}, Waiting: []string{bad}, Failed: []string{bad}, Warnings: []string{bad}},
	}
	var b strings.Builder
	watch := &agent.WatchRecord{
		Guestinfo: []agent.WatchGuestinfo{{Key: bad, Value: bad, Failed: &agent.WatchFailure{Error: bad}}},
		Hotplug:   []agent.WatchNIC{{MAC: bad, Events: []agent.WatchEvent{{Name: bad, Result: "failed", Error: bad}}}},
	}
	printStatus(&b, &report.Report{Status: *st, Warnings: []string{bad}, Watch: watch, WatchWarnings: []string{bad}})
	out := b.String()
	for _, want := range []string{"Hotplug:     x\\x1b", "Guestinfo:   published x\\x1b", "Guestinfo:   x\\x1b]0;owned\\x07\\u202ey: setting failed (x\\x1b", "Late devices: x\\x1b", "cloud-init:  x\\x1b", "Dropped:     x\\x1b", "Warning:     x\\x1b", "Changed:     x\\x1b", "Applied:     x\\x1b", "FAILED x\\x1b", "Waiting:     x\\x1b",
		"Waited:      x\\x1b", "Guestinfo:   published x\\x1b", "Guestinfo:   x\\x1b", "VMware Tools: x\\x1b", "Provision:   x\\x1b", "netplan:     x\\x1b"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("status printed a control or format character:\n%q", out)
	}
}

// After a reboot in which seedkeeper boot has not run (or failed
// before saving), status showed the earlier boot's decision as if it were
// this boot's. The record names its boot; status says plainly when that
// is not the running one, and exits 5 as before any boot.
func TestStatusNotThisBoot(t *testing.T) {
	const bootA, bootB = "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44", "0d3e5a71-c2b4-4f08-a9e6-7b1f3c5d8a20"
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	bootID := filepath.Join(root, agent.BootIDPath)
	writeFile(t, bootID, bootA+"\n", 0o444)
	shipDropIn(t, root)
	if r := runInProcess("boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	type bootJSON struct {
		BootID        string `json:"boot_id"`
		ThisBoot      *bool  `json:"this_boot"`
		CurrentBootID string `json:"current_boot_id"`
		LateSource    string `json:"late_source"`
	}
	status := func() (procResult, procResult, bootJSON) {
		t.Helper()
		text, js := runInProcess("status", "--root", root), runInProcess("status", "--root", root, "--json")
		var b bootJSON
		if err := json.Unmarshal([]byte(js.stdout), &b); err != nil {
			t.Fatalf("status --json: %v %v", err, js)
		}
		return text, js, b
	}

	// The same boot.
	text, js, b := status()
	if text.code != exitOK || js.code != exitOK || strings.Contains(text.stdout, "NOT THIS BOOT") || !strings.HasPrefix(text.stdout, "Last boot:") {
		t.Errorf("status in the boot that ran:\n%v\n%v", text, js)
	}
	if b.BootID != bootA || b.ThisBoot == nil || !*b.ThisBoot || b.CurrentBootID != bootA || b.LateSource != "" {
		t.Errorf("status --json in the boot that ran: %+v", b)
	}

	// Rebooted; boot has not run.
	writeFile(t, bootID, bootB+"\n", 0o444)
	text, js, b = status()
	want := "NOT THIS BOOT: seedkeeper boot has not recorded this boot (boot ID " + bootB + "): it has not run yet, or it failed before saving. What follows is from an earlier boot (boot ID " + bootA + ").\nLast boot:"
	if text.code != exitStatusNotRun || !strings.HasPrefix(text.stdout, want) {
		t.Errorf("status after a reboot: exit %d, want %d\n%s", text.code, exitStatusNotRun, text.stdout)
	}
	if !strings.Contains(text.stdout, "Late source: a seed (nocloud) is here, but seedkeeper boot has not decided on a source in this boot; nothing from it is applied until seedkeeper boot has run\n") {
		t.Errorf("status after a reboot does not say the seed is not decided on in this boot:\n%s", text.stdout)
	}
	if js.code != exitStatusNotRun || b.BootID != bootA || b.ThisBoot == nil || *b.ThisBoot || b.CurrentBootID != bootB {
		t.Errorf("status --json after a reboot: exit %d, %+v", js.code, b)
	}

	// Boot runs in the new boot: its record is current again.
	if r := runInProcess("boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	if text, _, b = status(); text.code != exitOK || strings.Contains(text.stdout, "NOT THIS BOOT") || b.BootID != bootB {
		t.Errorf("status after boot ran again: %v %+v", text, b)
	}

	// No boot ID to read under the root: nothing can be told, nothing is
	// claimed.
	if err := os.Remove(bootID); err != nil {
		t.Fatal(err)
	}
	if text, js, b = status(); text.code != exitOK || js.code != exitOK || strings.Contains(text.stdout, "NOT THIS BOOT") || b.ThisBoot != nil || b.CurrentBootID != "" {
		t.Errorf("status without a boot ID: %v %+v", text, b)
	}
}

// Each of what changed, what was applied and what waits is one line, and
// the --json form has them under "changes".
func TestStatusChanges(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	st := &agent.Status{Version: 1, Outcome: "ok", Changes: &intent.Result{
		Changed: []intent.Change{{Setting: "keys:admin", Kind: "changed"}, {Setting: "user-data:package_upgrade", Kind: "added"}},
		Applied: []string{"keys:admin: 1 added, 0 removed in /home/admin/.ssh/authorized_keys (seedkeeper)"},
		Waiting: []string{"user-data:package_upgrade: a package upgrade on a reboot is what a kept instance ID exists to avoid"},
	}}
	if err := agent.SaveStatus(sysroot.Root(root), st); err != nil {
		t.Fatal(err)
	}
	r := runInProcess("status", "--root", root)
	for _, want := range []string{
		"Changed:     keys:admin changed; user-data:package_upgrade added\n",
		"Applied:     keys:admin: 1 added, 0 removed in /home/admin/.ssh/authorized_keys (seedkeeper)\n",
		"Waiting:     user-data:package_upgrade: a package upgrade on a reboot is what a kept instance ID exists to avoid (until a new instance)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in:\n%s", want, r.stdout)
		}
	}
	j := runInProcess("status", "--root", root, "--json")
	var doc struct {
		Changes struct {
			Changed []intent.Change `json:"changed"`
			Waiting []string        `json:"waiting"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || len(doc.Changes.Changed) != 2 || len(doc.Changes.Waiting) != 1 {
		t.Errorf("--json changes: %+v, %v\n%s", doc.Changes, err, j.stdout)
	}
}

// watchRoot is a root in boot bootA whose boot published both guestinfo
// addresses and applied eth0, with the watch's record rec (nil: none).
func watchRoot(t *testing.T, rec string) string {
	t.Helper()
	const bootA = "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44"
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	writeFile(t, filepath.Join(root, agent.BootIDPath), bootA+"\n", 0o444)
	shipDropIn(t, root)
	st := &agent.Status{Version: 1, BootID: bootA, Outcome: "ok", Source: "vmware", Transport: "vmware-rpctool",
		Time:    time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC),
		Network: &agent.NetResult{Action: "applied", Owned: []string{"lan"}, Links: []string{"eth0"}, Allowlist: "vmxnet3 (platform default)"},
		Extra:   sourceduty.Extra{VMware: &sourceduty.VMwareStatus{Published: []string{"guestinfo.local-ipv4 192.0.2.71", "guestinfo.local-ipv6 2001:db8:7::71"}}}}
	if err := agent.SaveStatus(sysroot.Root(root), st); err != nil {
		t.Fatal(err)
	}
	if rec != "" {
		writeFile(t, filepath.Join(root, agent.WatchRecordPath), rec, 0o644)
	}
	return root
}

const watchRecordJSON = `{"version": 1, "boot_id": "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44",
  "guestinfo": [
    {"key": "guestinfo.local-ipv4", "value": "192.0.2.10", "at": "2026-12-01T14:02:11Z"},
    {"key": "guestinfo.local-ipv6", "failed": {"value": "2001:db8:7::99", "at": "2026-12-01T14:04:30Z", "error": "vmware-rpctool: Permission denied", "retry_at": "2026-12-01T14:05:00Z"}}
  ],
  "hotplug": [
    {"mac": "52:54:00:12:34:56", "events": [
      {"name": "eth2", "at": "2026-12-01T14:01:50Z", "result": "failed", "error": "reading live network: busy"},
      {"name": "eth2", "at": "2026-12-01T14:01:55Z", "result": "applied"}]},
    {"mac": "52:54:00:12:34:57", "events": [
      {"name": "eth3", "at": "2026-12-02T09:00:00Z", "result": "partial", "error": "network applied partially: 1 of 2 operations failed"}]},
    {"mac": "52:54:00:12:34:58", "events": [
      {"name": "eth4", "at": "2026-12-01T14:01:00Z", "result": "applied"},
      {"name": "eth4", "at": "2026-12-01T14:01:30Z", "result": "removed"}]}
  ]}`

// After a hot-add or a new lease, status said only what boot published
// and applied. What seedkeeper watch did in this boot is one line each,
// and the watch's guestinfo line replaces boot's for the same key.
func TestStatusWatchRecord(t *testing.T) {
	root := watchRoot(t, watchRecordJSON)
	r := runInProcess("status", "--root", root)
	if r.code != exitStatusDegraded { // eth3 applied in part, guestinfo.local-ipv6 not set
		t.Fatalf("status: %v", r)
	}
	want := "Network:     applied: 0 operations, 0 failed; owned NICs: lan\n" +
		"Hotplug:     allowlist vmxnet3 (platform default)\n" +
		"Hotplug:     eth4 (52:54:00:12:34:58): removed at 14:01:30\n" +
		"Hotplug:     eth2 (52:54:00:12:34:56): applied at 14:01:55\n" +
		"Hotplug:     eth3 (52:54:00:12:34:57): applied in part at 2026-12-02 09:00:00: network applied partially: 1 of 2 operations failed\n" +
		"Guestinfo:   published guestinfo.local-ipv6 2001:db8:7::71\n" +
		"Guestinfo:   published guestinfo.local-ipv4 192.0.2.10 (seedkeeper-watch, 14:02:11)\n" +
		"Guestinfo:   guestinfo.local-ipv6: setting failed (vmware-rpctool: Permission denied), trying again after 14:05:00\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("status:\n%s\nwant in it:\n%s", r.stdout, want)
	}
	if strings.Contains(r.stdout, "192.0.2.71") {
		t.Errorf("status still shows boot's guestinfo.local-ipv4, which the watch replaced:\n%s", r.stdout)
	}
	j := runInProcess("status", "--root", root, "--json")
	var doc struct {
		Watch *agent.WatchRecord `json:"watch"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || j.code != exitStatusDegraded || doc.Watch == nil ||
		len(doc.Watch.Hotplug) != 3 || len(doc.Watch.Hotplug[0].Events) != 2 || doc.Watch.Key("guestinfo.local-ipv4").Value != "192.0.2.10" {
		t.Errorf("status --json: %v %+v\n%s", err, doc.Watch, j.stdout)
	}
}

// A customization spec seedkeeper watch handled after boot is said
// after boot's VMware Tools lines, each line with when; one not applied
// as a whole makes the status degraded.
func TestStatusWatchCustomization(t *testing.T) {
	const rec = `{"version": 1, "boot_id": "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44", "customization": [
    {"at": "2026-12-01T14:03:00Z", "lines": ["spec (traditional kind, marker m-2) arrived", "instance ID: stays i-1"]},
    {"at": "2026-12-01T14:04:00Z", "lines": ["spec arrived and cannot be read \u001b[2J"], "failed": true}]}`
	root := watchRoot(t, rec)
	r := runInProcess("status", "--root", root)
	if r.code != exitStatusDegraded {
		t.Fatalf("status: %v", r)
	}
	want := "VMware Tools: spec (traditional kind, marker m-2) arrived (seedkeeper-watch, 14:03:00)\n" +
		"VMware Tools: instance ID: stays i-1 (seedkeeper-watch, 14:03:00)\n" +
		`VMware Tools: spec arrived and cannot be read \x1b[2J (seedkeeper-watch, 14:04:00)` + "\n"
	if !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("status:\n%s\nwant in it:\n%s", r.stdout, want)
	}
	// Without the failed one: nothing degraded.
	ok := watchRoot(t, `{"version": 1, "boot_id": "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44", "customization": [{"at": "2026-12-01T14:03:00Z", "lines": ["spec arrived"]}]}`)
	if r := runInProcess("status", "--root", ok); r.code != 0 {
		t.Errorf("status with a customization applied whole: %v", r)
	}
}

// Without a record of the watch, a record of another boot, status says
// what boot did, and nothing of the watch.
func TestStatusWatchRecordAbsentOrStale(t *testing.T) {
	for name, rec := range map[string]string{
		"absent":     "",
		"other boot": strings.Replace(watchRecordJSON, "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44", "0d3e5a71-c2b4-4f08-a9e6-7b1f3c5d8a20", 1),
	} {
		root := watchRoot(t, rec)
		r := runInProcess("status", "--root", root)
		if r.code != exitOK || !strings.Contains(r.stdout, "Guestinfo:   published guestinfo.local-ipv4 192.0.2.71\n") ||
			strings.Contains(r.stdout, "seedkeeper-watch") || strings.Contains(r.stdout, "eth2") || strings.Contains(r.stdout, "watch") {
			t.Errorf("%s: status:\n%s", name, r.stdout)
		}
		if j := runInProcess("status", "--root", root, "--json"); strings.Contains(j.stdout, `"watch`) {
			t.Errorf("%s: status --json has the watch:\n%s", name, j.stdout)
		}
	}
}

// A record that does not parse is one warning saying what and where,
// never quoting it; the rest of status stands.
func TestStatusWatchRecordCorrupt(t *testing.T) {
	const secret = "hunter2-d4b1"
	root := watchRoot(t, `{"version": 1, "guestinfo": `+secret)
	r := runInProcess("status", "--root", root)
	p := filepath.Join(root, agent.WatchRecordPath)
	want := "Warning:     what seedkeeper watch did after boot is not shown: " + p + ": not JSON (at byte 29)\n"
	if r.code != exitStatusDegraded || !strings.HasPrefix(r.stdout, "Last boot:") || !strings.Contains(r.stdout, want) ||
		!strings.Contains(r.stdout, "Guestinfo:   published guestinfo.local-ipv4 192.0.2.71\n") {
		t.Errorf("status with a corrupt watch record: %v\nwant %q", r, want)
	}
	j := runInProcess("status", "--root", root, "--json")
	var doc struct {
		WatchWarnings []string `json:"watch_warnings"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || len(doc.WatchWarnings) != 1 {
		t.Errorf("status --json: %v %q", err, doc.WatchWarnings)
	}
	if strings.Contains(r.stdout+r.stderr+j.stdout+j.stderr, secret) {
		t.Errorf("status quoted the record:\n%s%s", r.stdout, j.stdout)
	}
}

// Every value of the watch's record that came from outside (a link name
// the kernel took from a udev rule, a tool's or the kernel's error text)
// is printed escaped, and each entry stays on its one line.
func TestStatusWatchRecordEscapes(t *testing.T) {
	const rec = `{"version": 1,
  "guestinfo": [{"key": "guestinfo.local-ipv6", "failed": {"value": "2001:db8::9", "at": "2026-12-01T14:04:30Z",
    "error": "denied \u001b]0;owned\u0007 \u202eevil", "retry_at": "2026-12-01T14:05:00Z"}}],
  "hotplug": [{"mac": "52:54:00:12:34:56", "events": [
    {"name": "eth\u001b[2J\u0008", "at": "2026-12-01T14:01:50Z", "result": "failed", "error": "busy \u001b[31mred\t"}]}]}`
	root := watchRoot(t, rec)
	r := runInProcess("status", "--root", root)
	if r.code != exitStatusDegraded {
		t.Fatalf("status: %v", r)
	}
	for _, want := range []string{
		`Hotplug:     eth\x1b[2J\x08 (52:54:00:12:34:56): failed at 14:01:50: busy \x1b[31mred\t` + "\n",
		`Guestinfo:   guestinfo.local-ipv6: setting failed (denied \x1b]0;owned\x07 \u202eevil), trying again after 14:05:00` + "\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status:\n%s\nwant in it:\n%s", r.stdout, want)
		}
	}
	if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07\x08\t\u202e") {
		t.Errorf("status printed a control character of the record:\n%q", r.stdout)
	}
}

// A failed set the watch no longer tries again (the address went) is
// told as a failure, with no retry time that will not come.
func TestStatusWatchRecordFailureNotRetried(t *testing.T) {
	root := watchRoot(t, `{"version": 1, "guestinfo": [{"key": "guestinfo.local-ipv6",
  "failed": {"value": "2001:db8:7::99", "at": "2026-12-01T14:04:30Z", "error": "vmware-rpctool: Permission denied"}}]}`)
	r := runInProcess("status", "--root", root)
	want := "Guestinfo:   guestinfo.local-ipv6: setting failed (vmware-rpctool: Permission denied)\n"
	if r.code != exitStatusDegraded || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "trying again") || strings.Contains(r.stdout, "watch.json") {
		t.Errorf("status: %v\nwant in it %q", r, want)
	}
}

// shipDropIn puts the drop-in the package ships under root, as an
// installed image has it: without it status warns, and exits 2.
func shipDropIn(t *testing.T, root string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "etc/cloud/cloud.cfg.d/95-seedkeeper.cfg"), readFile(t, filepath.Join("..", "..", "packaging", "95-seedkeeper.cfg")), 0o644)
}
