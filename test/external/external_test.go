package external

import (
	"go/ast"
	"go/parser"
	"go/token"
	goversion "go/version"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

const module = "github.com/seedkeeper/seedkeeper"

// stable are the packages of the stable API (README.md, "The library").
var stable = []string{"mdata", "mdata/mdatatest", "netcfg", "datasource"}

// apiChecked are the stable packages whose exported declarations are
// checked for internal types.
var apiChecked = []string{"mdata", "mdata/mdatatest", "netcfg", "datasource"}

// exampleFiles are the Example files run from the outside module, per
// package: the stable packages', and those of the other importable ones
// too, so that no example shows a call an importer cannot write.
var exampleFiles = map[string][]string{
	"mdata":           {"example_test.go"},
	"mdata/mdatatest": {"example_test.go", "example_linux_test.go"},
	"netcfg":          {"example_test.go"},
	"datasource":      {"smartos_example_test.go", "nocloud_example_test.go", "vmware_example_test.go"},
	"agent":           {"example_test.go"},
	"hotplug":         {"example_test.go"},
	"identity":        {"example_test.go"},
	"image":           {"example_test.go"},
	"netcfg/apply":    {"example_test.go"},
	"nosource":        {"example_test.go"},
	"seed":            {"example_test.go"},
}

func repoRoot(t *testing.T) string { return buildtest.ModuleRoot(t) }

// outsideModule writes a module example.com/consumer in a temporary
// directory that requires seedkeeper, replaced by this checkout, with
// this checkout's go.sum, and returns the directory and the environment
// that makes the go command work offline from the module cache.
func outsideModule(t *testing.T) (dir string, env []string) {
	t.Helper()
	root := repoRoot(t)
	dir = t.TempDir()
	goMod := "module example.com/consumer\n\ngo 1.26.0\n\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + strconv.Quote(root) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(),
		// -mod=mod lets go fill in the indirect requirements; with
		// -trimpath and cgo off the build is make build's, whose
		// compiled packages make vet leaves in the build cache.
		"GOFLAGS=-mod=mod -buildvcs=false -trimpath",
		"GOPROXY=off", // only the module cache: no network
		"GOSUMDB=off", // the hashes come from go.sum
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"CGO_ENABLED=0",
	)
	return dir, env
}

func goTool() string { return buildtest.GoTool() }

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in the outside module: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOutsideModule builds testdata/consumer in a module of its own and
// runs it with arguments only known at run time: what it prints is what
// the four stable packages did for it.
func TestOutsideModule(t *testing.T) {
	testenv.SkipShort(t, "builds a consumer in a module of its own")
	dir, env := outsideModule(t)
	copyFile(t, "testdata/consumer/main.go", filepath.Join(dir, "main.go"))
	bin := filepath.Join(dir, "consumer")
	run(t, dir, env, goTool(), "build", "-o", bin, ".")
	scratch := t.TempDir()
	got := run(t, dir, env, bin, scratch, "db7", "90:b8:d0:4a:1b:77")
	want := "detect: true\n" +
		"forced: true transport set explicitly\n" +
		"get: db7\n" +
		"keys: hostname,root_authorized_keys,user-script,cloud-init:user-data,consumer\n" +
		"deleted: true\n" +
		"smartos: true db7\n" +
		"no source: true\n" +
		"valid source: true false\n" +
		"netcfg: lan0 [192.0.2.10/24]\n" +
		"networkd: 05-seedkeeper-nic0.network\n" +
		"bad field: true\n" +
		"field error: true\n"
	if got != want {
		t.Errorf("the outside program printed\n%s\nwant\n%s", got, want)
	}
}

