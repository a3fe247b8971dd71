package yamlx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/alloctest"
)

func corpus(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "nocloud", name, "user-data"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t testing.TB, s []byte) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(s, &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// naive counts what n expands to by expanding it: the oracle of Measure,
// for small documents. It gives up past cap.
func naive(n *yaml.Node, depth, cap int, e *Extent) {
	if e.Nodes > cap || depth > 1000 {
		e.Nodes = cap + 1
		return
	}
	if n.Kind == yaml.AliasNode {
		naive(n.Alias, depth, cap, e)
		return
	}
	e.Nodes++
	e.Text += len(n.Value)
	d := depth
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		d++
	}
	e.Depth = max(e.Depth, d)
	for _, c := range n.Content {
		naive(c, d, cap, e)
	}
}

// The bomb of the corpus: a list of 1,000 values named by 1,040 aliases,
// a million values once expanded. Measure counts them exactly, at the
// cost of the parsed tree, and CheckExpanded refuses them.
func TestMeasureBomb(t *testing.T) {
	doc := parse(t, corpus(t, "alias-bomb-user-data"))
	var e Extent
	var err error
	n := alloctest.Bytes(func() { e, err = Measure(doc) })
	if err != nil {
		t.Fatal(err)
	}
	// document, mapping, two keys, the list and its values, the refs
	// list, and each alias the list and its values again.
	if want := 1 + 1 + 2 + 1001 + 1 + 1040*1001; e.Nodes != want || e.Depth != 3 {
		t.Errorf("Measure = %+v; want %d values, depth 3", e, want)
	}
	if n > 64<<10 {
		t.Errorf("Measure allocated %d bytes; want what the tree's anchors cost, not the expansion", n)
	}
	if err := CheckExpanded(doc); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "65536 values") {
		t.Errorf("CheckExpanded = %v; want ErrTooLarge naming the limit", err)
	}
}

// Ten levels of ten aliases each: 10^10 values, which Measure counts
// without overflowing and without expanding.
func TestMeasureExponential(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	e, err := Measure(parse(t, []byte(b.String())))
	if err != nil || e.Nodes < 1e10 || e.Text < 1e10 {
		t.Fatalf("Measure = %+v, %v; want more than 10^10 values", e, err)
	}
	if err := Unmarshal([]byte(b.String()), new(any)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Unmarshal = %v; want ErrTooLarge", err)
	}
}

func TestMeasureCycleAndDepth(t *testing.T) {
	if _, err := Measure(parse(t, []byte("a: &x [1, *x]\n"))); err == nil {
		t.Error("Measure of an alias inside its own anchor succeeded")
	}
	// A chain of aliases nests 150 levels in a text two levels deep: the
	// text passes Check, the expansion is refused.
	var b strings.Builder
	b.WriteString("a0: &a0 [x]\n")
	for i := 1; i < 150; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d]\n", i, i, i-1)
	}
	if err := Check([]byte(b.String())); err != nil {
		t.Fatalf("Check = %v; the text is shallow", err)
	}
	err := Unmarshal([]byte(b.String()), new(any))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "levels deep") {
		t.Errorf("Unmarshal = %v; want the expanded nesting refused", err)
	}
}

// At the limit a document decodes; one value more, it is refused before
// decoding, at the cost of parsing it.
func TestUnmarshalAliasLimits(t *testing.T) {
	var v any
	if err := Unmarshal(corpus(t, "alias-user-data-at-limit"), &v); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	over := corpus(t, "alias-user-data-over-limit")
	var err error
	n := alloctest.Bytes(func() { err = Unmarshal(over, &v) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v; want ErrTooLarge", err)
	}
	if n > 1<<20 {
		t.Errorf("over the limit: %d bytes allocated; want the parse's only", n)
	}
	n = alloctest.Bytes(func() { err = Unmarshal(corpus(t, "alias-bomb-user-data"), &v) })
	if !errors.Is(err, ErrTooLarge) || n > 2<<20 {
		t.Errorf("the bomb: %v, %d bytes allocated; want ErrTooLarge for the parse's cost", err, n)
	}
	// An empty document leaves the value as it was.
	v = "kept"
	if err := Unmarshal([]byte("# nothing\n"), &v); err != nil || v != "kept" {
		t.Errorf("empty document: %v, %v", v, err)
	}
}

func TestResolveRefusesBeforeCopying(t *testing.T) {
	doc := parse(t, corpus(t, "alias-user-data-at-limit"))
	var err error
	n := alloctest.Bytes(func() { _, err = Resolve(doc, 1<<20) })
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "8192 values") || n > 64<<10 {
		t.Errorf("Resolve = %v after %d bytes; want refused before copying", err, n)
	}
}

