package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// purgeState runs a removal script for real (args as the package manager
// gives them) with DPKG_ROOT set to root when it is not "", and returns
// what it said.
func purgeState(t *testing.T, script, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{filepath.Join("scripts", script)}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "DPKG_ROOT=" + root}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, out)
	}
	return string(out)
}

func mkfile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A purge forgets seedkeeper's state, but what seedkeeper uninstall said
// it kept stays: a person's imported seed it could not give back ("the
// imported copy stays in /var/lib/seedkeeper/imported-seed") is the only
// copy of that seed. rpm -e (%postun 0) keeps it the same way.
func TestPurgeKeepsTheImportedSeed(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "var/lib/seedkeeper")
	mkfile(t, filepath.Join(state, "identity.json"), "{}\n")
	mkfile(t, filepath.Join(state, "imported-seed/meta-data"), "instance-id: handmade\n")
	out := purgeState(t, "deb-postrm", root, "purge")
	if _, err := os.Stat(filepath.Join(state, "identity.json")); err == nil {
		t.Error("purge left the pinned identity")
	}
	if b, err := os.ReadFile(filepath.Join(state, "imported-seed/meta-data")); err != nil || string(b) != "instance-id: handmade\n" {
		t.Errorf("purge lost the imported seed: %q, %v", b, err)
	}
	if !strings.Contains(out, "imported-seed") {
		t.Errorf("purge did not say it kept the imported seed: %q", out)
	}
	// Without an import, the whole directory goes.
	os.RemoveAll(filepath.Join(state, "imported-seed"))
	purgeState(t, "deb-postrm", root, "purge")
	if _, err := os.Lstat(state); err == nil {
		t.Error("purge left the state directory")
	}

	// rpm's erase: the state path is rewritten into a scratch directory.
	state = filepath.Join(t.TempDir(), "state")
	mkfile(t, filepath.Join(state, "identity.json"), "{}\n")
	mkfile(t, filepath.Join(state, "imported-seed/user-data"), "#cloud-config\n")
	if _, code := scriptCalls(t, "rpm-postun", false, state, 0, "0"); code != 0 {
		t.Fatalf("rpm-postun 0: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(state, "identity.json")); err == nil {
		t.Error("rpm erase left the pinned identity")
	}
	if _, err := os.Stat(filepath.Join(state, "imported-seed/user-data")); err != nil {
		t.Errorf("rpm erase lost the imported seed: %v", err)
	}
}

// Under DPKG_ROOT the scripts never act through a link of the image's:
// with the image's /var/lib (or /etc/cloud) a link out of it, purge and
// remove leave what the link leads to alone, and say why.
func TestRemovalScriptsStayInDPKGRoot(t *testing.T) {
	host := t.TempDir()
	mkfile(t, filepath.Join(host, "lib/seedkeeper/identity.json"), "{}\n")
	mkfile(t, filepath.Join(host, "cloud/cloud.cfg.d/95-seedkeeper.cfg"), "datasource_list: [NoCloud]\n")
	mkfile(t, filepath.Join(host, "cloud/cloud.cfg.d/95-seedkeeper.cfg.seedkeeper-removed"), "x\n")
	root := t.TempDir()
	for link, target := range map[string]string{"var/lib": "lib", "etc/cloud": "cloud"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(host, target), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, arg := range []string{"remove", "purge"} {
		out := purgeState(t, "deb-postrm", root, arg)
		if !strings.Contains(out, "symbolic link") {
			t.Errorf("postrm %s did not say why it left the linked paths: %q", arg, out)
		}
	}
	for _, p := range []string{"lib/seedkeeper/identity.json", "cloud/cloud.cfg.d/95-seedkeeper.cfg", "cloud/cloud.cfg.d/95-seedkeeper.cfg.seedkeeper-removed"} {
		if _, err := os.Stat(filepath.Join(host, p)); err != nil {
			t.Errorf("%s outside DPKG_ROOT: %v", p, err)
		}
	}
}
