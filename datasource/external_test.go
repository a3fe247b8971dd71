package datasource_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The examples are what a user copies: they use plain values only, so they
// build in another module, where nothing under internal/ can be imported.
func TestExamplesBuildFromAnotherModule(t *testing.T) {
	examples, err := filepath.Glob("*example_test.go")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples (%v)", err)
	}
	for _, f := range examples {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.Contains(p, "/internal/") {
				t.Errorf("%s imports %s, which another module cannot", f, p)
			}
		}
	}
	if testing.Short() {
		t.Skip("building the examples in another module takes a compile: run without -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	gomod := "module example.com/user\n\ngo 1.26\n\nrequire github.com/seedkeeper/seedkeeper v0.0.0\n\nreplace github.com/seedkeeper/seedkeeper => " + repo + "\n"
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644)
	os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644)
	for _, f := range examples {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(mod, f), b, 0o644)
	}
	cmd := exec.Command(gobin, "test", "-count=1", "-run", "^Example", ".")
	cmd.Dir = mod
	// Built as make build builds (static, -trimpath), which shares the
	// standard library's compiled packages with make vet's.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -trimpath", "CGO_ENABLED=0", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the examples do not build and pass in another module: %v\n%s", err, out)
	}
}
