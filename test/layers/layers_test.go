package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
)

const module = "github.com/seedkeeper/seedkeeper"

// A layer is a set of packages and the layers they may import besides
// their own. Packages are named relative to the module: "x" is that
// package, "x/..." it and every package below it. A package is in the
// layer of its longest matching pattern, so a new package lands in the
// layer of the tree it is added to: a new internal/ package is plumbing
// unless it is named among the helpers.
type layer struct {
	name, what string
	pkgs       []string
	may        []string
}

// layers, from the bottom up. This table is the rule; docs/design.md
// shows it (TestDocsShowLayers).
var layers = []layer{
	{
		name: "helpers",
		what: "one job each, no knowledge of sources, stacks or the flows",
		pkgs: []string{
			"internal/alloctest", "internal/bound", "internal/buildtest", "internal/config",
			"internal/dmi", "internal/fsutil", "internal/goos", "internal/journallog",
			"internal/nohang", "internal/nstest", "internal/paths", "internal/redact",
			"internal/safetext", "internal/seedimage", "internal/syncbuf", "internal/sysroot",
			"internal/testenv", "internal/testseed", "internal/unit", "internal/version",
			"internal/vmtools", "internal/yamlx",
		},
	},
	{
		name: "mdata",
		what: "the SmartOS metadata client and its simulated host (stable API)",
		pkgs: []string{"mdata/..."},
		may:  []string{"helpers", "plumbing"},
	},
	{
		name: "netcfg",
		what: "the network model, its parsers and renderers (stable API)",
		pkgs: []string{"netcfg/..."},
		may:  []string{"helpers", "plumbing"},
	},
	{
		name: "datasource",
		what: "the metadata sources and their table (stable API)",
		pkgs: []string{"datasource/..."},
		may:  []string{"helpers", "plumbing", "mdata", "netcfg"},
	},
	{
		name: "plumbing",
		what: "seedkeeper's own code that the stable packages share or lean on",
		pkgs: []string{"internal/..."},
		may:  []string{"helpers", "mdata", "netcfg", "datasource"},
	},
	{
		name: "steps",
		what: "one step of the flows each: the seed, identity, intent, no source, hotplug",
		pkgs: []string{"seed/...", "identity/...", "intent/...", "nosource/...", "hotplug/..."},
		may:  []string{"helpers", "plumbing", "mdata", "netcfg", "datasource"},
	},
	{
		name: "flows",
		what: "boot, watch, status, uninstall; the image check and seal",
		pkgs: []string{"agent/...", "image/..."},
		may:  []string{"helpers", "plumbing", "mdata", "netcfg", "datasource", "steps"},
	},
	{
		name: "commands",
		what: "the programs",
		pkgs: []string{"cmd/..."},
		may:  []string{"helpers", "plumbing", "mdata", "netcfg", "datasource", "steps", "flows"},
	},
	{
		name: "tools",
		what: "benchmarks, packaging, whole-program tests and the test-only source",
		pkgs: []string{"bench/...", "packaging/...", "test/...", "internal/testsource"},
		may:  []string{"helpers", "plumbing", "mdata", "netcfg", "datasource", "steps", "flows", "commands"},
	},
}

// layerOf is the layer of package p (relative to the module), with the
// pattern that put it there; nil when none matches.
func layerOf(p string) (*layer, string) {
	var best *layer
	var pat string
	for i := range layers {
		for _, q := range layers[i].pkgs {
			base, tree := strings.CutSuffix(q, "/...")
			if p == base || tree && strings.HasPrefix(p, base+"/") {
				if best == nil || len(q) > len(pat) {
					best, pat = &layers[i], q
				}
			}
		}
	}
	return best, pat
}

// imports is what each package of the module imports from the module
// (test files left out: a test may reach anywhere), over the systems
// seedkeeper builds on, whose files import differently.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := buildtest.ModuleRoot(t)
	graph := map[string][]string{}
	for _, goos := range []string{"linux", "freebsd", "windows"} {
		cmd := exec.Command(buildtest.GoTool(), "list", "-e", "-json=ImportPath,Imports", "./...")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (GOOS=%s): %v\n%s", goos, err, stderr.Bytes())
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath string
				Imports    []string
			}
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("go list (GOOS=%s): %v", goos, err)
			}
			from := rel(p.ImportPath)
			if _, ok := graph[from]; !ok {
				graph[from] = nil
			}
			for _, imp := range p.Imports {
				if to := rel(imp); to != imp && !slices.Contains(graph[from], to) {
					graph[from] = append(graph[from], to)
				}
			}
		}
	}
	return graph
}

