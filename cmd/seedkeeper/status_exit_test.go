package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/intent"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const statusBootA, statusBootB = "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44", "0d3e5a71-c2b4-4f08-a9e6-7b1f3c5d8a20"

// statusRoot is a root running boot statusBootA, with the shipped drop-in
// and st saved as the last boot's record (nil: none).
func statusRoot(t *testing.T, st *agent.Status) string {
	t.Helper()
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	writeFile(t, filepath.Join(root, agent.BootIDPath), statusBootA+"\n", 0o444)
	shipDropIn(t, root)
	if st != nil {
		if err := agent.SaveStatus(sysroot.Root(root), st); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// status exited 0 after a boot that failed: fleet scripts could not tell.
// Each outcome has its exit status, as cloud-init status's, the same in
// text and in --json, whose "verdict" and "problems" say why.
func TestStatusExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		st       *agent.Status
		code     int
		verdict  string
		problems []string // each a part of one problem, in order
	}{
		{"ok", &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok"}, 0, "ok", nil},
		{"no source", &agent.Status{Version: 1, BootID: statusBootA, Outcome: "no-source"}, 0, "ok", nil},
		{"failed boot", &agent.Status{Version: 1, BootID: statusBootA, Outcome: "error", Error: "reading the seed: boom"}, 1, "failed", nil},
		{"network in part", &agent.Status{Version: 1, BootID: statusBootA, Outcome: "partial",
			Network: &agent.NetResult{Action: "applied", Failed: []string{"add 192.0.2.5/24 to eth1: file exists"}}}, 2, "degraded",
			[]string{"network: add 192.0.2.5/24 to eth1: file exists"}},
		{"configuration not used", &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok", ConfigError: "config.yaml: line 3: unknown key"}, 2, "degraded",
			[]string{"configuration not used: config.yaml: line 3"}},
		{"changed setting failed", &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok",
			Changes: &intent.Result{Failed: []string{"password:admin: chpasswd: exit status 1"}}}, 2, "degraded",
			[]string{"changed setting not applied: password:admin"}},
		{"seed warning", &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok",
			Seed: &agent.SeedStatus{Dir: "/var/lib/cloud/seed/nocloud", Warnings: []string{"meta-data was changed by hand"}}}, 2, "degraded",
			[]string{"meta-data was changed by hand"}},
		{"not run in this boot", &agent.Status{Version: 1, BootID: statusBootB, Outcome: "ok"}, 5, "not-run", nil},
		{"failed in an earlier boot", &agent.Status{Version: 1, BootID: statusBootB, Outcome: "error", Error: "boom"}, 5, "not-run", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := statusRoot(t, tc.st)
			text := runBinary(t, nil, "status", "--root", root)
			if text.code != tc.code {
				t.Errorf("status: exit %d, want %d\n%s%s", text.code, tc.code, text.stdout, text.stderr)
			}
			js := runBinary(t, nil, "status", "--root", root, "--json")
			var doc struct {
				Outcome  string   `json:"outcome"`
				Verdict  string   `json:"verdict"`
				Problems []string `json:"problems"`
			}
			if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil || js.code != tc.code {
				t.Fatalf("status --json: exit %d, %v\n%s", js.code, err, js.stdout)
			}
			if doc.Verdict != tc.verdict || doc.Outcome != tc.st.Outcome || len(doc.Problems) != len(tc.problems) {
				t.Errorf("status --json: %+v; want verdict %s, problems %q", doc, tc.verdict, tc.problems)
			}
			for i, p := range tc.problems {
				if i < len(doc.Problems) && !strings.Contains(doc.Problems[i], p) {
					t.Errorf("problem %d: %q, want it to say %q", i, doc.Problems[i], p)
				}
			}
		})
	}
	t.Run("never ran", func(t *testing.T) {
		r := runBinary(t, nil, "status", "--root", statusRoot(t, nil))
		if r.code != 5 || r.stderr != "seedkeeper boot has not run on this machine yet\n" {
			t.Errorf("status before any boot: %v", r)
		}
	})
	t.Run("unreadable record", func(t *testing.T) {
		root := statusRoot(t, nil)
		writeFile(t, filepath.Join(root, agent.StatusPath), "{not json", 0o600)
		if r := runBinary(t, nil, "status", "--root", root); r.code != 1 || !strings.Contains(r.stderr, "status.json") {
			t.Errorf("status with a corrupt record: %v", r)
		}
	})
}

