package datasource

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A source carries its own duties on its table entry (its hooks, its ID
// kind, its seeds): no flow outside this package, the commands (any
// directory named cmd) and the harnesses asks which source it has. This walks the non-test Go files of every other
// package of the module and finds each place that names a source to
// compare with it: a datasource.SourceX constant, or a string literal
// that is a source's name compared with == or != or in a switch case.
func TestNoFlowComparesSourceNames(t *testing.T) {
	names := Names()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, "../"))
		if d.IsDir() {
			// Commands (cmd/seedkeeper, bench/cmd/skbench) may name
			// sources to the person running them, and the harnesses (test,
			// bench) drive one source's reader on purpose.
			switch {
			case slices.Contains([]string{"datasource", "test", "bench", "testdata", ".git"}, rel), d.Name() == "cmd":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		isName := func(e ast.Expr) bool {
			if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
				v, err := strconv.Unquote(l.Value)
				return err == nil && slices.Contains(names, v)
			}
			return false
		}
		at := func(n ast.Node, what string) {
			found = append(found, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+what)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "datasource" &&
					strings.HasPrefix(n.Sel.Name, "Source") && n.Sel.Name != "Source" {
					at(n, "names datasource."+n.Sel.Name)
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
					at(n, "compares with a source's name")
				}
			case *ast.CaseClause:
				if slices.ContainsFunc(n.List, isName) {
					at(n, "switches on a source's name")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a flow that needs to know something of a source asks its table entry (Lookup), or the source does it in its duties", f)
	}
}
