package packaging

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
)

// repoRoot is the repository root: the tests run in packaging/.
const repoRoot = ".."

// shared is a directory for what several tests build once (the binary, the
// packages); TestMain removes it.
var shared string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seedkeeper-packaging-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	shared = dir
	code := m.Run()
	buildtest.Cleanup()
	os.RemoveAll(dir)
	os.Exit(code)
}

// seedkeeperBin builds cmd/seedkeeper once (static, as "make build" does)
// and returns its path.
func seedkeeperBin(t *testing.T) string { return buildtest.Seedkeeper(t) }

var (
	pkgOnce sync.Once
	pkgDir  string
	pkgErr  error
)

// packages runs "make package" once with BIN in a temporary directory and
// returns the directory holding the .deb and the .rpm. It needs make and
// the Go module proxy (or a module cache holding tools/go.mod's modules).
func packages(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("needs make: apt-get install make")
	}
	pkgOnce.Do(func() {
		bin := filepath.Join(shared, "make")
		cmd := exec.Command("make", "--no-print-directory", "package", "BIN="+bin, "VERSION=v1.2.3-4-gabc1234")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			pkgErr = fmt.Errorf("make package: %v\n%s", err, out)
			return
		}
		pkgDir = filepath.Join(bin, "pkg")
	})
	if pkgErr != nil {
		t.Fatal(pkgErr)
	}
	return pkgDir
}

// onePackage returns the only file in dir matching pattern.
func onePackage(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("want exactly one %s in %s, found %v (%v)", pattern, dir, m, err)
	}
	return m[0]
}

// needTool skips the test when a program is missing.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("needs %s: apt-get install %s (make test-deps installs it as root)", name, pkg)
	}
	return p
}

// needRoot skips the test when not root.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root (%s): run `sudo make test`", why)
	}
}

// run runs a command and returns its combined output; it fails the test
// when the command fails.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// unit is a parsed systemd unit file: section -> key -> values, in order.
// Assignments accumulate, as most list settings in systemd do; an empty
// assignment is kept as "".
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// get returns the last value of key (systemd's rule for single settings).
func (u unit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// words returns every space-separated word of every assignment of key.
func (u unit) words(section, key string) []string {
	var w []string
	for _, v := range u[section][key] {
		w = append(w, strings.Fields(v)...)
	}
	return w
}
