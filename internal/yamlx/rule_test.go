package yamlx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// decodeAllowed are the files outside this package that call the YAML
// library's own decoders or encoders, and why each call is bounded.
var decodeAllowed = map[string]string{
	"internal/config/config.go":  "Unmarshal into a node tree after Check, then CheckExpanded before anything is decoded from it",
	"netcfg/check.go":            "Unmarshal into a node tree after Check, then CheckExpanded before anything is decoded from it",
	"cmd/seedkeeper/validate.go": "Marshal of a meta-data tree yamlx.Unmarshal bounded, within MaxEncodeValues",
	"agent/fetch.go":             "Unmarshal of seedkeeper's own rendering of a parsed network configuration",
	"datasource/vmware.go":       "Marshal of a network mapping JSON cannot hold, after yamlx.Count",
	"datasource/vmware_imc.go":   "Marshal of the cloud-config a customization spec gives: a fixed shape of at most three checked values",
	"seed/seed.go":               "NewEncoder of the seed's meta-data and of a network config yamlx.Resolve bounded",
	"netcfg/marshal.go":          "NewEncoder of seedkeeper's own v1 rendering of a parsed configuration",
	"cmd/seedkeeper/fetch.go":    "Marshal of seedkeeper's own v1 rendering, for a person to read",
}

// TestOneWayToDecode holds the rule where it lives: a YAML document from
// outside is decoded through Unmarshal, Parse or ParseFit, which bound
// what its aliases expand to before anything is built. A new call of the
// library's own Unmarshal, NewDecoder, Marshal or NewEncoder outside this
// package fails here until it is bounded and listed with why.
func TestOneWayToDecode(t *testing.T) {
	root := filepath.Join("..", "..")
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (rel == "internal/yamlx" || rel == "test" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		name := ""
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "go.yaml.in/yaml/v3" || path == "gopkg.in/yaml.v3" || path == "gopkg.in/yaml.v2" || path == "sigs.k8s.io/yaml" {
				name = "yaml"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
				switch sel.Sel.Name {
				case "Unmarshal", "NewDecoder", "Marshal", "NewEncoder":
					found[rel] = true
					if _, ok := decodeAllowed[rel]; !ok {
						t.Errorf("%s calls %s.%s: decode outside input with yamlx.Unmarshal, Parse or ParseFit, or bound it and list it here with why", rel, name, sel.Sel.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range decodeAllowed {
		if !found[f] {
			t.Errorf("%s is listed but no longer calls the library's decoders or encoders: take it off the list", f)
		}
	}
}
