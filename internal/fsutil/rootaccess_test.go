package fsutil

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rootPackages are the packages that handle system paths under a root
// (--root, DPKG_ROOT): every read, write, listing, removal and device open
// there goes through the in-root functions of this package.
var rootPackages = []string{
	"agent", "cmd/seedkeeper", "datasource", "hotplug", "image",
	"internal/seedimage", "internal/stacks", "internal/unit", "internal/vmtools", "mdata", "netcfg", "nosource",
	"seed",
}

// plainOS are the calls of package os that reach a file by its plain
// path, following every link on the way and opening whatever is there.
var plainOS = []string{
	"Chmod", "Chown", "Create", "CreateTemp", "DirFS", "Lchown", "Link",
	"Lstat", "Mkdir", "MkdirAll", "MkdirTemp", "Open", "OpenFile",
	"ReadDir", "ReadFile", "Readlink", "Remove", "RemoveAll", "Rename",
	"Stat", "Symlink", "Truncate", "WriteFile",
}

// hostOnly are the plain calls in rootPackages that reach a path of the
// machine itself, never one under a root, keyed "dir/file.go func
// os.Call", each with why.
var hostOnly = map[string]string{
	"datasource/nocloud.go readSeedPath os.Stat":                "an explicit --seed path is the caller's, on the machine, not in a root",
	"datasource/nocloud.go detectNoCloud os.Stat":               "the same explicit --seed path",
	"internal/vmtools/vmtools.go lookPath os.Stat":              "the machine's $PATH, searched for vmware-rpctool to run",
	"image/check.go isRoot os.Stat":                             "the root directory itself, as the caller named it",
	"cmd/seedkeeper/collectlogs.go runCollectLogs os.WriteFile": "the bundle's --output path, the caller's, on the machine",
	"cmd/seedkeeper/collectlogs.go runCollectLogs os.Chmod":     "the same --output path",
	"cmd/seedkeeper/validate.go checkMetaData os.MkdirTemp":     "a scratch directory of the machine's own for the meta-data's check",
	"cmd/seedkeeper/validate.go checkMetaData os.RemoveAll":     "the same scratch directory",
	"cmd/seedkeeper/validate.go checkMetaData os.MkdirAll":      "the same scratch directory",
	"cmd/seedkeeper/validate.go checkMetaData os.WriteFile":     "the same scratch directory",
}

// plainCalls returns the plain os calls in the non-test sources of the
// package in dir (relative to the module), keyed as hostOnly is.
func plainCalls(t *testing.T, module, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(module, dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The names package os has in this file (it may be renamed).
		osNames := map[string]bool{}
		for _, im := range af.Imports {
			if im.Path.Value == `"os"` {
				if im.Name != nil {
					osNames[im.Name.Name] = true
				} else {
					osNames["os"] = true
				}
			}
		}
		if len(osNames) == 0 {
			continue
		}
		ast.Inspect(af, func(n ast.Node) bool {
			fd, ok := n.(*ast.FuncDecl)
			if !ok {
				return true
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				// A call, or a function value (f := os.Remove) alike.
				se, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := se.X.(*ast.Ident); ok && osNames[id.Name] && slices.Contains(plainOS, se.Sel.Name) {
					out = append(out, fmt.Sprintf("%s/%s %s os.%s", dir, filepath.Base(f), fd.Name.Name, se.Sel.Name))
				}
				return true
			})
			return false
		})
	}
	return out
}

// TestRootAccessIsConfined is a vet-style check over the sources: in the
// packages that handle paths under a root, no file is reached by a plain
// os call, except a path of the machine's own (hostOnly). A new command that reads, writes,
// lists or removes under --root by a plain path fails here: use
// ReadFileIn, ReadDirIn, StatIn, OpenIn, WriteFileIn or RemoveIn.
func TestRootAccessIsConfined(t *testing.T) {
	module := filepath.Join("..", "..")
	seen := map[string]bool{}
	for _, dir := range rootPackages {
		for _, c := range plainCalls(t, module, dir) {
			seen[c] = true
			if _, ok := hostOnly[c]; ok {
				continue
			}
			t.Errorf("%s: a plain os call in a package that works under a root; reach the path through fsutil's in-root functions (or, for a path of the machine itself, list it in hostOnly with why)", c)
		}
	}
	for c := range hostOnly {
		if !seen[c] {
			t.Errorf("%s is listed but no longer there: take it off the list", c)
		}
	}
}

// The check finds a plain call, also one through a renamed import and a
// function value.
func TestRootAccessCheckFindsPlainCalls(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import (
	"os"
	xos "os"
)

func a(root string) { os.ReadFile(root + "/etc/x") }
func b() { f := xos.Remove; _ = f }
func c() { os.Getenv("HOME") }
`
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := plainCalls(t, dir, "p")
	want := []string{"p/p.go a os.ReadFile", "p/p.go b os.Remove"}
	if !slices.Equal(got, want) {
		t.Errorf("plainCalls = %q, want %q", got, want)
	}
}
