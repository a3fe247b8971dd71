package yamlx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/alloctest"
)

// tree counts the nodes the decoder built and their nesting (aliases
// count once, as the node they are, not as what they stand for).
func tree(n *yaml.Node) (nodes, depth int) {
	if n == nil {
		return 0, 0
	}
	nodes = 1
	for _, c := range n.Content {
		cn, cd := tree(c)
		nodes += cn
		depth = max(depth, cd)
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		depth++
	}
	return nodes, depth
}

var scanSeeds = []string{
	"a: 1\nb: [x, y, {z: w}]\n",
	"- - - a\n- b: c\n  d: e\n",
	"a:\n- x\n- y\nb: 1\n",
	"k: |\n  text: [a, b]\n  - c\nnext: {a, b}\n",
	"- key: |\n    body\n  other: [1,2]\n",
	"\"a #\": [b, \"c #\", [d, e]]\n",
	"a: b\n  \"c\nd: [1, 2, 3]\n",
	"'it''s': x\n? complex\n: value\n",
	"--- |\n  text\n--- [a, b, c]\n",
	"a: &x [1, 2]\nb: *x\nc: !!str 3\n",
	"{\"a\":\"b\",\"c\":[1,2,{}]}\n",
	"a:\n  b:\n    c:\n      d: [[[[]]]]\n",
	"-\n-\n- \n",
	"a: >-\n  folded\n  text\n\nb: c # comment [x, y]\n",
	"%YAML 1.2\n---\na: b\n...\n",
	"[a,\n b, {c: d,\n e: f}]\n",
	"a: \"multi\n  line, with: [many]\" \nb: [1]\n",
	"? - a\n  - b\n: - c\n",
}

// Scan never counts fewer values or levels than the decoder builds: on
// every document the decoder takes, the bounds hold what it made.
func FuzzScanBoundsTheDecoder(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add(s)
	}
	for _, dir := range []string{"../../testdata/hostile/nocloud", "../../testdata/netcfg"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		more, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range append(files, more...) {
			if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
				f.Add(string(b))
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		st := Scan([]byte(s))
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(s), &n); err != nil {
			return
		}
		nodes, depth := tree(&n)
		if st.Nodes < nodes || st.Depth < depth {
			t.Fatalf("Scan = %d values, depth %d; the decoder built %d, depth %d, from %q", st.Nodes, st.Depth, nodes, depth, s)
		}
	})
}

// A few MiB of small values cost the decoder hundreds of MiB (about 250
// bytes each), aliases or not: Check refuses them from the text, and so
// does Unmarshal before the decoder sees them.
func TestCheckRefusesBeforeDecoding(t *testing.T) {
	for name, doc := range map[string]string{
		"flow list":  "[" + strings.Repeat("a,", 1<<20) + "a]",
		"block list": strings.Repeat("- a\n", MaxNodes),
		"mapping":    strings.Repeat("k: v\n", MaxNodes/2),
		"empty list": strings.Repeat("-\n", MaxNodes),
		"deep flow":  strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
		"deep block": deepBlock(MaxDepth + 1),
		"too large":  "a: |\n" + strings.Repeat("  "+strings.Repeat("x", 98)+"\n", MaxDocument/100+1),
	} {
		data := []byte(doc)
		var err error
		a := alloctest.Bytes(func() {
			var v any
			err = Unmarshal(data, &v)
		})
		if !errors.Is(err, ErrTooComplex) {
			t.Errorf("%s: Unmarshal = %v, want ErrTooComplex", name, err)
			continue
		}
		if a > 64<<10 {
			t.Errorf("%s: refusing it allocated %d bytes", name, a)
		}
		if strings.Contains(err.Error(), "a,a") || strings.Contains(err.Error(), "xxxx") {
			t.Errorf("%s: the error quotes the text: %v", name, err)
		}
	}
}

func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String()
}

// At the limits, documents pass: a large block scalar (its body is text,
// not values), deep but allowed nesting, many values but not too many.
func TestCheckTakesWhatIsWithinTheLimits(t *testing.T) {
	for name, doc := range map[string]string{
		"text":       "a: |\n" + strings.Repeat("  "+strings.Repeat("x, [y]: - z", 9)+"\n", MaxDocument/110),
		"depth":      deepBlock(MaxDepth - 2),
		"flow depth": strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2),
		"values":     strings.Repeat("- a\n", MaxNodes/2-2),
		"comments":   strings.Repeat("# [a, b, c, d, e, f] - x: y\n", 60000),
	} {
		if err := Check([]byte(doc)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			t.Errorf("%s: not YAML: %v", name, err)
		}
	}
}
