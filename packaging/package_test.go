package packaging

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// The version the package tests build with, and what it becomes.
const (
	testVersion    = "v1.2.3-4-gabc1234"
	testPkgVersion = "1.2.3+4.gabc1234"
)

// manPages are the pages genman makes from the binary's --help.
var manPages = []string{
	"seedkeeper", "seedkeeper-boot", "seedkeeper-watch", "seedkeeper-status",
	"seedkeeper-fetch", "seedkeeper-identity", "seedkeeper-image", "seedkeeper-net",
	"seedkeeper-uninstall", "seedkeeper-validate", "seedkeeper-collect-logs", "seedkeeper-completion",
	"mdata-get", "mdata-put", "mdata-delete", "mdata-list",
}

// entry is one thing a package installs.
type entry struct {
	path string
	mode fs.FileMode // type and permission bits
	link string      // symlink target
	same string      // file in packaging/ it is a copy of
}

// contents is what either package installs; unitDir and smartdc differ.
func contents(unitDir, smartdc string) []entry {
	e := []entry{
		{path: "/usr/sbin/seedkeeper", mode: 0o755},
		{path: "/usr/sbin/mdata-get", mode: fs.ModeSymlink, link: "seedkeeper"},
		{path: "/usr/sbin/mdata-put", mode: fs.ModeSymlink, link: "seedkeeper"},
		{path: "/usr/sbin/mdata-delete", mode: fs.ModeSymlink, link: "seedkeeper"},
		{path: "/usr/sbin/mdata-list", mode: fs.ModeSymlink, link: "seedkeeper"},
		{path: smartdc + "/mdata-get", mode: fs.ModeSymlink, link: "/usr/sbin/mdata-get"},
		{path: unitDir + "/seedkeeper-boot.service", mode: 0o644, same: "seedkeeper-boot.service"},
		{path: unitDir + "/seedkeeper-watch.service", mode: 0o644, same: "seedkeeper-watch.service"},
		{path: "/etc/cloud/cloud.cfg.d/" + dropIn, mode: 0o644, same: dropIn},
		{path: "/var/lib/seedkeeper", mode: fs.ModeDir | 0o755},
		{path: "/usr/share/doc/seedkeeper/changelog.gz", mode: 0o644},
	}
	// The documents the man pages cite: the README, SECURITY.md, docs/.
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	for _, d := range append([]string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "SECURITY.md")}, docs...) {
		rel, _ := filepath.Rel(repoRoot, d)
		e = append(e, entry{path: "/usr/share/doc/seedkeeper/" + rel, mode: 0o644, same: d})
	}
	for _, m := range manPages {
		e = append(e, entry{path: "/usr/share/man/man8/" + m + ".8.gz", mode: 0o644})
	}
	e = append(e, entry{path: "/usr/share/man/man5/seedkeeper-config.5.gz", mode: 0o644},
		entry{path: "/usr/share/bash-completion/completions/seedkeeper", mode: 0o644},
		entry{path: "/usr/share/fish/vendor_completions.d/seedkeeper.fish", mode: 0o644})
	for _, u := range gatedUnits {
		e = append(e, entry{path: unitDir + "/" + u + ".d/" + noSourceDropIn, mode: 0o644, same: noSourceDropIn})
	}
	return e
}

var units = []string{"seedkeeper-boot.service", "seedkeeper-watch.service"}

