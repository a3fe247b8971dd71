package version

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
)

func TestDescribe(t *testing.T) {
	v := "v" + Release
	for _, c := range []struct{ stamp, module, want string }{
		{v, "(devel)", v},
		{v + "-3-gabc1234", "", v + "-3-gabc1234"},
		{v + "-3-gabc1234-dirty", "", v + "-3-gabc1234-dirty"},
		{"abc1234-dirty", "", v + "+dev.abc1234-dirty"}, // a checkout without tags
		{"dev", "(devel)", v + "+dev"},                  // make without git
		{"", "(devel)", v + "+dev"},                     // go build in a checkout
		{"", v, v},                                      // go install ...@v<Release>
		{"", "", v + "+dev"},
		{"", "v0.1.1-0.20261201101010-abcdefabcdef+dirty", "v0.1.1-0.20261201101010-abcdefabcdef+dirty"}, // VCS-stamped build
	} {
		if got := describe(c.stamp, c.module); got != c.want {
			t.Errorf("describe(%q, %q) = %q, want %q", c.stamp, c.module, got, c.want)
		}
	}
}

func repoRoot(t *testing.T) string { return buildtest.ModuleRoot(t) }

// changelogReleases returns the versions of CHANGELOG.md's "## X.Y.Z"
// sections, newest first, after checking that the first section is
// "Unreleased".
func changelogReleases(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile(`^## ([0-9]+\.[0-9]+\.[0-9]+) \([0-9]{4}-[0-9]{2}-[0-9]{2}\)$`)
	var versions []string
	first := true
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "## ") {
			continue
		}
		if first {
			if line != "## Unreleased" {
				t.Errorf("CHANGELOG.md:%d: the first section is not \"## Unreleased\"", n)
			}
			first = false
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("CHANGELOG.md:%d: a release section's heading is not \"## X.Y.Z (YYYY-MM-DD)\"", n)
			continue
		}
		versions = append(versions, m[1])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return versions
}

// TestChangelogHasRelease: the newest released section of the CHANGELOG
// is Release, so the constant cannot move without the notes (or stay
// behind when a release is written up).
func TestChangelogHasRelease(t *testing.T) {
	rel := changelogReleases(t)
	if len(rel) == 0 || rel[0] != Release {
		t.Fatalf("CHANGELOG.md's newest release section is %q, Release is %q", rel, Release)
	}
}

// TestTag: a checkout at a release tag is that release, and every
// release tag reachable from here has its CHANGELOG section.
func TestTag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed: the tag check needs a git checkout")
	}
	root := repoRoot(t)
	if out, err := exec.Command("git", "-C", root, "describe", "--tags", "--exact-match", "--match", "v[0-9]*", "HEAD").Output(); err == nil {
		if tag := strings.TrimSpace(string(out)); tag != "v"+Release {
			t.Errorf("HEAD is tagged %s but Release is %s", tag, Release)
		}
	}
	out, err := exec.Command("git", "-C", root, "tag", "--merged", "HEAD", "--list", "v[0-9]*").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the tag check needs one", err)
	}
	have := map[string]bool{}
	for _, v := range changelogReleases(t) {
		have[v] = true
	}
	for _, tag := range strings.Fields(string(out)) {
		if !have[strings.TrimPrefix(tag, "v")] {
			t.Errorf("tag %s has no section in CHANGELOG.md", tag)
		}
	}
}

// TestStamp builds seedkeeper with the Makefile's LDFLAGS and a stamp
// and runs --version: a -X naming a variable that does not exist is
// silently ignored, so only the binary can show that the stamp lands.
func TestStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short")
	}
	root := repoRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=\s*(.*)\$\(VERSION\)\s*$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no LDFLAGS line ending in $(VERSION)")
	}
	stamp := "v" + Release + "-7-gfeedbee-dirty"
	bin := filepath.Join(t.TempDir(), "seedkeeper")
	build := exec.Command(buildtest.GoTool(), "build", "-trimpath", "-ldflags", string(m[1])+stamp, "-o", bin, "./cmd/seedkeeper")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "seedkeeper " + stamp + "\n"; string(out) != want {
		t.Errorf("--version printed %q, want %q", out, want)
	}
}
