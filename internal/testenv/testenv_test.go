package testenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every TestIntegration... test of the module calls Integration first, so
// that `go test -short` skips it and `make test` runs it: the rule is held
// here, over the source, not by each file remembering it.
func TestEveryIntegrationTestCallsIntegration(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	found := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || name == "bin" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != root && err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "TestIntegration") {
				continue
			}
			found++
			if !callsIntegrationFirst(fn) {
				t.Errorf("%s: %s does not call testenv.Integration(t) as its first statement", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 100 {
		t.Errorf("found %d TestIntegration tests under %s; the walk missed the module's tests", found, root)
	}
}

// callsIntegrationFirst reports whether fn's body begins with
// testenv.Integration(P), P being fn's *testing.T parameter.
func callsIntegrationFirst(fn *ast.FuncDecl) bool {
	params := fn.Type.Params.List
	if fn.Body == nil || len(fn.Body.List) == 0 || len(params) != 1 || len(params[0].Names) != 1 {
		return false
	}
	es, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Integration" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	arg, ok2 := call.Args[0].(*ast.Ident)
	return ok && ok2 && pkg.Name == "testenv" && arg.Name == params[0].Names[0].Name
}

// Integration skips under -short and nowhere else.
func TestSkipsOnlyUnderShort(t *testing.T) {
	ran := false
	t.Run("integration", func(t *testing.T) {
		Integration(t)
		ran = true
	})
	if ran == testing.Short() {
		t.Errorf("under -short=%v the integration test ran=%v", testing.Short(), ran)
	}
}