// TestIntegrationDebInstall installs the .deb with the real dpkg and its
// maintainer scripts into a scratch root (dpkg --root with
// --force-script-chrootless: the scripts run with DPKG_ROOT set, as in an
// image build), never into this machine's system, and checks every file,
// link and mode, that both units are enabled there, that an upgrade keeps
// an admin's "disable", and that remove and purge take everything away.
func TestIntegrationDebInstall(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	needRoot(t, "dpkg installs files owned by root")
	needTool(t, "dpkg", "dpkg")
	needTool(t, "deb-systemd-helper", "init-system-helpers")
	needTool(t, "systemctl", "systemd")
	deb := onePackage(t, packages(t), "*.deb")

	fields := run(t, nil, "dpkg-deb", "--field", deb, "Package", "Version", "Architecture")
	for _, want := range []string{"Package: seedkeeper", "Version: " + testPkgVersion + "-1", "Architecture: " + runtime.GOARCH} {
		if !strings.Contains(fields, want) {
			t.Errorf("control fields:\n%s\nwant %q", fields, want)
		}
	}
	ctrl := t.TempDir()
	run(t, nil, "dpkg-deb", "--control", deb, ctrl)
	if b, _ := os.ReadFile(filepath.Join(ctrl, "conffiles")); string(b) != "/etc/cloud/cloud.cfg.d/"+dropIn+"\n" {
		t.Errorf("conffiles = %q; want the drop-in only", b)
	}

	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dpkg := func(args ...string) string {
		t.Helper()
		return run(t, nil, "dpkg", append([]string{"--root=" + root, "--force-script-chrootless",
			"--log=" + filepath.Join(root, "var/log/dpkg.log")}, args...)...)
	}
	isEnabled := func(u string) string {
		out, _ := exec.Command("systemctl", "--root="+root, "is-enabled", u).CombinedOutput()
		return strings.TrimSpace(string(out))
	}

	dpkg("--install", deb)
	checkTree(t, root, append(contents("/lib/systemd/system", "/lib/smartdc"),
		entry{path: "/usr/share/doc/seedkeeper/copyright", mode: 0o644, same: "copyright"},
		entry{path: "/usr/share/zsh/vendor-completions/_seedkeeper", mode: 0o644},
		entry{path: "/usr/share/doc/seedkeeper/changelog.Debian.gz", mode: 0o644},
		entry{path: "/usr/share/lintian/overrides/seedkeeper", mode: 0o644, same: "lintian-overrides"}))
	for _, u := range units {
		if got := isEnabled(u); got != "enabled" {
			t.Errorf("after install, systemctl is-enabled %s = %q; want enabled", u, got)
		}
	}
	for link, target := range map[string]string{
		"/etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service":     "/lib/systemd/system/seedkeeper-boot.service",
		"/etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service": "/lib/systemd/system/seedkeeper-watch.service",
	} {
		if got, err := os.Readlink(filepath.Join(root, link)); err != nil || got != target {
			t.Errorf("%s -> %q (%v); want %s", link, got, err, target)
		}
	}
	// The installed binary is the version-stamped build, and answers as
	// an mdata tool through its links.
	if out := run(t, nil, filepath.Join(root, "usr/sbin/seedkeeper"), "version"); strings.TrimSpace(out) != "seedkeeper "+testVersion {
		t.Errorf("seedkeeper version = %q; want %q", out, "seedkeeper "+testVersion)
	}
	if out := run(t, nil, filepath.Join(root, "usr/sbin/mdata-get"), "--help"); !strings.HasPrefix(out, "Usage: mdata-get") {
		t.Errorf("/usr/sbin/mdata-get --help = %q", out)
	}

	// The fix image check prints for a missing drop-in works in this
	// flow, a local .deb: apt-get install --reinstall does not (apt knows
	// no source of the package).
	cfgPath := filepath.Join(root, "etc/cloud/cloud.cfg.d", dropIn)
	if err := os.Remove(cfgPath); err != nil {
		t.Fatal(err)
	}
	check, _ := exec.Command(filepath.Join(root, "usr/sbin/seedkeeper"), "image", "check", "--root", root).CombinedOutput()
	if !strings.Contains(string(check), "chroot "+root+" dpkg -i --force-confmiss FILE.deb") {
		t.Errorf("image check does not print the dpkg fix:\n%s", check)
	}
	dpkg("--install", "--force-confmiss", deb) // the fix, with FILE.deb, dpkg --root as above
	want, _ := os.ReadFile(dropIn)
	if b, err := os.ReadFile(cfgPath); err != nil || !bytes.Equal(b, want) {
		t.Errorf("after the printed fix, the drop-in holds %q (%v)", b, err)
	}

	// An upgrade keeps an admin's choice.
	run(t, nil, "systemctl", "--root="+root, "disable", "seedkeeper-watch.service")
	dpkg("--install", deb)
	if got := isEnabled("seedkeeper-watch.service"); got != "disabled" {
		t.Errorf("after upgrade, watch is %q; want the admin's disabled kept", got)
	}
	if got := isEnabled("seedkeeper-boot.service"); got != "enabled" {
		t.Errorf("after upgrade, boot is %q; want enabled", got)
	}

	// Remove keeps the conffile and the state; purge takes them too.
	state := filepath.Join(root, "var/lib/seedkeeper/identity.json")
	if err := os.WriteFile(state, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgIn := filepath.Join(root, "etc/cloud/cloud.cfg.d", dropIn)
	b, _ := os.ReadFile(cfgIn)
	edited := string(b) + "# an admin's edit\n"
	if err := os.WriteFile(cfgIn, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	dpkg("--remove", "seedkeeper")
	for _, p := range []string{"/usr/sbin/seedkeeper", "/usr/sbin/mdata-get", "/lib/smartdc/mdata-get", "/lib/systemd/system/seedkeeper-boot.service",
		"/etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service", "/etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("after remove, %s is still there", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "var/lib/seedkeeper/identity.json")); err != nil {
		t.Errorf("after remove, the state is gone: %v", err)
	}
	// The drop-in is a conffile, which dpkg keeps after a remove: it is
	// moved out of force (cloud-init reads only *.cfg), with the admin's
	// edit, and put back when the package is installed again.
	cfg := filepath.Join(root, "etc/cloud/cloud.cfg.d", dropIn)
	if _, err := os.Lstat(cfg); err == nil {
		t.Errorf("after remove, %s is still in force", cfg)
	}
	if b, err := os.ReadFile(cfg + ".seedkeeper-removed"); err != nil || string(b) != edited {
		t.Errorf("after remove, the drop-in moved aside holds %q (%v); want the admin's edit", b, err)
	}
	dpkg("--install", deb)
	if b, err := os.ReadFile(cfg); err != nil || string(b) != edited {
		t.Errorf("installed again, the drop-in holds %q (%v); want the admin's edit back", b, err)
	}
	if _, err := os.Lstat(cfg + ".seedkeeper-removed"); err == nil {
		t.Error("installed again, the moved-aside drop-in is still there")
	}
	dpkg("--remove", "seedkeeper")
	dpkg("--purge", "seedkeeper")
	var left []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "seedkeeper") && !strings.HasPrefix(p, filepath.Join(root, "var/lib/dpkg")) &&
			!strings.HasPrefix(p, filepath.Join(root, "var/log")) {
			left = append(left, strings.TrimPrefix(p, root))
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("after purge, left behind: %v", left)
	}
}

// checkTree checks every entry under root: type, permissions, owner root,
// link target, and content where it is a copy of a file here.
func checkTree(t *testing.T, root string, want []entry) {
	t.Helper()
	for _, e := range want {
		p := filepath.Join(root, e.path)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%s: %v", e.path, err)
			continue
		}
		switch {
		case e.mode&fs.ModeSymlink != 0:
			got, err := os.Readlink(p)
			if fi.Mode()&fs.ModeSymlink == 0 || err != nil || got != e.link {
				t.Errorf("%s: %v -> %q; want a link to %q", e.path, fi.Mode(), got, e.link)
			}
			continue
		case fi.Mode() != e.mode:
			t.Errorf("%s: mode %v; want %v", e.path, fi.Mode(), e.mode)
		}
		if uid, ok := fileOwner(fi); ok && uid != 0 {
			t.Errorf("%s: owner %d; want root", e.path, uid)
		}
		if e.same != "" {
			a, _ := os.ReadFile(p)
			b, _ := os.ReadFile(e.same)
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs from packaging/%s", e.path, e.same)
			}
		}
		if strings.HasSuffix(e.path, ".8.gz") {
			checkManPage(t, p)
		}
	}
}

