package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatusBeforeBoot(t *testing.T) {
	root := t.TempDir()
	r := runInProcess("status", "--root", root)
	if r.code != exitNotFound || r.stdout != "" || r.stderr != "seedkeeper boot has not run on this machine yet\n" {
		t.Errorf("status before boot: %v", r)
	}
	p := filepath.Join(root, statusPath)
	writeFile(t, p, "{not json", 0o644)
	r = runInProcess("status", "--root", root, "--json")
	if r.code != exitError || !strings.Contains(r.stderr, p) {
		t.Errorf("status with a corrupt status.json: %v", r)
	}
}

// A boot that fails says so, and why, in status.
func TestStatusAfterFailedBoot(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	seed := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	copyDir(t, fixtureSeed, seed)
	// A meta-data that is not a mapping leaves nothing to use (a bad
	// network-config only drops the network, issue 11 class 7).
	writeFile(t, filepath.Join(seed, "meta-data"), "- a list\n", 0o644)
	r := runInProcess("boot", "--root", root)
	if r.code != exitError || !strings.Contains(r.stderr, "meta-data must be a mapping") {
		t.Fatalf("boot with a bad meta-data: %v", r)
	}
	s := runInProcess("status", "--root", root)
	if s.code != exitOK || !strings.Contains(s.stdout, "): error\n") || !strings.Contains(s.stdout, "Error:       ") ||
		!strings.Contains(s.stdout, "/var/lib/cloud/seed/nocloud/meta-data") {
		t.Errorf("status after a failed boot:\n%s", s.stdout)
	}
}

// status warns when another cloud-init file overrides seedkeeper's
// drop-in (image check's drop-in item); it does not when the shipped
// drop-in is in force.
func TestStatusCloudConfigWarnings(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	if r := runInProcess("boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	warnings := func() []string {
		t.Helper()
		r := runInProcess("status", "--root", root, "--json")
		var st statusJSON
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != exitOK {
			t.Fatalf("status --json: %v %v", err, r)
		}
		return st.Warnings
	}
	if w := warnings(); len(w) != 1 || !strings.Contains(w[0], "95-seedkeeper.cfg is missing") {
		t.Errorf("without the drop-in: %q", w)
	}
	cfgd := filepath.Join(root, "etc/cloud/cloud.cfg.d")
	writeFile(t, filepath.Join(root, "etc/cloud/cloud.cfg"), "datasource_list: [NoCloud, ConfigDrive, None]\nnetwork: {config: disabled}\n", 0o644)
	writeFile(t, filepath.Join(cfgd, "95-seedkeeper.cfg"), readFile(t, filepath.Join("..", "..", "packaging", "95-seedkeeper.cfg")), 0o644)
	if w := warnings(); len(w) != 0 {
		t.Errorf("with the drop-in in force: %q", w)
	}
	writeFile(t, filepath.Join(cfgd, "99-local.cfg"), "datasource_list: [ConfigDrive]\n", 0o644)
	w := warnings()
	if len(w) != 1 || w[0] != "datasource_list is set last by /etc/cloud/cloud.cfg.d/99-local.cfg, not to [NoCloud, None]; network.config: disabled (from /etc/cloud/cloud.cfg.d/95-seedkeeper.cfg)" {
		t.Errorf("with an override: %q", w)
	}
	if s := runInProcess("status", "--root", root); !strings.Contains(s.stdout, "Warning:     datasource_list is set last by /etc/cloud/cloud.cfg.d/99-local.cfg") {
		t.Errorf("status text:\n%s", s.stdout)
	}
}
