package packaging

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/paths"
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
	t.Parallel()
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

	// rpm's erase: rpm itself removes the files the package declares
	// (%ghost), and every state file seedkeeper writes is one of them,
	// but the imported seed is not: it stays, and so does its directory.
	ghosts := rpmGhosts(t)
	for _, p := range stateFiles(t) {
		if !ghosts[p] {
			t.Errorf("%s is no %%ghost of the rpm: rpm -e would leave it", p)
		}
	}
	for g := range ghosts {
		if strings.HasPrefix(g, paths.ImportedSeed) {
			t.Errorf("%s is a %%ghost of the rpm: rpm -e would remove the imported seed", g)
		}
	}
	if _, code := scriptCalls(t, "rpm-postun", false, t.TempDir(), 0, "0"); code != 0 {
		t.Fatalf("rpm-postun 0: exit %d", code)
	}
}

// rpmGhosts are the rpm's %ghost files in nfpm.yaml.
func rpmGhosts(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Contents []struct{ Dst, Type string }
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range cfg.Contents {
		if c.Type == "ghost" {
			out[c.Dst] = true
		}
	}
	return out
}

// stateFiles are the files seedkeeper writes in its state directory: every
// constant of internal/paths in it but the imported seed (a directory,
// kept), and the receipt's lock (netcfg/apply.LockReceipt).
func stateFiles(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(repoRoot, "internal/paths/*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var afs []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		afs = append(afs, af)
	}
	pkg, err := (&types.Config{}).Check("paths", fset, afs, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{paths.Receipt + ".lock"}
	for _, name := range pkg.Scope().Names() {
		c, ok := pkg.Scope().Lookup(name).(*types.Const)
		if !ok || c.Val().Kind() != constant.String {
			continue
		}
		if v := constant.StringVal(c.Val()); strings.HasPrefix(v, paths.StateDir+"/") && v != paths.ImportedSeed {
			out = append(out, v)
		}
	}
	if len(out) < 6 {
		t.Fatalf("found only %q in internal/paths", out)
	}
	return out
}

// Under DPKG_ROOT the scripts never act through a link of the image's:
// with the image's /var/lib (or /etc/cloud) a link out of it, purge and
// remove leave what the link leads to alone, and say why.
func TestRemovalScriptsStayInDPKGRoot(t *testing.T) {
	t.Parallel()
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

// preinst's putting back of the moved-aside drop-in stays in DPKG_ROOT
// too: with the image's /etc/cloud a link out of it, the host's moved-aside
// file is not moved.
func TestPreinstStaysInDPKGRoot(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	aside := filepath.Join(host, "cloud/cloud.cfg.d/95-seedkeeper.cfg.seedkeeper-removed")
	mkfile(t, aside, "x\n")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(host, "cloud"), filepath.Join(root, "etc/cloud")); err != nil {
		t.Fatal(err)
	}
	out := purgeState(t, "deb-preinst", root, "install")
	if !strings.Contains(out, "symbolic link") {
		t.Errorf("preinst did not say why it left the linked path: %q", out)
	}
	if _, err := os.Stat(aside); err != nil {
		t.Errorf("preinst moved the host's file: %v", err)
	}
	// Inside the root, it is put back.
	root = t.TempDir()
	mkfile(t, filepath.Join(root, "etc/cloud/cloud.cfg.d/95-seedkeeper.cfg.seedkeeper-removed"), "x\n")
	purgeState(t, "deb-preinst", root, "install")
	if _, err := os.Stat(filepath.Join(root, "etc/cloud/cloud.cfg.d/95-seedkeeper.cfg")); err != nil {
		t.Errorf("preinst did not put the drop-in back: %v", err)
	}
}

// preinst puts the moved-aside drop-in back only where no file is: one
// that appears between its test and its move (the admin's, written
// meanwhile) is kept, and the moved-aside copy stays beside it. The
// stand-in mv writes that file first, then runs the real one; the second
// reports the skip as a failure, as mv -n of coreutils 9.2 to 9.4 does.
func TestPreinstNeverOverwritesTheDropIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, after string }{
		{"a skip is success", `exec /bin/mv "$@"`},
		{"a skip is a failure", `/bin/mv "$@" || exit; [ ! -e "$src" ] || exit 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, bin := t.TempDir(), t.TempDir()
			cfg := filepath.Join(root, "etc/cloud/cloud.cfg.d/95-seedkeeper.cfg")
			mkfile(t, cfg+".seedkeeper-removed", "moved aside\n")
			shim := "#!/bin/sh\nfor a; do src=$last; last=$a; done\necho \"the admin's\" > \"$last\"\n" + tc.after + "\n"
			if err := os.WriteFile(filepath.Join(bin, "mv"), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", filepath.Join("scripts", "deb-preinst"), "install")
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "DPKG_ROOT=" + root}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("preinst install: %v\n%s", err, out)
			}
			if b, err := os.ReadFile(cfg); err != nil || string(b) != "the admin's\n" {
				t.Errorf("drop-in %q (%v), want the admin's kept", b, err)
			}
			if b, err := os.ReadFile(cfg + ".seedkeeper-removed"); err != nil || string(b) != "moved aside\n" {
				t.Errorf("moved-aside copy %q (%v), want it kept", b, err)
			}
		})
	}
}
