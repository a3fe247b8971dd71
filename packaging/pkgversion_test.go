package packaging

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// versionRepo is a scratch git repository with an internal/version like
// seedkeeper's, for the version script to count in.
type versionRepo struct {
	t   *testing.T
	dir string
	n   int
}

func newVersionRepo(t *testing.T) *versionRepo {
	t.Helper()
	needTool(t, "git", "git")
	r := &versionRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	r.git("config", "user.email", "test@example.invalid")
	r.git("config", "user.name", "test")
	return r
}

func (r *versionRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *versionRepo) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// release commits a Release constant of v.
func (r *versionRepo) release(v string) {
	r.t.Helper()
	r.write("internal/version/version.go", "package version\n\n// Release is the version of this tree.\nconst Release = \""+v+"\"\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "release "+v)
}

// commit commits a change that is no release.
func (r *versionRepo) commit() {
	r.t.Helper()
	r.n++
	r.write(fmt.Sprint("file", r.n), fmt.Sprintln(r.n))
	r.git("add", "-A")
	r.git("commit", "-q", "-m", fmt.Sprint("change ", r.n))
}

// version is what the Makefile makes of the tree: the describe form and
// the package version.
func (r *versionRepo) version() (describe, pkg string) {
	r.t.Helper()
	script, err := filepath.Abs("pkgversion.sh")
	if err != nil {
		r.t.Fatal(err)
	}
	out, err := exec.Command("/bin/sh", script, "--describe", r.dir).CombinedOutput()
	if err != nil {
		r.t.Fatalf("pkgversion.sh --describe: %v\n%s", err, out)
	}
	describe = strings.TrimSpace(string(out))
	out, err = exec.Command("/bin/sh", script, describe).CombinedOutput()
	if err != nil {
		r.t.Fatalf("pkgversion.sh %s: %v\n%s", describe, err, out)
	}
	return describe, strings.TrimSpace(string(out))
}

// rpmvercmp is rpm's own comparison of two versions: -1, 0 or 1.
func rpmvercmp(t *testing.T, a, b string) string {
	t.Helper()
	out, err := exec.Command("rpm", "--eval", fmt.Sprintf(`%%{lua: print(rpm.vercmp(%q, %q))}`, a, b)).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm vercmp: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestVersionsSortInOrder builds the version of every commit of a history
// like a release cycle's (the release commit, commits after it until one
// whose hash sorts below its parent's, a branch merged back, the next
// release, a commit after it, and uncommitted changes) and checks that
// each sorts after the one before it by dpkg --compare-versions (as
// "version-1", the .deb's) and by rpm's own comparison, and that the
// release commits are the bare release.
func TestVersionsSortInOrder(t *testing.T) {
	t.Parallel()
	needTool(t, "dpkg", "dpkg")
	needTool(t, "rpm", "rpm")
	r := newVersionRepo(t)
	type build struct{ what, describe, pkg, hash string }
	var builds []build
	add := func(what string) build {
		d, p := r.version()
		b := build{what, d, p, r.git("rev-parse", "HEAD")}
		builds = append(builds, b)
		return b
	}

	r.commit()
	r.release("0.1.0")
	if b := add("the 0.1.0 release commit"); b.describe != "v0.1.0" || b.pkg != "0.1.0" {
		t.Errorf("the release commit is %s (%s); want v0.1.0 (0.1.0)", b.describe, b.pkg)
	}
	lower := false
	for i := 0; i < 40 && !lower; i++ {
		prev := builds[len(builds)-1]
		r.commit()
		b := add("a commit after 0.1.0")
		if want := fmt.Sprintf("0.1.0+%d.g%s", len(builds)-1, r.git("rev-parse", "--short", "HEAD")); b.pkg != want {
			t.Errorf("commit %d after the release is %s; want %s", len(builds)-1, b.pkg, want)
		}
		lower = b.hash < prev.hash
	}
	if !lower {
		t.Fatal("40 commits and no hash below its parent's")
	}
	// A branch of two commits from here, and one on main, merged: the
	// merge sorts after the commits of both lines.
	r.git("checkout", "-q", "-b", "topic")
	r.commit()
	r.commit()
	_, topicPkg := r.version()
	r.git("checkout", "-q", "main")
	r.commit()
	add("a commit on main beside the branch")
	r.git("merge", "-q", "--no-edit", "topic")
	merge := add("the merge")
	if exec.Command("dpkg", "--compare-versions", topicPkg+"-1", "lt", merge.pkg+"-1").Run() != nil || rpmvercmp(t, topicPkg, merge.pkg) != "-1" {
		t.Errorf("the branch's %s does not sort before the merge's %s", topicPkg, merge.pkg)
	}
	r.release("0.2.0")
	add("the 0.2.0 release commit")
	r.commit()
	add("a commit after 0.2.0")
	r.write("file1", "uncommitted\n")
	if b := add("uncommitted changes"); !strings.HasSuffix(b.describe, "-dirty") {
		t.Errorf("a tree with uncommitted changes is %s; want a -dirty version", b.describe)
	}

	for i := 1; i < len(builds); i++ {
		a, b := builds[i-1], builds[i]
		if err := exec.Command("dpkg", "--compare-versions", a.pkg+"-1", "lt", b.pkg+"-1").Run(); err != nil {
			t.Errorf("dpkg: %s (%s) does not sort before %s (%s)", a.pkg, a.what, b.pkg, b.what)
		}
		if got := rpmvercmp(t, a.pkg, b.pkg); got != "-1" {
			t.Errorf("rpm: vercmp(%s (%s), %s (%s)) = %s; want -1", a.pkg, a.what, b.pkg, b.what, got)
		}
	}
	t.Logf("versions: %v", builds)
}