// rel is p relative to the module; p itself when outside it.
func rel(p string) string {
	if p == module {
		return "."
	}
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return p
}

// TestLayers checks every import inside the module against the table.
func TestLayers(t *testing.T) {
	graph := imports(t)
	if len(graph) < 20 {
		t.Fatalf("go list found %d packages, want the whole module", len(graph))
	}
	froms := slices.Sorted(func(yield func(string) bool) {
		for p := range graph {
			if !yield(p) {
				return
			}
		}
	})
	for _, from := range froms {
		fl, fpat := layerOf(from)
		if fl == nil {
			t.Errorf("package %s is in no layer: add it to the table in test/layers (and docs/design.md)", from)
			continue
		}
		for _, to := range graph[from] {
			tl, tpat := layerOf(to)
			if tl == nil || tl == fl || slices.Contains(fl.may, tl.name) {
				continue
			}
			may := "only its own layer"
			if len(fl.may) > 0 {
				may = strings.Join(fl.may, ", ") + " and its own layer"
			}
			t.Errorf("%s imports %s: %s (layer %s, from %s) may import %s, not %s (layer %s, from %s); see Layers in docs/design.md",
				from, to, from, fl.name, fpat, may, to, tl.name, tpat)
		}
	}
	// A pattern that matches nothing is a stale rule.
	for _, l := range layers {
		for _, q := range l.pkgs {
			base, _ := strings.CutSuffix(q, "/...")
			if _, ok := graph[base]; !ok && !strings.HasSuffix(q, "/...") {
				t.Errorf("layer %s names %s, which is no package of the module: remove it from the table", l.name, q)
			}
		}
	}
}

// The rules themselves: the table is a partial order (no layer may import
// one that may import it back), and names only layers it has.
func TestLayersAreOrdered(t *testing.T) {
	rank := map[string]int{}
	for i, l := range layers {
		rank[l.name] = i
	}
	for _, l := range layers {
		for _, m := range l.may {
			if _, ok := rank[m]; !ok {
				t.Errorf("layer %s may import %q, which is no layer", l.name, m)
			}
			if m == l.name {
				t.Errorf("layer %s names itself among what it may import (its own layer always is)", l.name)
			}
		}
	}
	for _, l := range layers {
		for _, m := range l.may {
			other := layers[rank[m]]
			if slices.Contains(other.may, l.name) && !(isLibrary(l.name) && isLibrary(m)) {
				t.Errorf("layers %s and %s may import each other", l.name, m)
			}
		}
	}
}

// isLibrary reports whether layer name is one of the stable packages or
// the plumbing they share: these may lean on each other (Go itself
// refuses a cycle between two packages), and only on what is below them.
func isLibrary(name string) bool {
	return slices.Contains([]string{"mdata", "netcfg", "datasource", "plumbing"}, name)
}

// TestDocsShowLayers pins the Layers section of docs/design.md to the
// table.
func TestDocsShowLayers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(buildtest.ModuleRoot(t), "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := table()
	if !bytes.Contains(b, []byte(want)) {
		t.Errorf("docs/design.md does not show the layers as test/layers has them; its Layers section should hold:\n%s", want)
	}
}

// table is the layers as a Markdown table.
func table() string {
	var b strings.Builder
	b.WriteString("| layer | packages | may import |\n|---|---|---|\n")
	for _, l := range layers {
		pkgs := make([]string, len(l.pkgs))
		for i, p := range l.pkgs {
			pkgs[i] = "`" + p + "`"
		}
		may := "—"
		if len(l.may) > 0 {
			may = strings.Join(l.may, ", ")
		}
		fmt.Fprintf(&b, "| %s: %s | %s | %s |\n", l.name, l.what, strings.Join(pkgs, " "), may)
	}
	return b.String()
}