func checkManPage(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	b, err := io.ReadAll(zr)
	name := strings.TrimSuffix(filepath.Base(path), ".8.gz")
	if err != nil || !bytes.HasPrefix(b, []byte(".TH "+strings.ToUpper(strings.ReplaceAll(name, "-", `\-`))+" 8")) ||
		!bytes.Contains(b, []byte(".SH DESCRIPTION")) {
		t.Errorf("%s: not a man page for %s (%v): %.80q", path, name, err, b)
	}
}

// TestIntegrationRPMContents builds the .rpm and lists it with rpm: header,
// every file with its mode, owner, link target and config flags, and the
// scriptlets.
func TestIntegrationRPMContents(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	needTool(t, "rpm", "rpm")
	pkg := onePackage(t, packages(t), "*.rpm")
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if got := run(t, nil, "rpm", "-qp", "--queryformat", "%{NAME} %{VERSION} %{RELEASE} %{ARCH}", pkg); got != "seedkeeper "+testPkgVersion+" 1 "+arch {
		t.Errorf("rpm header: %q; want seedkeeper %s 1 %s", got, testPkgVersion, arch)
	}
	list := run(t, nil, "rpm", "-qp", "--queryformat",
		`[%{FILENAMES}\t%{FILEMODES:perms}\t%{FILEUSERNAME}:%{FILEGROUPNAME}\t%{FILEFLAGS:fflags}\t%{FILELINKTOS}\n]`, pkg)
	type row struct{ perms, owner, flags, link string }
	got := map[string]row{}
	for _, l := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 5 {
			t.Fatalf("rpm file list line %q", l)
		}
		got[f[0]] = row{f[1], f[2], f[3], f[4]}
	}
	want := contents("/usr/lib/systemd/system", "/usr/lib/smartdc")
	for i := range want {
		// On rpm distributions /lib is a link to usr/lib: the link is
		// relative, within /usr.
		if want[i].path == "/usr/lib/smartdc/mdata-get" {
			want[i].link = "../../sbin/mdata-get"
		}
	}
	want = append(want, entry{path: "/usr/lib/smartdc", mode: fs.ModeDir | 0o755},
		entry{path: "/usr/share/doc/seedkeeper", mode: fs.ModeDir | 0o755},
		entry{path: "/usr/share/doc/seedkeeper/docs", mode: fs.ModeDir | 0o755},
		entry{path: "/usr/share/licenses/seedkeeper", mode: fs.ModeDir | 0o755},
		entry{path: "/usr/share/licenses/seedkeeper/copyright", mode: 0o644, same: "copyright"},
		entry{path: "/usr/share/licenses/seedkeeper/LICENSE", mode: 0o644, same: filepath.Join(repoRoot, "LICENSE")},
		// The rpm owns the directories of its cloud-init drop-in.
		entry{path: "/etc/cloud", mode: fs.ModeDir | 0o755},
		entry{path: "/etc/cloud/cloud.cfg.d", mode: fs.ModeDir | 0o755},
		entry{path: "/usr/lib/systemd/system-preset/50-seedkeeper.preset", mode: 0o644},
		entry{path: "/usr/share/zsh/site-functions/_seedkeeper", mode: 0o644})
	// seedkeeper's state files are the package's (%ghost), so that rpm -e
	// removes them: every file internal/paths keeps in the state directory
	// but the imported seed, which "seedkeeper uninstall" gives back, and
	// the receipt's lock (netcfg/apply.LockReceipt).
	for _, f := range []string{paths.Identity, paths.Status, paths.Receipt, paths.Receipt + ".lock", paths.Changes, paths.ChangesBad, paths.VMwareIMCMarker, paths.Sealed} {
		want = append(want, entry{path: f, mode: 0o644})
	}
	// The kept customization spec is 0600, as seedkeeper writes it.
	want = append(want, entry{path: paths.VMwareIMCSpec, mode: 0o600})
	// The rpm owns the drop-in directories it makes, so that rpm -e
	// removes them.
	for _, u := range gatedUnits {
		want = append(want, entry{path: "/usr/lib/systemd/system/" + u + ".d", mode: fs.ModeDir | 0o755})
	}
	var listed []string
	for _, e := range want {
		listed = append(listed, e.path)
		r, ok := got[e.path]
		if !ok {
			t.Errorf("rpm lacks %s", e.path)
			continue
		}
		if r.owner != "root:root" {
			t.Errorf("%s: owner %s; want root:root", e.path, r.owner)
		}
		switch {
		case e.mode&fs.ModeSymlink != 0:
			if !strings.HasPrefix(r.perms, "l") || r.link != e.link {
				t.Errorf("%s: %s -> %q; want a link to %q", e.path, r.perms, r.link, e.link)
			}
		case r.perms != e.mode.String() && !(e.mode.IsDir() && r.perms == "d"+e.mode.String()[1:]):
			t.Errorf("%s: %s; want %v", e.path, r.perms, e.mode)
		}
		wantFlags := ""
		switch {
		case e.same == dropIn:
			wantFlags = "cn" // %config(noreplace)
		case strings.HasPrefix(e.path, paths.StateDir+"/"):
			wantFlags = "g" // %ghost
		case strings.HasPrefix(e.path, "/usr/share/licenses/") && !e.mode.IsDir():
			wantFlags = "l" // %license
		case strings.HasPrefix(e.path, "/usr/share/doc/") && !e.mode.IsDir(), strings.HasPrefix(e.path, "/usr/share/man/"):
			wantFlags = "d" // %doc
		}
		if r.flags != wantFlags {
			t.Errorf("%s: flags %q; want %q", e.path, r.flags, wantFlags)
		}
	}
	for p := range got {
		if !slices.Contains(listed, p) {
			t.Errorf("rpm has unexpected %s", p)
		}
	}
	scripts := run(t, nil, "rpm", "-qp", "--scripts", pkg)
	for _, want := range []string{"postinstall scriptlet", "systemctl --root=/ preset $units", "preuninstall scriptlet", "systemctl --root=/ disable $units", "postuninstall scriptlet"} {
		if !strings.Contains(scripts, want) {
			t.Errorf("rpm scriptlets lack %q:\n%s", want, scripts)
		}
	}
}

// TestIntegrationReadmePackageNames: every package file name README.md
// uses is one "make package" makes, for the version it names: the names
// of this build's packages with its version put in.
func TestIntegrationReadmePackageNames(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("README.md's examples name the amd64 packages")
	}
	dir := packages(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("seedkeeper[_-][0-9][^\\s\"':`]*\\.(deb|rpm)").FindAllString(string(b), -1)
	if len(names) == 0 {
		t.Fatal("README.md names no package file")
	}
	form := regexp.MustCompile(`^seedkeeper(_|-)([0-9][0-9A-Za-z.+~]*)-1(_amd64\.deb|\.x86_64\.rpm)$`)
	for _, name := range names {
		m := form.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("README.md names %s, which is not how make package names a package", name)
			continue
		}
		built := "seedkeeper" + m[1] + testPkgVersion + "-1" + m[3]
		if _, err := os.Stat(filepath.Join(dir, built)); err != nil {
			t.Errorf("README.md names %s, but make package makes %s for version %s: %v", m[0], built, testPkgVersion, err)
		}
	}
}
