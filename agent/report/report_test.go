package report_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/agent/report"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const bootA, bootB = "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44", "0d3e5a71-c2b4-4f08-a9e6-7b1f3c5d8a20"

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shippedDropIn puts the package's cloud-init drop-in and a plain
// cloud.cfg under root: the settings in force on an installed machine.
func shippedDropIn(t *testing.T, root string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "packaging", "95-seedkeeper.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "etc/cloud/cloud.cfg"), "datasource_list: [NoCloud, ConfigDrive, None]\nnetwork: {config: disabled}\n")
	write(t, filepath.Join(root, "etc/cloud/cloud.cfg.d/95-seedkeeper.cfg"), string(b))
}

func read(t *testing.T, root string) *report.Report {
	t.Helper()
	r, err := report.Read(agent.Env{Root: sysroot.Root(root)})
	if err != nil {
		t.Fatalf("report.Read: %v", err)
	}
	return r
}

func TestReadBeforeBoot(t *testing.T) {
	root := t.TempDir()
	if _, err := report.Read(agent.Env{Root: sysroot.Root(root)}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("before any boot: err = %v; want fs.ErrNotExist", err)
	}
	write(t, filepath.Join(root, agent.StatusPath), "{not json")
	if _, err := report.Read(agent.Env{Root: sysroot.Root(root)}); err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(root, agent.StatusPath)) {
		t.Errorf("a corrupt record: err = %v; want an error naming the file", err)
	}
}

