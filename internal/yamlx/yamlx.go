// Package yamlx bounds what YAML aliases can expand to. A document read
// from outside the VM is small, but an alias makes a decoded value share
// one string or subtree many times over: cheap to hold, and as large as
// all the copies together once encoded again. Size measures a decoded
// value the way an encoder would see it, and Resolve makes a node tree
// self-contained (no alias left), both within a budget, so that a
// document is re-encoded only when what comes out is bounded.
package yamlx

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ErrTooLarge is wrapped by Resolve when the resolved tree would exceed
// its budget.
var ErrTooLarge = errors.New("expands beyond the size limit (YAML aliases?)")

// nodeCost is what one value costs besides its text: a key, a list item,
// a number or a boolean all take some bytes once encoded.
const nodeCost = 4

// Size returns the size a decoded YAML or JSON value would take once
// encoded again, every alias expanded: the length of every string and map
// key plus a few bytes per value. It stops counting as soon as the total
// passes limit and then returns ok false, so measuring a value that
// expands to gigabytes costs no more than measuring limit bytes of it.
func Size(v any, limit int) (n int, ok bool) {
	s := sizer{limit: limit}
	s.walk(v, 0)
	return s.n, s.n <= limit
}

type sizer struct{ n, limit int }

// MaxEncodeValues bounds a value from outside that is encoded again as
// YAML: the encoder keeps every event of the document until it ends,
// about 2 KB a value, so 8192 values cost it about 16 MiB.
const MaxEncodeValues = 8192

// Count returns the number of values of a decoded value (every map key,
// element and scalar, and the collections), stopping just past limit: ok
// is false beyond it.
func Count(v any, limit int) (n int, ok bool) {
	c := counter{limit: limit}
	c.walk(v, 0)
	return c.n, c.n <= limit
}

type counter struct{ n, limit int }

func (c *counter) walk(v any, depth int) {
	c.n++
	if c.n > c.limit || depth > maxDepth {
		c.n = max(c.n, c.limit+1)
		return
	}
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			if c.walk(e, depth+1); c.n > c.limit {
				return
			}
		}
	case []string:
		c.n += len(t)
	case map[string]any:
		for _, e := range t {
			c.n++ // the key
			if c.walk(e, depth+1); c.n > c.limit {
				return
			}
		}
	case map[any]any:
		for k, e := range t {
			if c.walk(k, depth+1); c.n > c.limit {
				return
			}
			if c.walk(e, depth+1); c.n > c.limit {
				return
			}
		}
	}
}

// maxDepth bounds the recursion; the decoders refuse deeper documents
// long before this.
const maxDepth = 10000

func (s *sizer) walk(v any, depth int) {
	if s.n > s.limit {
		return
	}
	if depth > maxDepth {
		s.n = s.limit + 1
		return
	}
	s.n += nodeCost
	switch t := v.(type) {
	case string:
		s.n += len(t)
	case []byte:
		s.n += len(t)
	case []any:
		for _, e := range t {
			if s.walk(e, depth+1); s.n > s.limit {
				return
			}
		}
	case []string:
		for _, e := range t {
			s.n += nodeCost + len(e)
		}
	case map[string]any:
		for k, e := range t {
			s.n += len(k)
			if s.walk(e, depth+1); s.n > s.limit {
				return
			}
		}
	case map[any]any:
		for k, e := range t {
			if s.walk(k, depth+1); s.n > s.limit {
				return
			}
			if s.walk(e, depth+1); s.n > s.limit {
				return
			}
		}
	}
}

// Resolve returns a copy of n in which every alias is replaced by a copy
// of the node it stands for and no anchor is left, so the copy encodes to
// a document that stands on its own (an alias whose anchor lay outside n
// would otherwise be written dangling). The copy may hold at most limit
// bytes by the measure of Size; beyond that, or for an alias with no
// target, Resolve returns an error (wrapping ErrTooLarge for the former).
//
// The tree is measured first (Measure), and refused before anything is
// copied when it expands to more than MaxEncodeValues values, limit bytes
// of text or MaxExpandedDepth levels: a copy is made to be encoded, and
// an encoder costs about 2 KB a value.
func Resolve(n *yaml.Node, limit int) (*yaml.Node, error) {
	e, err := Measure(n)
	if err != nil {
		return nil, err
	}
	switch {
	case e.Nodes > MaxEncodeValues:
		return nil, fmt.Errorf("%w: more than %d values once its aliases are expanded", ErrTooLarge, MaxEncodeValues)
	case e.Text > limit:
		return nil, fmt.Errorf("%w: more than %d bytes once its aliases are expanded", ErrTooLarge, limit)
	case e.Depth > MaxExpandedDepth:
		return nil, fmt.Errorf("%w: nested more than %d levels deep once its aliases are expanded", ErrTooLarge, MaxExpandedDepth)
	}
	r := resolver{limit: limit}
	out, err := r.copy(n, 0)
	if err != nil {
		return nil, err
	}
	return out, nil
}

type resolver struct{ n, limit int }

func (r *resolver) copy(n *yaml.Node, depth int) (*yaml.Node, error) {
	if n == nil {
		return nil, nil
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxDepth)
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: alias with no anchor", n.Line)
		}
		// Each use of an alias is a full copy; the budget bounds the
		// copies, and so also an alias that contains itself.
		return r.copy(n.Alias, depth+1)
	}
	r.n += nodeCost + len(n.Value)
	if r.n > r.limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, r.limit)
	}
	c := *n
	c.Anchor = ""
	c.Alias = nil
	c.Content = nil
	if c.Kind == yaml.ScalarNode && c.Value == "" && c.ShortTag() == "!!null" {
		// An empty null written without its anchor would come out as
		// '' (an empty string); spell it out.
		c.Value = "null"
	}
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, 0, len(n.Content))
	}
	for _, e := range n.Content {
		ec, err := r.copy(e, depth+1)
		if err != nil {
			return nil, err
		}
		c.Content = append(c.Content, ec)
	}
	return &c, nil
}
