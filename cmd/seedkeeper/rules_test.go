package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The rules below each have one place in this package; these tests hold
// every command to it, so that a new command cannot bring a second way.

// use is one use of a name in the package's code: in which file and
// function (the enclosing top-level declaration; "" outside any).
type use struct {
	file, fn string
	pos      token.Position
}

// uses calls visit for every node of the package's non-test files, with
// where it is.
func uses(t *testing.T, visit func(n ast.Node, at use)) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn := ""
			if fd, ok := d.(*ast.FuncDecl); ok {
				fn = fd.Name.Name
			}
			ast.Inspect(d, func(n ast.Node) bool {
				if n != nil {
					visit(n, use{file: name, fn: fn, pos: fset.Position(n.Pos())})
				}
				return true
			})
		}
	}
}

// selector reports whether n is pkg.name.
func selector(n ast.Node, pkg, name string) bool {
	s, ok := n.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// Every exit status but exitOK, exitUsage and exitError is decided in
// exit.go: a command returns exitCode(err) or a verdict's status from
// there, and only main calls os.Exit.
func TestExitStatusesLiveInExitGo(t *testing.T) {
	general := []string{"exitOK", "exitUsage", "exitError", "exitCode"}
	uses(t, func(n ast.Node, at use) {
		switch n := n.(type) {
		case *ast.Ident:
			if at.file != "exit.go" && strings.HasPrefix(n.Name, "exit") && len(n.Name) > 4 &&
				n.Name[4] >= 'A' && n.Name[4] <= 'Z' && !slices.Contains(general, n.Name) {
				t.Errorf("%s: %s outside exit.go: map the outcome there (exitCode, or a verdict's function)", at.pos, n.Name)
			}
		case *ast.SelectorExpr:
			if selector(n, "os", "Exit") && at.fn != "main" {
				t.Errorf("%s: os.Exit in %s: a command returns its status to run, which main exits with", at.pos, at.fn)
			}
		}
	})
}

// Every command that stops on a signal stops through signalContext.
func TestOneSignalIdiom(t *testing.T) {
	found := false
	uses(t, func(n ast.Node, at use) {
		for _, name := range []string{"Notify", "NotifyContext", "Ignore"} {
			if selector(n, "signal", name) {
				if at.fn != "signalContext" {
					t.Errorf("%s: signal.%s in %s: use signalContext", at.pos, name, at.fn)
				}
				found = true
			}
		}
	})
	if !found {
		t.Error("no signal.Notify in signalContext: has the idiom moved?")
	}
}

// --drivers is defined and parsed in one place, driversFlag.
func TestOneDriversParser(t *testing.T) {
	uses(t, func(n ast.Node, at use) {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && s == "drivers" && at.fn != "driversFlag" {
				t.Errorf("%s: a flag named drivers in %s: use driversFlag", at.pos, at.fn)
			}
		case *ast.SelectorExpr:
			if selector(n, "hotplug", "ParseDriverList") && at.fn != "driversFlag" {
				t.Errorf("%s: hotplug.ParseDriverList in %s: --drivers is driversFlag's to parse", at.pos, at.fn)
			}
		}
	})
}

// The edge cases of --drivers, the same for every command: not given, the
// command decides; blank, nothing is allowed; an empty entry is an error,
// as in the metadata's and the configuration's lists.
func TestDriversFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		nilList bool
		allows  []string
		wantErr string
	}{
		{args: nil, nilList: true},
		{args: []string{"--drivers", ""}},
		{args: []string{"--drivers", "  "}},
		{args: []string{"--drivers=virtio_net, e1000"}, allows: []string{"virtio_net", "e1000"}},
		{args: []string{"--drivers", "a,,b"}, wantErr: "--drivers: entry 2: empty driver name"},
		{args: []string{"--drivers", "a,"}, wantErr: "--drivers: entry 2: empty driver name"},
		{args: []string{"--drivers", " , "}, wantErr: "--drivers: entry 1: empty driver name"},
		{args: []string{"--drivers", "E1000"}, wantErr: "--drivers: entry 1: driver name has U+0045 at byte 1 (allowed: a-z 0-9 _ -)"},
	} {
		fs := newFlags("test")
		allowlist := driversFlag(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		a, err := allowlist()
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%q: err %v, want %q", tc.args, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.nilList:
			if a != nil {
				t.Errorf("%q: %v, want none (the command decides)", tc.args, a)
			}
		case a == nil:
			t.Errorf("%q: no allowlist", tc.args)
		default:
			for _, d := range []string{"virtio_net", "e1000", "a", ""} {
				if a.Allows(d) != slices.Contains(tc.allows, d) {
					t.Errorf("%q: Allows(%q) = %v", tc.args, d, a.Allows(d))
				}
			}
		}
	}
}