// The record names its boot; the report says whether that is the running
// one, and claims nothing when either ID is missing.
func TestReadThisBoot(t *testing.T) {
	root := t.TempDir()
	shippedDropIn(t, root)
	if err := agent.SaveStatus(sysroot.Root(root), &agent.Status{Version: 1, BootID: bootA, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	bootID := filepath.Join(root, agent.BootIDPath)
	yes, no := true, false
	for _, tc := range []struct {
		current  string
		thisBoot *bool
	}{
		{bootA, &yes},
		{bootB, &no},
		{"", nil},
	} {
		if tc.current == "" {
			if err := os.Remove(bootID); err != nil {
				t.Fatal(err)
			}
		} else {
			write(t, bootID, tc.current+"\n")
		}
		r := read(t, root)
		if r.CurrentBootID != tc.current || (r.ThisBoot == nil) != (tc.thisBoot == nil) || (r.ThisBoot != nil && *r.ThisBoot != *tc.thisBoot) {
			t.Errorf("running boot %q: current %q, this boot %v; want %v", tc.current, r.CurrentBootID, r.ThisBoot, tc.thisBoot)
		}
		if want := tc.thisBoot == nil || *tc.thisBoot; r.Current() != want {
			t.Errorf("running boot %q: Current() = %v, want %v", tc.current, r.Current(), want)
		}
		if r.Outcome != "ok" || r.BootID != bootA {
			t.Errorf("the record is not the one saved: %+v", r.Status)
		}
	}
}

// The warnings are image check's drop-in item: the drop-in missing, in
// force, or overridden by a later file.
func TestReadCloudConfigWarnings(t *testing.T) {
	root := t.TempDir()
	if err := agent.SaveStatus(sysroot.Root(root), &agent.Status{Version: 1, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if w := read(t, root).Warnings; len(w) != 1 || !strings.Contains(w[0], "95-seedkeeper.cfg is missing") {
		t.Errorf("without the drop-in: %q", w)
	}
	shippedDropIn(t, root)
	if w := read(t, root).Warnings; len(w) != 0 {
		t.Errorf("with the drop-in in force: %q", w)
	}
	write(t, filepath.Join(root, "etc/cloud/cloud.cfg.d/99-local.cfg"), "datasource_list: [ConfigDrive]\n")
	want := []string{"datasource_list is set last by /etc/cloud/cloud.cfg.d/99-local.cfg, not to [NoCloud, None]; network.config: disabled (from /etc/cloud/cloud.cfg.d/95-seedkeeper.cfg)"}
	if w := read(t, root).Warnings; !slices.Equal(w, want) {
		t.Errorf("with an override: %q, want %q", w, want)
	}
}

// status says when a ds=nocloud line forces cloud-init's datasource, and
// what comes of it beside seedkeeper's seed: an http seedfrom that the
// drop-in makes harmless, an i= that nothing can.
func TestReadNoCloudLineWarnings(t *testing.T) {
	root := t.TempDir()
	if err := agent.SaveStatus(sysroot.Root(root), &agent.Status{Version: 1, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	shippedDropIn(t, root)
	write(t, filepath.Join(root, "proc/cmdline"), "root=/dev/vda1 ds=nocloud;s=https://seed.example/x/\n")
	w := read(t, root).Warnings
	if len(w) != 1 || !strings.Contains(w[0], "ds=nocloud with seedfrom in the kernel command line") || !strings.Contains(w[0], "cloud-init's local stage reads seedkeeper's seed and fetches nothing") {
		t.Errorf("an http seedfrom: %q", w)
	}
	write(t, filepath.Join(root, "proc/cmdline"), "root=/dev/vda1 ds=nocloud;i=iid-packer\n")
	w = read(t, root).Warnings
	if len(w) != 1 || !strings.Contains(w[0], "takes its instance ID from the i= of the kernel command line") || !strings.Contains(w[0], "fix: remove i= from the kernel command line") {
		t.Errorf("an i=: %q", w)
	}
	// cloud-init's own hotplug is said too, with what comes of it.
	write(t, filepath.Join(root, "proc/cmdline"), "root=/dev/vda1\n")
	write(t, filepath.Join(root, "etc/udev/rules.d/90-cloud-init-hook-hotplug.rules"), "# cloud-init\n")
	w = read(t, root).Warnings
	if len(w) != 1 || !strings.Contains(w[0], "cloud-init's hotplug is on") || !strings.Contains(w[0], "seedkeeper-watch configures the NICs seedkeeper owns") {
		t.Errorf("cloud-init's hotplug: %q", w)
	}
}

// A record without an identity decision (a boot that ended before it)
// comes with the pin; one with a decision does not, and the JSON form is
// the record's own.
func TestReadPin(t *testing.T) {
	root := t.TempDir()
	shippedDropIn(t, root)
	r0 := sysroot.Root(root)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := identity.Save(r0, &identity.State{InstanceID: "iid-pinned", MachineID: "m", Rule: identity.RuleFirstRun, RuleName: identity.RuleFirstRun.String(), PinnedAt: at, ConfirmedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := agent.SaveStatus(r0, &agent.Status{Version: 1, Outcome: "error", Error: "reading the seed: boom"}); err != nil {
		t.Fatal(err)
	}
	if r := read(t, root); r.Pin == nil || r.Pin.InstanceID != "iid-pinned" {
		t.Errorf("a record without a decision: pin %+v; want iid-pinned", r.Pin)
	}
	if err := agent.SaveStatus(r0, &agent.Status{Version: 1, Outcome: "ok", Identity: &identity.Decision{InstanceID: "iid-decided"}}); err != nil {
		t.Fatal(err)
	}
	r := read(t, root)
	if r.Pin != nil {
		t.Errorf("a record with a decision also carries the pin %+v", r.Pin)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["Pin"]; ok || m["outcome"] != "ok" || !strings.Contains(string(b), `"iid-decided"`) {
		t.Errorf("JSON form: %s", b)
	}
}

// A customization the watch did not apply as a whole is a problem that
// says why, not what arrived (the first of its lines); a record written
// before the reason was kept says where the reason is.
func TestProblemsCustomizationSaysWhy(t *testing.T) {
	root := t.TempDir()
	shippedDropIn(t, root)
	if err := agent.SaveStatus(sysroot.Root(root), &agent.Status{Version: 1, BootID: bootA, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, agent.BootIDPath), bootA+"\n")
	write(t, filepath.Join(root, agent.WatchRecordPath), `{"version": 1, "boot_id": "`+bootA+`", "customization": [
    {"at": "2026-12-01T14:02:11Z", "lines": ["VMware customization spec (traditional kind) arrived in /var/run/vmware-imc while the VM runs", "network: not applied: netlink: busy"], "failed": true, "why": "network: not applied: netlink: busy"},
    {"at": "2026-12-01T14:02:12Z", "lines": ["VMware customization spec (traditional kind) arrived in /var/run/vmware-imc while the VM runs", "network: not applied: netlink: busy"], "failed": true},
    {"at": "2026-12-01T14:02:13Z", "lines": ["VMware customization spec (traditional kind) arrived in /var/run/vmware-imc while the VM runs"]}
  ]}`)
	r := read(t, root)
	var got []string
	for _, p := range r.Problems() {
		if strings.HasPrefix(p, "customization") {
			got = append(got, p)
		}
	}
	want := []string{
		"customization after boot not applied as a whole: network: not applied: netlink: busy",
		"customization after boot not applied as a whole (its lines say why)",
	}
	if !slices.Equal(got, want) || r.Verdict() != report.Degraded {
		t.Errorf("problems %q (verdict %v), want %q", got, r.Verdict(), want)
	}
}
