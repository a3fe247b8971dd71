// Package buildtest builds the seedkeeper binary once per test binary, for
// tests that run the whole process (exit codes, messages, files written as
// a person or systemd sees them).
package buildtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Package is the import path of the command that Seedkeeper builds.
const Package = "github.com/seedkeeper/seedkeeper/cmd/seedkeeper"

var (
	once sync.Once
	dir  string
	path string
	err  error
)

// Main runs the tests and removes what Seedkeeper built. Use it as
//
//	func TestMain(m *testing.M) { buildtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes what Seedkeeper built; for a TestMain that has more to
// do than Main.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Seedkeeper builds cmd/seedkeeper once (static, CGO_ENABLED=0, -trimpath,
// without the symbol table and debug information, as "make build" does)
// and returns the binary's path. tb fails when it cannot be built. Left
// out, the tables cost the link a third of its time in every package
// that builds it, and no test reads them.
func Seedkeeper(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "seedkeeper-bin-"); err != nil {
			return
		}
		path = filepath.Join(dir, "seedkeeper")
		cmd := exec.Command(GoTool(), "build", "-trimpath", "-ldflags=-s -w", "-o", path, Package)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, berr := cmd.CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build %s: %v\n%s", Package, berr, out)
		}
	})
	if err != nil {
		tb.Fatalf("building seedkeeper for whole-process tests: %v", err)
	}
	return path
}

// GoTool is the go command: the one on PATH, else the one of the
// toolchain that built the test.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// ModuleRoot returns the directory of seedkeeper's go.mod, for tests that
// read the tree's own files (the Makefile, CHANGELOG.md, go.sum).
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command(GoTool(), "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || filepath.Base(gomod) != "go.mod" {
		tb.Fatalf("finding seedkeeper's go.mod: %q, %v", gomod, err)
	}
	return filepath.Dir(gomod)
}
