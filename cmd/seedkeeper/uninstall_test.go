package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A boot that imported a person's seed, then the removal's uninstall: the
// person's seed is back byte for byte, nothing of seedkeeper's is left
// under /var/lib/cloud, and a hand-edited file is named on stderr and
// kept.
func TestUninstallGivesTheSeedBack(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	seedDir := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	copyDir(t, fixtureSeed, seedDir)
	if r := runBinary(t, nil, "boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	r := runBinary(t, nil, "uninstall", "--root", root)
	if r.code != exitOK || r.stderr != "" || !strings.Contains(r.stdout, "gave back /var/lib/cloud/seed/nocloud/network-config\n") {
		t.Fatalf("uninstall: %v", r)
	}
	ents, _ := os.ReadDir(fixtureSeed)
	got, _ := os.ReadDir(seedDir)
	if len(got) != len(ents) {
		t.Errorf("seed directory holds %v; want the fixture's %v", got, ents)
	}
	for _, e := range ents {
		if readFile(t, filepath.Join(seedDir, e.Name())) != readFile(t, filepath.Join(fixtureSeed, e.Name())) {
			t.Errorf("%s is not the person's, byte for byte", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/seedkeeper/identity.json")); err != nil {
		t.Errorf("uninstall touched seedkeeper's state: %v", err)
	}

	// Installed again, booted, and a hand edit before the removal.
	if r := runBinary(t, nil, "boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	os.WriteFile(filepath.Join(seedDir, "vendor-data"), []byte("#cloud-config\n# secret edit\n"), 0o600)
	r = runBinary(t, nil, "uninstall", "--root", root)
	want := "seedkeeper uninstall: left /var/lib/cloud/seed/nocloud/vendor-data: changed since seedkeeper wrote it"
	if r.code != exitOK || !strings.HasPrefix(r.stderr, want) || strings.Contains(r.stderr, "secret") {
		t.Errorf("uninstall after a hand edit: %v; want stderr starting %q", r, want)
	}
	if r := runBinary(t, nil, "uninstall", "--root", root, "stray"); r.code != exitUsage {
		t.Errorf("uninstall stray: %v", r)
	}
}