// status --wait returns once boot has saved this boot's record and the
// watch, its unit enabled, has marked itself ready; then it exits as
// status does.
func TestStatusWaitFinishes(t *testing.T) {
	t.Parallel()
	root := statusRoot(t, &agent.Status{Version: 1, BootID: statusBootB, Outcome: "ok"})
	// The watch's unit is enabled: its readiness is waited for too.
	writeFile(t, filepath.Join(root, agent.WatchUnitWants), "", 0o644)
	done := make(chan procResult, 1)
	go func() { done <- runInProcess("status", "--root", root, "--wait", "--timeout", "1m") }()

	select {
	case r := <-done:
		t.Fatalf("status --wait returned before boot ran: %v", r)
	case <-time.After(3 * waitPoll):
	}
	if err := agent.SaveStatus(sysroot.Root(root), &agent.Status{Version: 1, BootID: statusBootA, Outcome: "error", Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("status --wait returned before the watch was ready: %v", r)
	case <-time.After(3 * waitPoll):
	}
	writeFile(t, filepath.Join(root, agent.WatchReadyPath), statusBootB+"\n", 0o644)
	select {
	case r := <-done:
		t.Fatalf("status --wait took the watch's mark of another boot: %v", r)
	case <-time.After(3 * waitPoll):
	}
	writeFile(t, filepath.Join(root, agent.WatchReadyPath), statusBootA+"\n", 0o644)
	r := <-done
	if r.code != exitStatusFailed || !strings.Contains(r.stdout, "): error\n") || r.stderr != "" {
		t.Errorf("status --wait after a failed boot: %v", r)
	}
}

// A --timeout that runs out says what was still awaited and exits 10;
// without the watch's unit enabled only boot is waited for.
func TestStatusWaitTimesOut(t *testing.T) {
	t.Parallel()
	root := statusRoot(t, &agent.Status{Version: 1, BootID: statusBootB, Outcome: "ok"})
	r := runBinary(t, nil, "status", "--root", root, "--wait", "--timeout", "300ms")
	if r.code != exitTryAgain || r.stdout != "" ||
		r.stderr != "seedkeeper status: --timeout 300ms ran out before seedkeeper boot finished in this boot\n" {
		t.Errorf("status --wait, boot not run: %v", r)
	}
	if err := agent.SaveStatus(sysroot.Root(root), &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, nil, "status", "--root", root, "--wait", "--timeout", "300ms"); r.code != exitOK {
		t.Errorf("status --wait, boot done, no watch enabled: %v", r)
	}
	writeFile(t, filepath.Join(root, agent.WatchUnitWants), "", 0o644)
	r = runBinary(t, nil, "status", "--root", root, "--wait", "--timeout", "300ms")
	if r.code != exitTryAgain || r.stderr != "seedkeeper status: --timeout 300ms ran out before seedkeeper watch was ready in this boot\n" {
		t.Errorf("status --wait, watch not ready: %v", r)
	}
	for _, args := range [][]string{{"--timeout", "5s"}, {"--wait", "--timeout", "-1s"}} {
		if r := runBinary(t, nil, append([]string{"status", "--root", root}, args...)...); r.code != exitUsage {
			t.Errorf("status %q: %v", args, r)
		}
	}
}

// --format prometheus prints the metrics and exits as status does; with
// no record at all, the not-run verdict alone.
func TestStatusPrometheus(t *testing.T) {
	root := statusRoot(t, &agent.Status{Version: 1, BootID: statusBootA, Outcome: "error", Error: "boom"})
	r := runBinary(t, nil, "status", "--root", root, "--format", "prometheus")
	if r.code != exitStatusFailed || !strings.Contains(r.stdout, "# TYPE seedkeeper_status_verdict gauge\n") ||
		!strings.Contains(r.stdout, "seedkeeper_status_verdict{verdict=\"failed\"} 1\n") ||
		!strings.Contains(r.stdout, "seedkeeper_last_boot_outcome{outcome=\"error\"} 1\n") {
		t.Errorf("status --format prometheus: %v", r)
	}
	r = runBinary(t, nil, "status", "--root", statusRoot(t, nil), "--format", "prometheus")
	if r.code != exitStatusNotRun || !strings.Contains(r.stdout, "seedkeeper_status_verdict{verdict=\"not-run\"} 1\n") || strings.Contains(r.stdout, "outcome") {
		t.Errorf("status --format prometheus before any boot: %v", r)
	}
	for _, args := range [][]string{{"--format", "xml"}, {"--json", "--format", "prometheus"}} {
		if r := runBinary(t, nil, append([]string{"status", "--root", root}, args...)...); r.code != exitUsage || strings.Contains(r.stderr, "xml") {
			t.Errorf("status %q: %v", args, r)
		}
	}
}

// With metrics.textfile_dir set, the watch keeps seedkeeper.prom there:
// here a watch with nothing to watch, which writes it once ready.
func TestWatchKeepsMetricsTextfile(t *testing.T) {
	root := statusRoot(t, &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok"})
	writeFile(t, filepath.Join(root, "etc/seedkeeper/config.yaml"), "events: {network: [boot]}\nmetrics: {textfile_dir: /var/lib/node-exporter}\n", 0o644)
	r := runInProcess("watch", "--root", root, "--network", "apply")
	if r.code != exitOK {
		t.Fatalf("watch: %v", r)
	}
	got := readFile(t, filepath.Join(root, "var/lib/node-exporter/seedkeeper.prom"))
	want := runInProcess("status", "--root", root, "--format", "prometheus").stdout
	if got != want || !strings.Contains(got, "seedkeeper_status_verdict{verdict=\"ok\"} 1\n") {
		t.Errorf("the textfile:\n%s\nwant what status prints:\n%s", got, want)
	}
	// Only planning, the watch writes nothing.
	root = statusRoot(t, &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok"})
	writeFile(t, filepath.Join(root, "etc/seedkeeper/config.yaml"), "events: {network: [boot]}\nmetrics: {textfile_dir: /var/lib/node-exporter}\n", 0o644)
	if r := runInProcess("watch", "--root", root, "--network", "plan"); r.code != exitOK {
		t.Fatalf("watch: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/node-exporter/seedkeeper.prom")); !os.IsNotExist(err) {
		t.Errorf("a watch that only plans wrote the textfile: %v", err)
	}
}
