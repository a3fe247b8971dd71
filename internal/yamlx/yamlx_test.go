package yamlx

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// bomb is a document whose list names one 1 MiB string a thousand times:
// about 1 MiB to hold, about 1 GiB to encode.
func bomb(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("big: &big " + strings.Repeat("x", 1<<20) + "\nlist:\n")
	for range 1000 {
		b.WriteString("- *big\n")
	}
	return b.Bytes()
}

func TestSizeStopsAtTheLimit(t *testing.T) {
	// An alias bomb: a thousand aliases of one 1 MiB string.
	var v any
	if err := yaml.Unmarshal(bomb(t), &v); err != nil {
		t.Fatal(err)
	}
	n, ok := Size(v, 4<<20)
	if ok {
		t.Fatalf("Size = %d, ok; want over the 4 MiB limit", n)
	}
	if n > 6<<20 {
		t.Errorf("Size counted %d bytes before stopping; want it to stop just past the limit", n)
	}
	small := map[string]any{"a": []any{"bc", int64(1), true}, "d": map[any]any{1: "e"}}
	n, ok = Size(small, 1000)
	// keys a, d: 2; strings bc, e: 3; six values and the map key 1: 7 × 4.
	if !ok || n != 2+3+7*nodeCost+nodeCost {
		t.Errorf("Size(small) = %d, %v; want %d, true", n, ok, 2+3+8*nodeCost)
	}
}

func TestResolveRefusesABomb(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(bomb(t), &doc); err != nil {
		t.Fatal(err)
	}
	_, err := Resolve(&doc, 4<<20)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Resolve = %v; want ErrTooLarge", err)
	}
}

func TestResolveSelfContained(t *testing.T) {
	// Re-encoding the inner mapping left "*dns" dangling.
	src := "defaults: &dns {addresses: [10.0.0.2]}\nnetwork:\n  version: 2\n  ethernets:\n    eth0: {nameservers: *dns, dhcp4: true}\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	inner := doc.Content[0].Content[3]
	naive, err := yaml.Marshal(inner)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(naive, []byte("*dns")) {
		t.Fatalf("the naive encoding has no dangling alias; the test does not test anything:\n%s", naive)
	}
	r, err := Resolve(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(out, "*&") {
		t.Errorf("resolved document still has an alias or anchor:\n%s", out)
	}
	var got, want any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatalf("resolved document does not parse: %v\n%s", err, out)
	}
	var whole map[string]any
	yaml.Unmarshal([]byte(src), &whole)
	want = whole["network"]
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolved = %#v\nwant %#v", got, want)
	}
}

func TestResolveSelfReference(t *testing.T) {
	// An alias inside its own anchor must end, not loop.
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a: &x [1, *x]\n"), &doc); err != nil {
		t.Skipf("the decoder refuses a recursive alias itself: %v", err)
	}
	if _, err := Resolve(&doc, 1<<16); err == nil {
		t.Fatal("Resolve of a recursive alias succeeded")
	}
}

// FuzzResolve: whatever parses, once resolved within the budget, encodes
// to a document with no alias that decodes to the same value.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"a: &x {b: 1}\nc: *x\n",
		"- &s str\n- *s\n- {k: *s}\n",
		"base: &b {x: 1}\nd: {<<: *b, y: 2}\n",
		"a: &x [1, *x]\n",
		"? &k [1]\n: *k\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc yaml.Node
		var want any
		if yaml.Unmarshal(data, &doc) != nil || yaml.Unmarshal(data, &want) != nil {
			return
		}
		r, err := Resolve(&doc, 1<<16)
		if err != nil {
			return
		}
		out, err := yaml.Marshal(r)
		if err != nil {
			return // a key the encoder cannot write; nothing was written
		}
		var back yaml.Node
		if err := yaml.Unmarshal(out, &back); err != nil {
			t.Fatalf("resolved document does not parse: %v\n%q\n%s", err, data, out)
		}
		var hasAlias func(*yaml.Node) bool
		hasAlias = func(n *yaml.Node) bool {
			if n.Kind == yaml.AliasNode || n.Anchor != "" {
				return true
			}
			for _, c := range n.Content {
				if hasAlias(c) {
					return true
				}
			}
			return false
		}
		if hasAlias(&back) {
			t.Fatalf("resolved document has an alias:\n%s", out)
		}
		var got any
		if err := yaml.Unmarshal(out, &got); err != nil {
			t.Fatalf("resolved document does not decode: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("resolved document decodes differently\n%q\n%s\ngot  %#v\nwant %#v", data, out, got, want)
		}
	})
}
