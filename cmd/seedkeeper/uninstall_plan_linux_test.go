package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// treeState is every entry under root: its kind, mode, size, content's
// hash or link's target, modification and change times. Two equal states
// mean nothing under root was written, removed, renamed or changed.
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		v := fmt.Sprintf("%v size=%d mtime=%d ctime=%d.%d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), st.Ctim.Sec, st.Ctim.Nsec)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" sha256=%x", sha256.Sum256(b))
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		out[strings.TrimPrefix(p, root)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, was, now map[string]string) {
	t.Helper()
	for p, v := range was {
		if now[p] != v {
			t.Errorf("%s changed %s: was %q, now %q", what, p, v, now[p])
		}
	}
	for p, v := range now {
		if _, ok := was[p]; !ok {
			t.Errorf("%s made %s (%s)", what, p, v)
		}
	}
}

var planDigest = regexp.MustCompile(`(?m)^Plan digest: (sha256:[0-9a-f]{64})$`)

// A booted root with a person's seed to give back, a network file of ours
// and the no-source gate: the dry run lists each of them, in text and in
// JSON with one digest, and leaves the root as it was, byte for byte and
// time for time.
func TestUninstallDryRunChangesNothing(t *testing.T) {
	root := bootedForUninstall(t)
	before := treeState(t, root)
	time.Sleep(10 * time.Millisecond) // a write after this has another mtime

	r := runBinary(t, nil, "uninstall", "--root", root, "--dry-run")
	if r.code != exitOK {
		t.Fatalf("uninstall --dry-run: %v", r)
	}
	for _, want := range []string{
		"Dry run: uninstall under " + root + " would do this, and nothing else:\n",
		"  remove          /var/lib/cloud/seed/nocloud/meta-data: written by seedkeeper",
		"  give-back       /var/lib/cloud/seed/nocloud/network-config: a person's seed, from /var/lib/seedkeeper/imported-seed/network-config",
		"  remove          /var/lib/cloud/seed/nocloud/.seedkeeper: seedkeeper's marker",
		"  remove-tree     /var/lib/seedkeeper/imported-seed: ",
		"  remove          /run/systemd/network/05-seedkeeper-eth0.network: a network file seedkeeper rendered",
		"  remove          /run/seedkeeper/no-source: the no-source gate",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run's plan lacks %q:\n%s", want, r.stdout)
		}
	}
	m := planDigest.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no plan digest in:\n%s", r.stdout)
	}
	j := runBinary(t, nil, "uninstall", "--root", root, "--dry-run", "--json")
	var plan uninstallJSON
	if j.code != exitOK || json.Unmarshal([]byte(j.stdout), &plan) != nil {
		t.Fatalf("uninstall --dry-run --json: %v", j)
	}
	if plan.SchemaVersion != uninstallSchemaVersion || !plan.DryRun || plan.Digest != m[1] || len(plan.Actions) == 0 || len(plan.Removed) != 0 {
		t.Errorf("dry run's JSON: %+v; want schema %d, dry_run, digest %s, actions, nothing removed", plan, uninstallSchemaVersion, m[1])
	}
	for _, a := range plan.Actions {
		if a.State == "" || a.Op == "" || a.Why == "" {
			t.Errorf("action without op, why or state: %+v", a)
		}
	}
	sameTree(t, "uninstall --dry-run", before, treeState(t, root))

	// The plan read is the plan carried out: exactly its removals.
	r = runBinary(t, nil, "uninstall", "--root", root, "--expect", m[1], "--json")
	var done uninstallJSON
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &done) != nil {
		t.Fatalf("uninstall --expect (the plan unchanged): %v", r)
	}
	if done.Digest != m[1] || done.DryRun {
		t.Errorf("uninstall --expect carried out digest %s; want %s", done.Digest, m[1])
	}
	var planned []string
	for _, a := range plan.Actions {
		if a.Op == "remove" && strings.Contains(a.State, "sha256=") || strings.Contains(a.Why, "network file") || strings.Contains(a.Why, "no-source") {
			planned = append(planned, a.Path)
		}
	}
	if strings.Join(planned, " ") != strings.Join(done.Removed, " ") {
		t.Errorf("removed %v; the plan said %v", done.Removed, planned)
	}
	for _, p := range done.Removed {
		if slices.Contains(done.Restored, p) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there after the uninstall (%v)", p, err)
		}
	}
}

// A file changed between the dry run and the real run: --expect with the
// digest, or with the dry run's JSON, refuses with exit 5, says what
// changed, and leaves the root as it was.
func TestUninstallExpectRefusesAChangedPlan(t *testing.T) {
	root := bootedForUninstall(t)
	j := runBinary(t, nil, "uninstall", "--root", root, "--dry-run", "--json")
	var plan uninstallJSON
	if j.code != exitOK || json.Unmarshal([]byte(j.stdout), &plan) != nil {
		t.Fatalf("uninstall --dry-run --json: %v", j)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	os.WriteFile(planFile, []byte(j.stdout), 0o600)

	// The seed's user-data written again between the two (a boot, by
	// hand): another size and time, the same name.
	ud := filepath.Join(root, "var/lib/cloud/seed/nocloud/user-data")
	if err := os.WriteFile(ud, []byte("#cloud-config\n# the admin's edit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, root)
	time.Sleep(10 * time.Millisecond)

	r := runBinary(t, nil, "uninstall", "--root", root, "--expect", plan.Digest)
	if r.code != exitPlanChanged || !strings.Contains(r.stderr, "seedkeeper uninstall: the plan is no longer the one that was read: its digest is sha256:") ||
		!strings.Contains(r.stderr, "not "+plan.Digest+"; nothing was changed") || strings.Contains(r.stderr, "admin's edit") {
		t.Errorf("uninstall --expect DIGEST after a change: %v; want exit %d and the digests", r, exitPlanChanged)
	}
	sameTree(t, "a refused uninstall --expect DIGEST", before, treeState(t, root))

	r = runBinary(t, nil, "uninstall", "--root", root, "--expect", planFile)
	if r.code != exitPlanChanged || !strings.Contains(r.stderr, "  no longer planned: given-back /var/lib/cloud/seed/nocloud/user-data\n") {
		t.Errorf("uninstall --expect FILE after a change: %v; want exit %d and what changed", r, exitPlanChanged)
	}
	r = runBinary(t, nil, "uninstall", "--root", root, "--expect", planFile, "--json")
	var out uninstallJSON
	if r.code != exitPlanChanged || json.Unmarshal([]byte(r.stdout), &out) != nil || !out.PlanChanged || out.Digest == plan.Digest || len(out.Removed) != 0 {
		t.Errorf("uninstall --expect FILE --json after a change: %v", r)
	}
	sameTree(t, "a refused uninstall --expect FILE", before, treeState(t, root))

	for _, bad := range []string{"sha256:abc", filepath.Join(root, "etc/hostname-none")} {
		if r := runBinary(t, nil, "uninstall", "--root", root, "--expect", bad); r.code != exitUsage {
			t.Errorf("uninstall --expect %s: %v; want exit %d", bad, r, exitUsage)
		}
	}
}

// bootedForUninstall is a scratch root booted over a person's seed, with
// the network file boot rendered and the no-source gate in place.
func bootedForUninstall(t *testing.T) string {
	t.Helper()
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	if r := runBinary(t, nil, "boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	for p, b := range map[string]string{
		"run/seedkeeper/no-source": "",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
