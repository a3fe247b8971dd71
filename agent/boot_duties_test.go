package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testsource"
)

// dutyFile is what the test source's duty name wrote under root; "" when
// it did not run.
func dutyFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, testsource.DutyDir, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// A source's duties run in the boot flow where its table entry says,
// whatever the source: the test source, added to the table, gets each of
// them called in order, with what it needs (the root, the network step's
// result, the outcome), and fills its status fields.
func TestBootRunsSourceDuties(t *testing.T) {
	testsource.Add(t)
	root := kvmRoot(t, map[string]string{
		"testsrc/instance-id":    "iid-duties\n",
		"testsrc/network-config": "version: 2\nethernets:\n  lan:\n    match: {macaddress: \"02:00:00:00:00:01\"}\n    addresses: [192.0.2.5/24]\n",
	})
	e := agent.Env{Root: sysroot.Root(root)}
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil || st.Source != testsource.Name || st.Outcome != "ok" {
		t.Fatalf("Boot: %v, source %q, outcome %q", err, st.Source, st.Outcome)
	}
	want := []string{
		"after-read: instance iid-duties, live false",
		"after-seed: seed written: true",
		"after-network: planned (not applied: --network plan, or --root without --network apply) owned [] links []",
		"end: outcome ok",
	}
	if !slices.Equal(st.Duties, want) {
		t.Errorf("status duties:\n%q\nwant\n%q", st.Duties, want)
	}
	saved, err := agent.ReadStatus(sysroot.Root(root))
	if err != nil || !slices.Equal(saved.Duties, want) {
		t.Errorf("saved status duties: %v, %q", err, saved.Duties)
	}
	for _, w := range want {
		name, line, _ := strings.Cut(w, ": ")
		if got := dutyFile(t, root, name); got != line {
			t.Errorf("%s wrote %q, want %q", name, got, line)
		}
	}

	// A source whose metadata is redacted once read says so, and the
	// changes of a kept instance (cloud-init ran with its ID) are not
	// compared; without it they are.
	writeFile(t, filepath.Join(root, "var/lib/cloud/data/instance-id"), "iid-duties\n")
	for _, redact := range []bool{false, true} {
		if redact {
			writeFile(t, filepath.Join(root, "testsrc/redact"), "")
		}
		st, err = agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
		if err != nil || st.Changes == nil || strings.HasPrefix(st.Changes.Baseline, "the metadata is redacted after each read") != redact {
			t.Errorf("boot of the kept instance, redacted %t: %v, changes %+v", redact, err, st.Changes)
		}
	}
}

// A boot that fails after the read still runs the source's end duty, with
// the outcome, and none of the duties of the steps it did not reach.
func TestBootSourceDutiesOnFailure(t *testing.T) {
	testsource.Add(t)
	root := kvmRoot(t, map[string]string{"testsrc/instance-id": "iid-fails\n"})
	// The seed directory cannot be made: the seed step fails.
	if err := os.MkdirAll(filepath.Join(root, "var/lib/cloud/seed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/cloud/seed/nocloud"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{Network: agent.NetworkPlan})
	if err == nil || st.Outcome != "error" {
		t.Fatalf("Boot: %v, outcome %q; want the seed step to fail", err, st.Outcome)
	}
	if want := []string{"after-read: instance iid-fails, live false", "end: outcome error"}; !slices.Equal(st.Duties, want) {
		t.Errorf("status duties %q, want %q", st.Duties, want)
	}
	for _, name := range []string{"after-seed", "after-network"} {
		if got := dutyFile(t, root, name); got != "" {
			t.Errorf("%s ran in a boot that failed before it: %q", name, got)
		}
	}
}
