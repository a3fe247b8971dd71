package apicompat

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
	"github.com/seedkeeper/seedkeeper/internal/version"
)

const module = "github.com/seedkeeper/seedkeeper"

// The stable packages: each has a snapshot in api/.
var stable = []string{"mdata", "mdata/mdatatest", "datasource", "netcfg"}

// snapshot is the file in api/ that holds package p's API.
func snapshot(p string) string { return strings.ReplaceAll(p, "/", "_") + ".export" }

// TestAPICompat compares each stable package with its snapshot in api/.
func TestAPICompat(t *testing.T) {
	root := buildtest.ModuleRoot(t)
	rel, err := os.ReadFile(filepath.Join(root, "api", "release"))
	if err != nil {
		t.Fatalf("no API snapshot (scripts/apisnapshot.sh writes it at release time): %v", err)
	}
	release := strings.TrimSpace(string(rel))
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	declared := breaking(changelog)
	for _, p := range stable {
		t.Run(p, func(t *testing.T) {
			t.Parallel() // apidiff loads each package from source: seconds each
			comparePackage(t, root, p, release, declared[p])
		})
	}
}

// comparePackage compares package p with its snapshot of release, and
// holds its incompatible changes to the names declared for it.
func comparePackage(t *testing.T, root, p, release string, declared []string) {
	snap := filepath.Join("api", snapshot(p))
	if _, err := os.Stat(filepath.Join(root, snap)); err != nil {
		t.Fatalf("%s has no API snapshot (scripts/apisnapshot.sh writes one for each stable package): %v", p, err)
	}
	cmd := exec.Command(buildtest.GoTool(), "tool", "-modfile=tools/apidiff/go.mod", "apidiff", snap, module+"/"+p)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := "apidiff (tools/apidiff) did not run: scripts/test-deps.sh downloads it"
		if testing.Short() {
			t.Skipf("%s: %v\n%s", msg, err, stderr.Bytes())
		}
		t.Fatalf("%s: %v\n%s", msg, err, stderr.Bytes())
	}
	preOne := strings.HasPrefix(version.Release, "0.")
	incompatible, compatible := parseReport(out)
	t.Logf("%s against %s: %d incompatible, %d compatible changes", p, release, len(incompatible), len(compatible))
	for _, c := range incompatible {
		switch {
		case !declaredIn(declared, c):
			t.Errorf("incompatible change since %s not declared in CHANGELOG.md: %s\n"+
				"\t(before 1.0, name it under Unreleased in a line \"- Breaking: %s: ... %s ...\")",
				release, c, p, subject(c))
		case !preOne:
			t.Errorf("incompatible change since %s in major version %s: %s", release, version.Release, c)
		default:
			t.Logf("  declared: %s", c)
		}
	}
	for _, c := range compatible {
		t.Logf("  compatible: %s", c)
	}
}

// parseReport splits apidiff's report into its incompatible and
// compatible changes, each "Subject: what".
func parseReport(out []byte) (incompatible, compatible []string) {
	var into *[]string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "Incompatible changes:":
			into = &incompatible
		case line == "Compatible changes:":
			into = &compatible
		case strings.HasPrefix(line, "- ") && into != nil:
			*into = append(*into, strings.TrimPrefix(line, "- "))
		}
	}
	return incompatible, compatible
}

// subject is the name a change is about: "Options.Root" of
// "Options.Root: changed from ...".
func subject(change string) string {
	s, _, _ := strings.Cut(change, ": ")
	return s
}

// topLevel is the top-level declaration of a subject: Options of
// "Options.Root", Client of "(*Client).Get".
func topLevel(subj string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(subj, "("), "*")
	if i := strings.IndexAny(s, ".)"); i >= 0 {
		s = s[:i]
	}
	return s
}

// declaredIn reports whether change names a subject among names, or its
// top-level declaration.
func declaredIn(names []string, change string) bool {
	s := subject(change)
	return slices.Contains(names, s) || slices.Contains(names, topLevel(s))
}

// A name in a declaration: an exported identifier, or one with the
// field or method after it (Options.Root).
var declName = regexp.MustCompile(`\b[A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)?\b`)

// breaking reads the "Breaking:" entries of the CHANGELOG's Unreleased
// section: "- Breaking: PKG: text naming the changed declarations",
// which may go on over the lines indented under it. It returns, per
// package, the names the entries give.
func breaking(changelog []byte) map[string][]string {
	out := map[string][]string{}
	var pkg string // the package of the entry being read; "" outside one
	in := false
	for line := range strings.Lines(string(changelog)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "## "):
			in, pkg = line == "## Unreleased", ""
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "- "):
			pkg = ""
			rest, ok := strings.CutPrefix(line, "- Breaking: ")
			if !ok {
				continue
			}
			p, text, ok := strings.Cut(rest, ": ")
			if !ok || !slices.Contains(stable, p) {
				continue
			}
			pkg, line = p, text
		case !strings.HasPrefix(line, "  "):
			pkg = ""
		}
		if pkg != "" {
			out[pkg] = append(out[pkg], declName.FindAllString(line, -1)...)
		}
	}
	return out
}

// The declarations are read from the Unreleased section only, per
// package, over the lines an entry goes on.
func TestBreaking(t *testing.T) {
	got := breaking([]byte(`# Changelog

## Unreleased

- Breaking: datasource: Detect takes a context; Options.Root is a
  string, and Sources is removed.
- Not a declaration naming Mentioned.
- Breaking: agent: Boot changed (no stable package).
- Breaking: netcfg: StackNone removed.
  The text goes on, naming Render.

## 0.1.0 (2026-12-01)

- Breaking: mdata: Client removed.
`))
	want := map[string][]string{
		"datasource": {"Detect", "Options.Root", "Sources"},
		"netcfg":     {"StackNone", "The", "Render"},
	}
	if len(got) != len(want) {
		t.Errorf("breaking = %v, want %v", got, want)
	}
	for p, names := range want {
		if !slices.Equal(got[p], names) {
			t.Errorf("breaking[%s] = %v, want %v", p, got[p], names)
		}
	}
	for _, c := range []struct {
		change string
		names  []string
		want   bool
	}{
		{"Options.Root: changed from A to B", []string{"Options.Root"}, true},
		{"Options.Root: changed from A to B", []string{"Options"}, true},
		{"Options.Root: changed from A to B", []string{"Options.Logger"}, false},
		{"(*Client).Get: removed", []string{"Client"}, true},
		{"Detection: old is comparable, new is not", []string{"Detection.Stack"}, false},
		{"Sources: removed", nil, false},
	} {
		if got := declaredIn(c.names, c.change); got != c.want {
			t.Errorf("declaredIn(%v, %q) = %v, want %v", c.names, c.change, got, c.want)
		}
	}
}

// The snapshot script writes the packages this test compares.
func TestSnapshotScriptHasTheStablePackages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(buildtest.ModuleRoot(t), "scripts", "apisnapshot.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^stable="([^"]*)"$`).FindSubmatch(b)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), stable) {
		t.Errorf("scripts/apisnapshot.sh's stable=%q, want %q", m, strings.Join(stable, " "))
	}
}
