package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReleaseScript runs scripts/release.sh in a scratch repository: it
// turns the Unreleased notes into the release's section under a new empty
// one, sets Release, commits and makes the annotated tag, and the version
// of the result is the bare release; it refuses a version that is not
// after the current one, a dirty tree and empty notes, changing nothing.
// The release commit holds the API snapshot of itself (api/).
func TestReleaseScript(t *testing.T) {
	t.Parallel()
	r := newVersionRepo(t)
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	release := func(v string) (string, error) {
		cmd := exec.Command("/bin/sh", script, v)
		cmd.Dir = r.dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	r.write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\nNothing yet.\n\n## 0.1.0 (2026-12-01)\n\nThe first release.\n")
	r.release("0.1.0")
	head := r.git("rev-parse", "HEAD")
	if out, err := release("0.2.0"); err == nil || !strings.Contains(out, "Unreleased section is empty") {
		t.Errorf("empty notes: %v %s; want a refusal", err, out)
	}
	r.write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n- A change.\n\n## 0.1.0 (2026-12-01)\n\nThe first release.\n")
	if out, err := release("0.2.0"); err == nil || !strings.Contains(out, "uncommitted changes") {
		t.Errorf("a dirty tree: %v %s; want a refusal", err, out)
	}
	// A stand-in for the API snapshot (the scratch repository has no Go
	// packages): it records the version the release commit has.
	r.write("scripts/apisnapshot.sh", "mkdir -p api && sed -n 's/^const Release = \"\\(.*\\)\"$/\\1/p' internal/version/version.go > api/release\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "notes")
	for _, bad := range []string{"0.1.0", "0.0.9", "v0.2.0", "0.2"} {
		if out, err := release(bad); err == nil {
			t.Errorf("release.sh %s: no refusal\n%s", bad, out)
		}
	}
	if r.git("tag", "--list") != "" || r.git("rev-parse", "HEAD~1") != head {
		t.Fatal("a refused release changed the repository")
	}

	if out, err := release("0.2.0"); err != nil {
		t.Fatalf("release.sh 0.2.0: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(filepath.Join(r.dir, "CHANGELOG.md"))
	today := time.Now().UTC().Format("2006-01-02")
	if want := "# Changelog\n\n## Unreleased\n\nNothing yet.\n\n## 0.2.0 (" + today + ")\n\n- A change.\n\n## 0.1.0 (2026-12-01)\n\nThe first release.\n"; string(b) != want {
		t.Errorf("CHANGELOG.md:\n%s\nwant\n%s", b, want)
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "internal/version/version.go")); !strings.Contains(string(b), "\nconst Release = \"0.2.0\"\n") {
		t.Errorf("version.go:\n%s", b)
	}
	if got := r.git("for-each-ref", "--format=%(objecttype) %(*objectname)", "refs/tags/v0.2.0"); got != "tag "+r.git("rev-parse", "HEAD") {
		t.Errorf("tag v0.2.0: %q; want an annotated tag of HEAD", got)
	}
	if r.git("status", "--porcelain") != "" {
		t.Error("release.sh left uncommitted changes")
	}
	if got := r.git("show", "v0.2.0:api/release"); got != "0.2.0" {
		t.Errorf("the release commit's api/release = %q; want the API snapshot of 0.2.0 in it", got)
	}
	if d, p := r.version(); d != "v0.2.0" || p != "0.2.0" {
		t.Errorf("the release commit's version is %s (%s); want v0.2.0 (0.2.0)", d, p)
	}
}
