package packaging

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// crossTargets are the other platforms "make cross" builds for: on
// linux/arm64 the whole binary; on FreeBSD and Windows the mdata tools
// over the serial port, with "not supported" errors for the commands that
// need Linux.
var crossTargets = []struct{ goos, goarch string }{
	{"linux", "arm64"}, {"freebsd", "amd64"}, {"windows", "amd64"},
}

// crossPackages are what must compile on every target: the command and
// the stable packages other programs import.
var crossPackages = []string{"./cmd/seedkeeper", "./mdata/...", "./datasource/...", "./netcfg/..."}

// TestCrossBuild builds cmd/seedkeeper for linux/amd64 as make build does
// (CGO_ENABLED=0) and checks it is a static executable (no program
// interpreter, no shared libraries); for every other target of make
// cross it type-checks crossPackages and everything they import, the
// standard library included, as the compiler sees them there (the
// target's files, word size and struct layouts, cgo off). What could
// break on another platform is seedkeeper's code: a file a build tag
// leaves out, a field whose type differs (unix.Stat_t's on arm64), a
// function only Linux has. The toolchain's own part, compiling and
// linking a pure Go program for a target it supports, is make cross's;
// compiling the standard library for three more platforms cost about
// four minutes of make test on a 2-core machine, the type check seconds.
func TestCrossBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds take a while; run without -short")
	}
	t.Parallel()
	t.Run("linux-amd64", func(t *testing.T) {
		t.Parallel()
		f, err := elf.Open(seedkeeperBin(t))
		if err != nil {
			t.Fatalf("not an ELF executable: %v", err)
		}
		defer f.Close()
		if f.Machine != elf.EM_X86_64 {
			t.Errorf("ELF machine %v; want %v", f.Machine, elf.EM_X86_64)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("has a program interpreter (PT_INTERP): not static")
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("imports shared libraries %v (%v): not static", libs, err)
		}
	})
	for _, tg := range crossTargets {
		t.Run(tg.goos+"-"+tg.goarch, func(t *testing.T) {
			t.Parallel()
			n, errs, err := typeCheck(repoRoot, tg.goos, tg.goarch, crossPackages...)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Errorf("GOOS=%s GOARCH=%s: %v", tg.goos, tg.goarch, e)
			}
			if n < 100 {
				t.Errorf("GOOS=%s GOARCH=%s: %d packages type-checked; the standard library alone is more", tg.goos, tg.goarch, n)
			}
		})
	}
}

// TestTypeCheckSeesTheTarget shows typeCheck checks the target's files:
// a module whose Windows file has a type error passes for Linux and fails
// for Windows, naming the file and line; a missing import fails on both.
func TestTypeCheckSeesTheTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the standard library; run without -short")
	}
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":       "module example.com/m\n\ngo 1.21\n",
		"m.go":         "package m\n\nimport \"os\"\n\nvar Name = os.Args[0]\n\nvar N int = size\n",
		"m_other.go":   "//go:build !windows\n\npackage m\n\nconst size = 1\n",
		"m_windows.go": "package m\n\nconst size = \"one\"\n",
		"bad/bad.go":   "package bad\n\nimport _ \"example.com/m/missing\"\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, errs, err := typeCheck(dir, "linux", "arm64", ".")
	if err != nil || len(errs) != 0 || n < 2 {
		t.Errorf("linux/arm64: %d packages, errors %v, %v; want none", n, errs, err)
	}
	_, errs, err = typeCheck(dir, "windows", "amd64", ".")
	if err != nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "m.go:7:") {
		t.Errorf("windows/amd64: errors %v, %v; want one, at m.go:7", errs, err)
	}
	_, errs, err = typeCheck(dir, "linux", "amd64", "./bad")
	if err != nil || len(errs) == 0 {
		t.Errorf("a missing import: errors %v, %v; want one", errs, err)
	}
}

// typeCheck type-checks the packages matching patterns in the module at
// dir, and every package they import, from source with go/types, as
// GOOS=goos GOARCH=goarch CGO_ENABLED=0 selects their files. It returns
// how many packages it checked and their errors (go list's included);
// err is for a failure to list them at all.
func typeCheck(dir, goos, goarch string, patterns ...string) (int, []error, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-deps", "-json=ImportPath,Dir,GoFiles,ImportMap,Error"}, patterns...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, nil, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	fset := token.NewFileSet()
	checked := map[string]*types.Package{"unsafe": types.Unsafe}
	var errs []error
	n := 0
	// go list -deps lists every package after the packages it imports.
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
			ImportMap       map[string]string
			Error           *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return n, errs, fmt.Errorf("go list's output: %v", err)
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
			continue
		}
		if p.ImportPath == "unsafe" {
			continue
		}
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			files = append(files, f)
		}
		conf := types.Config{
			Importer: importerFunc(func(path string) (*types.Package, error) {
				if m, ok := p.ImportMap[path]; ok {
					path = m
				}
				if tp := checked[path]; tp != nil {
					return tp, nil
				}
				return nil, fmt.Errorf("%s was not listed before %s", path, p.ImportPath)
			}),
			Sizes: types.SizesFor("gc", goarch),
			Error: func(err error) { errs = append(errs, err) },
		}
		tp, _ := conf.Check(p.ImportPath, fset, files, nil)
		checked[p.ImportPath] = tp
		n++
	}
	return n, errs, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
