package yamlx

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
)

// Describe keeps the line and the library's words, and drops everything
// the text put into the error.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		text   string
		decode bool // the error is the decoder's (a type error)
		line   int
		msg    string
	}{
		{text: "a: *SECRET\n", msg: "unknown anchor referenced"},
		{text: "a: [\n", line: 1, msg: "did not find expected node content"},
		{text: "a: 1\n a: 2\n", line: 2, msg: "mapping values are not allowed in this context"},
		{text: "a: \"SECRET\n", line: 2, msg: "found unexpected end of stream"},
		{text: "a: SECRET\n", decode: true, line: 1, msg: "cannot unmarshal !!str into int"},
		{text: "a: !SECRET x\n", decode: true, line: 1, msg: "cannot unmarshal a tag into int"},
		{text: "a: !!SECRET x\n", decode: true, line: 1, msg: "cannot unmarshal a tag into int"},
		{text: "a: SECRET\nb: SECRET\n", decode: true, line: 1, msg: "cannot unmarshal !!str into int (and 1 more)"},
		{text: "SECRET: 1\nSECRET: 2\n", decode: true, line: 2, msg: "mapping key already defined at line 1"},
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(tc.text), &n)
		if tc.decode {
			if err != nil {
				t.Fatalf("%q: %v", tc.text, err)
			}
			var v struct{ A, B int }
			if strings.HasPrefix(tc.text, "SECRET") {
				var m map[string]int
				err = n.Decode(&m)
			} else {
				err = n.Decode(&v)
			}
		}
		if err == nil {
			t.Fatalf("%q: no error", tc.text)
		}
		got := Describe(err)
		var d *Error
		if !errors.As(got, &d) || d.Line != tc.line || d.Msg != tc.msg || Line(err) != tc.line {
			t.Errorf("Describe(%q) = %#v, want line %d, %q", err, got, tc.line, tc.msg)
		}
		if strings.Contains(got.Error(), "SECRET") {
			t.Errorf("Describe(%q) = %q quotes the text", err, got)
		}
	}
	// The limits' errors are kept, and nil.
	tooBig := Check(make([]byte, MaxDocument+1))
	if Describe(tooBig) != tooBig || Describe(nil) != nil || Line(nil) != 0 {
		t.Error("Describe changed a limit's error or nil")
	}
}

// Describe is the one describer: no other package takes the YAML
// library's type errors apart (it would have to drop what they quote
// itself). A new reader of YAML calls Describe.
func TestOneDescriber(t *testing.T) {
	root := buildtest.ModuleRoot(t)
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (rel == "internal/yamlx" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		seen++
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == "TypeError" {
				if id, ok := s.X.(*ast.Ident); ok && id.Name == "yaml" {
					t.Errorf("%s: yaml.TypeError outside internal/yamlx: describe YAML errors with yamlx.Describe", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d Go files under %s, want the module's", seen, root)
	}
}

// Whatever the text, the description holds no quoted part of it.
func FuzzDescribe(f *testing.F) {
	for _, s := range []string{"a: *x\n", "a: [\n", "a: !t x\n", "a: 1\na: 2\n", "a: \"x\n", "\t- x", "a: b: c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse([]byte(s)) // bounded: the library alone may not end
		if err == nil {
			var v struct{ A, B int }
			err = n.Decode(&v)
		}
		if err == nil || errors.Is(err, ErrTooComplex) || errors.Is(err, ErrTooLarge) {
			return
		}
		if d := Describe(err).Error(); strings.ContainsAny(d, "'\"`") {
			t.Errorf("Describe(%q) = %q keeps a quoted part", err, d)
		}
	})
}