func TestDigest(t *testing.T) {
	d := func(s string) [32]byte { return Digest(parse(t, []byte(s))) }
	same := [][2]string{
		{"a: &x [1, 2]\nb: *x\n", "a: [1, 2]\nb: [1, 2]\n"},
		{"a: 1\nb: 2\n", "b: 2 # comment\na: 1\n"},
		{"a: 'text'\n", "a: text\n"},
		{"a: [1, 2]\n", "a:\n  - 1\n  - 2\n"},
	}
	for _, p := range same {
		if d(p[0]) != d(p[1]) {
			t.Errorf("Digest(%q) != Digest(%q); want the same value the same", p[0], p[1])
		}
	}
	differ := [][2]string{
		{"a: '1'\n", "a: 1\n"},
		{"a: ''\n", "a:\n"},
		{"a: [1, 2]\n", "a: [2, 1]\n"},
		{"a: [ab]\n", "a: [a, b]\n"},
		{"a: {b: c}\n", "a: [b, c]\n"},
	}
	for _, p := range differ {
		if d(p[0]) == d(p[1]) {
			t.Errorf("Digest(%q) == Digest(%q); want them told apart", p[0], p[1])
		}
	}
	doc := parse(t, corpus(t, "alias-user-data-at-limit"))
	if n := alloctest.Bytes(func() { Digest(doc) }); n > 256<<10 {
		t.Errorf("Digest at the limit allocated %d bytes; want the walk's only", n)
	}
}

// ParseFit leaves out the keys that make a document too large, and keeps
// the others.
func TestParseFit(t *testing.T) {
	src := string(corpus(t, "alias-bomb-user-data"))
	src = "instance-id: i-1\n" + strings.TrimPrefix(src, "#cloud-config\n") + "local-hostname: h\n"
	doc, dropped, err := ParseFit([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 1 || dropped[0].Key.Value != "refs" || !errors.Is(dropped[0].Err, ErrTooLarge) {
		t.Fatalf("dropped %+v; want refs", dropped)
	}
	var m map[string]any
	if err := doc.Decode(&m); err != nil || m["instance-id"] != "i-1" || m["local-hostname"] != "h" || m["list"] == nil || m["refs"] != nil {
		t.Errorf("kept %v (%v)", m, err)
	}
	if _, _, err := ParseFit(corpus(t, "alias-bomb-user-data")[:20]); err != nil {
		t.Errorf("a small document: %v", err)
	}
	if _, _, err := ParseFit([]byte("- &a [x, x, x, x, x, x, x, x]\n" + strings.Repeat("- [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n", 1000))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a list too large: %v; want it refused whole", err)
	}
}

func TestCount(t *testing.T) {
	v := map[string]any{"a": []any{"b", 1, map[any]any{"c": true}}, "d": []string{"e", "f"}}
	// the map, 2 keys, the list, 2 scalars, the inner map, its key and
	// value, the []string and its 2 strings.
	if n, ok := Count(v, 100); n != 12 || !ok {
		t.Errorf("Count = %d, %v; want 12", n, ok)
	}
	if n, ok := Count(v, 5); ok || n > 7 {
		t.Errorf("Count past 5 = %d, %v; want it stopped just past", n, ok)
	}
}

// FuzzMeasure: for whatever parses, Measure agrees with expanding the
// tree, and Digest does not depend on how a value is spelled when the
// expansion is the same.
func FuzzMeasure(f *testing.F) {
	for _, s := range []string{
		"a: &x {b: 1}\nc: *x\n",
		"- &s str\n- *s\n- {k: *s}\n",
		"base: &b {x: 1}\nd: {<<: *b, y: 2}\n",
		"a: &x [1, *x]\n",
		"? &k [1]\n: *k\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if Check(data) != nil {
			return
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil {
			return
		}
		e, err := Measure(&doc)
		if err != nil {
			return
		}
		var want Extent
		naive(&doc, 0, 100000, &want)
		if want.Nodes > 100000 {
			if e.Nodes <= 100000 {
				t.Fatalf("Measure = %+v; the expansion is more than 100000 values", e)
			}
			return
		}
		if e != want {
			t.Fatalf("Measure = %+v; expanding gives %+v\n%q", e, want, data)
		}
		Digest(&doc)
	})
}
