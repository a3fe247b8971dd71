package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The dry run is a precondition: a seal given its digest (or its JSON)
// plans again before acting and, when the image changed in between,
// changes nothing, says what changed and exits 5.
func TestImageSealExpectRefusesAChangedPlan(t *testing.T) {
	root := imageRoot(t, kvmUUID)
	cloudInitRan(t, root, "template-1")
	planFile := filepath.Join(t.TempDir(), "plan.json")

	dry := runInProcess("image", "seal", "--root", root, "--dry-run", "--json")
	var plan sealJSON
	if dry.code != exitOK || json.Unmarshal([]byte(dry.stdout), &plan) != nil || plan.SchemaVersion != 1 || !plan.DryRun ||
		!strings.HasPrefix(plan.Digest, "sha256:") || len(plan.Actions) == 0 {
		t.Fatalf("dry run --json: %v", dry)
	}
	if err := os.WriteFile(planFile, []byte(dry.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	text := runInProcess("image", "seal", "--root", root, "--dry-run")
	if !strings.Contains(text.stdout, "\nPlan digest: "+plan.Digest+"\n") {
		t.Errorf("the text dry run does not end with the same digest:\n%s", text.stdout)
	}

	// Between the two: cloud-init wrote its log again, and a new
	// instance directory appeared.
	later := time.Now().Add(time.Hour)
	writeFile(t, filepath.Join(root, "var/log/cloud-init.log"), "ran again, longer\n", 0o644)
	os.Chtimes(filepath.Join(root, "var/log/cloud-init.log"), later, later)
	writeFile(t, filepath.Join(root, "var/lib/cloud/instances/template-2/sem/x"), "", 0o644)
	os.Chtimes(filepath.Join(root, "var/lib/cloud/instances"), later, later)
	before := filesUnder(t, root)

	for _, expect := range []string{planFile, plan.Digest} {
		r := runInProcess("image", "seal", "--root", root, "--expect", expect)
		if r.code != exitPlanChanged {
			t.Fatalf("--expect %s after a change: %v, want exit %d", expect, r, exitPlanChanged)
		}
		if after := filesUnder(t, root); !slices.Equal(after, before) {
			t.Fatalf("--expect %s: a refused seal changed files", expect)
		}
		if !strings.Contains(r.stderr, "the plan is no longer the one that was read") {
			t.Errorf("--expect %s: %q", expect, r.stderr)
		}
		if expect == planFile {
			for _, want := range []string{"changed since the plan: remove /var/log/cloud-init.log (file size=18", "changed since the plan: remove-tree /var/lib/cloud/instances"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("what changed lacks %q:\n%s", want, r.stderr)
				}
			}
		}
	}

	// Planned again and read again: the seal goes ahead.
	dry = runInProcess("image", "seal", "--root", root, "--dry-run", "--json")
	json.Unmarshal([]byte(dry.stdout), &plan)
	r := runInProcess("image", "seal", "--root", root, "--expect", plan.Digest, "--json")
	var done sealJSON
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &done) != nil || done.Digest != plan.Digest || done.DryRun || done.Check == nil {
		t.Fatalf("--expect the current digest: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "var/log/cloud-init.log")); !os.IsNotExist(err) {
		t.Errorf("the log is still there after the seal: %v", err)
	}
	for _, bad := range []string{"sha256:xyz", filepath.Join(root, "etc/machine-id")} {
		if r := runInProcess("image", "seal", "--root", root, "--expect", bad); r.code != exitUsage {
			t.Errorf("--expect %s: %v, want usage", bad, r)
		}
	}
}