// TestExamplesOutside copies the stable packages' Example files into the
// outside module and runs them there: they compile against the exported
// API alone (an import of an internal package is refused outside this
// module) and print what their Output comments say.
func TestExamplesOutside(t *testing.T) {
	testenv.SkipShort(t, "builds and runs every example in a module of its own")
	dir, env := outsideModule(t)
	root := repoRoot(t)
	var pkgs []string
	for pkg, files := range exampleFiles {
		for _, f := range files {
			copyFile(t, filepath.Join(root, pkg, f), filepath.Join(dir, "examples", pkg, f))
		}
		pkgs = append(pkgs, "./examples/"+pkg)
	}
	out := run(t, dir, env, goTool(), append([]string{"test", "-count=1", "-run", "^Example"}, pkgs...)...)
	for _, pkg := range pkgs {
		if !strings.Contains(out, "ok  \texample.com/consumer/"+strings.TrimPrefix(pkg, "./")) {
			t.Errorf("no ok line for %s:\n%s", pkg, out)
		}
	}
}

// TestNoInternalTypes: no exported declaration of a checked stable
// package (function signatures, methods of exported types, exported
// struct fields and interface methods, typed exported vars and consts)
// names a type from an internal package, so that an importer can always
// write the value it passes.
func TestNoInternalTypes(t *testing.T) {
	root := repoRoot(t)
	for _, pkg := range apiChecked {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(root, pkg), func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				for _, bad := range internalRefs(f) {
					t.Errorf("%s: %s names %s, an internal package's type", filepath.Join(pkg, filepath.Base(name)), bad.where, bad.ref)
				}
			}
		}
	}
}

type ref struct{ where, ref string }

// internalRefs lists the qualified identifiers pkg.Name in f's exported
// declarations whose pkg is imported from an internal package.
func internalRefs(f *ast.File) []ref {
	internal := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains("/"+path+"/", "/internal/") {
			continue
		}
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		internal[name] = path
	}
	if len(internal) == 0 {
		return nil
	}
	var refs []ref
	scan := func(where string, n ast.Node) {
		if n == nil {
			return
		}
		var inspect func(ast.Node) bool
		inspect = func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
					refs = append(refs, ref{where, internal[id.Name] + "." + sel.Sel.Name})
				}
			}
			// Function bodies and unexported struct fields are not API.
			switch n := n.(type) {
			case *ast.BlockStmt:
				return false
			case *ast.StructType:
				for _, fld := range n.Fields.List {
					if len(fld.Names) == 0 || anyExported(fld.Names) {
						ast.Inspect(fld.Type, inspect)
					}
				}
				return false
			}
			return true
		}
		ast.Inspect(n, inspect)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			scan("func "+d.Name.Name, d.Type)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						scan("type "+s.Name.Name, s.Type)
					}
				case *ast.ValueSpec:
					if anyExported(s.Names) {
						scan("var or const "+s.Names[0].Name, s.Type)
						for _, v := range s.Values {
							scan("the value of "+s.Names[0].Name, v)
						}
					}
				}
			}
		}
	}
	return refs
}

func anyExported(ids []*ast.Ident) bool {
	for _, id := range ids {
		if id.IsExported() {
			return true
		}
	}
	return false
}

func exportedRecv(fl *ast.FieldList) bool {
	t := fl.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// TestGoDirective: go.mod's go directive is the highest one among the
// modules whose packages seedkeeper builds, no higher, so that an
// importer is not held to a newer Go than the dependencies need. (The go
// command already refuses one that is lower.)
func TestGoDirective(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command(goTool(), "list", "-deps", "-test", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.GoVersion}}{{end}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	highest, by := "", ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, v, ok := strings.Cut(line, " ")
		if ok && v != "" && goversion.Compare("go"+v, "go"+highest) > 0 {
			highest, by = v, path
		}
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var directive string
	for _, line := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			directive = strings.TrimSpace(v)
		}
	}
	if directive == "" || highest == "" {
		t.Fatalf("go directive %q, highest of the dependencies %q", directive, highest)
	}
	if goversion.Compare("go"+directive, "go"+highest) != 0 {
		t.Errorf("go.mod says go %s; the highest any dependency needs is %s (%s): lower it, and say why in README.md", directive, highest, by)
	}
}
