package main

// The command around a missing source: what watch and status say of a
// seed that came late. What the boot flow does without a source, then
// with one (templates, clones, a late CD-ROM, a silent mdata host), is
// tested in process in agent/boot_placeholder_linux_test.go.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// reboot forgets what lives on tmpfs.
func reboot(t *testing.T, root string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, "run")); err != nil {
		t.Fatal(err)
	}
}

func bootNoSource(t *testing.T, root string) procResult {
	t.Helper()
	r := runBinary(t, nil, "boot", "--root", root)
	if r.code != exitNoSource {
		t.Fatalf("boot without a seed: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err != nil {
		t.Errorf("cloud-init is not held back on a boot without a source: %v", err)
	}
	return r
}

// wantFirstRun checks that boot handed cloud-init the reported ID as a
// new instance and that status says why the placeholder was not kept.
func wantFirstRun(t *testing.T, root, reported string, placeholder bool) {
	t.Helper()
	if got := metaDataID(t, root); got != reported {
		t.Errorf("cloud-init is handed %q; want the reported %q", got, reported)
	}
	ci := strings.TrimSpace(readFileIfAny(filepath.Join(root, "var/lib/cloud/data/instance-id")))
	if ci == reported {
		t.Fatalf("cloud-init already ran with %q: the test proves nothing", reported)
	}
	st := readStatus(t, root)
	if st.Identity == nil || st.Identity.RuleName != "first-run" || st.Identity.PinnedID != reported {
		t.Errorf("decision: %+v", st.Identity)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err == nil {
		t.Error("cloud-init is still held back on a boot with a source")
	}
	s := runBinary(t, nil, "status", "--root", root)
	want := "Instance ID: " + reported + " (reported " + reported + "; rule 6, first-run)"
	if !strings.Contains(s.stdout, want) {
		t.Errorf("status lacks %q:\n%s", want, s.stdout)
	}
	if placeholder && !strings.Contains(s.stdout, `cloud-init ran before with "iid-datasource-none", but that is not an identity`) {
		t.Errorf("status does not say why the placeholder was not kept:\n%s", s.stdout)
	}
}

func readFileIfAny(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// A late CD-ROM, after the fact: it appears after boot found no
// source. watch applies nothing from it, status says it takes effect on
// the next boot, and the next boot applies it as a new instance.
func TestLateSeedTakesEffectOnNextBoot(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	bootNoSource(t, root)
	reported := attachProxmoxISO(t, root, "192.0.2.53")

	s := runBinary(t, nil, "status", "--root", root)
	const next = "; it takes effect on the next boot, and nothing from it is applied before\n"
	if !strings.Contains(s.stdout, "Late source: a seed appeared after boot: boot found no metadata source at ") ||
		!strings.Contains(s.stdout, ", and nocloud is here now"+next) {
		t.Errorf("status does not say the seed came late:\n%s", s.stdout)
	}
	before := filesUnder(t, root)
	w := runBinary(t, nil, "watch", "--root", root)
	if w.code != exitOK || !strings.Contains(w.stderr, `msg="watch: a seed appeared after boot: boot found no metadata source at `) {
		t.Fatalf("watch: %v", w)
	}
	// watch wrote nothing but its note for status: no seed, no network
	// files, no identity.
	after := filesUnder(t, root)
	want := append(before, "run/seedkeeper/late-source")
	slices.Sort(want)
	if !slices.Equal(after, want) {
		t.Errorf("files after watch: %q; want %q", after, want)
	}
	if j := runBinary(t, nil, "status", "--root", root, "--json"); !strings.Contains(j.stdout, `"late_source": "a seed appeared after boot`) {
		t.Errorf("status --json lacks late_source:\n%s", j.stdout)
	}

	reboot(t, root)
	bootOK(t, root)
	wantFirstRun(t, root, reported, false)
	if s := runBinary(t, nil, "status", "--root", root); strings.Contains(s.stdout, "Late source:") {
		t.Errorf("status after the next boot still reports a late source:\n%s", s.stdout)
	}
}
