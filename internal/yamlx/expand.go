package yamlx

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Limits of a document once its aliases are expanded: what decoding it,
// resolving it or encoding it again builds. They are the limits of its
// text (Check), so that no alias makes a document cost more than one
// without aliases at the limits does. Measure counts them on the parsed
// node tree, where an alias is one small node, before anything is built
// per use of an alias.
const (
	// MaxExpandedNodes bounds the values, every use of an alias counting
	// every value of what it stands for: each becomes a value of the
	// decoded document (a map entry, a list slot, an interface), about
	// 100 to 250 bytes of memory.
	MaxExpandedNodes = MaxNodes
	// MaxExpandedText bounds the bytes of text (scalars and keys), every
	// use of an alias counting the text of what it stands for again: an
	// encoder writes each copy.
	MaxExpandedText = MaxDocument
	// MaxExpandedDepth bounds the nesting: an alias inside a collection
	// nests what it stands for one level deeper, and an encoder indents
	// every line by its depth.
	MaxExpandedDepth = MaxDepth
)

// Extent is what a node stands for with every alias expanded. Counts
// saturate: a document that expands to more than an int holds measures
// as large, never as small.
type Extent struct {
	Nodes int // values: scalars, collections, documents
	Text  int // bytes of the scalars' text
	Depth int // nesting of collections (a scalar is 0)
}

// saturation is where counts stop growing; far above every limit, far
// below where adding two of them overflows.
const saturation = 1 << 40

func sat(n int) int { return min(n, saturation) }

// Measure returns the extent of n with every alias expanded, without
// expanding any: what an alias stands for is measured once and its
// extent reused for every other use, so the cost is linear in the size
// of the tree however much it expands to. An alias with no target or one
// that contains itself is an error.
func Measure(n *yaml.Node) (Extent, error) {
	m := measurer{memo: map[*yaml.Node]Extent{}, open: map[*yaml.Node]bool{}}
	return m.measure(n)
}

type measurer struct {
	memo map[*yaml.Node]Extent // the targets of aliases, measured
	open map[*yaml.Node]bool   // the targets being measured
}

func (m *measurer) measure(n *yaml.Node) (Extent, error) {
	if n == nil {
		return Extent{}, nil
	}
	if n.Kind == yaml.AliasNode {
		t := n.Alias
		if t == nil {
			return Extent{}, fmt.Errorf("line %d: an alias with no anchor", n.Line)
		}
		if e, ok := m.memo[t]; ok {
			return e, nil
		}
		if m.open[t] {
			return Extent{}, fmt.Errorf("%w: the alias at line %d stands for a value that contains it", ErrTooLarge, n.Line)
		}
		m.open[t] = true
		e, err := m.measure(t)
		delete(m.open, t)
		if err != nil {
			return Extent{}, err
		}
		m.memo[t] = e
		return e, nil
	}
	e := Extent{Nodes: 1, Text: len(n.Value)}
	child := 0
	for _, c := range n.Content {
		ce, err := m.measure(c)
		if err != nil {
			return Extent{}, err
		}
		e.Nodes = sat(e.Nodes + ce.Nodes)
		e.Text = sat(e.Text + ce.Text)
		child = max(child, ce.Depth)
	}
	switch n.Kind {
	case yaml.SequenceNode, yaml.MappingNode:
		e.Depth = sat(child + 1)
	default:
		e.Depth = child
	}
	return e, nil
}

// CheckExpanded refuses a node tree that expands beyond MaxExpandedNodes,
// MaxExpandedText or MaxExpandedDepth, or whose aliases do not resolve,
// before anything is decoded from it. The error wraps ErrTooLarge for a
// limit and says which, never what the text says.
func CheckExpanded(n *yaml.Node) error {
	e, err := Measure(n)
	if err != nil {
		return err
	}
	return e.check()
}

func (e Extent) check() error {
	switch {
	case e.Nodes > MaxExpandedNodes:
		return fmt.Errorf("%w: more than %d values once its aliases are expanded", ErrTooLarge, MaxExpandedNodes)
	case e.Text > MaxExpandedText:
		return fmt.Errorf("%w: more than %d bytes of text once its aliases are expanded", ErrTooLarge, MaxExpandedText)
	case e.Depth > MaxExpandedDepth:
		return fmt.Errorf("%w: nested more than %d levels deep once its aliases are expanded", ErrTooLarge, MaxExpandedDepth)
	}
	return nil
}

// Dropped is a top-level entry ParseFit left out.
type Dropped struct {
	Key *yaml.Node // the key, for the caller to name (never to quote)
	Err error      // why: a limit (wrapping ErrTooLarge), a broken alias
}

// ParseFit is Parse for a document whose top level is a mapping of
// independent fields (meta-data): when the document expands beyond the
// limits, the fields that make it so are left out, largest first, until
// the rest fits, so that one field of aliases degrades that field only.
// A document that is no mapping, or whose text is beyond Check's limits,
// is refused whole as Parse refuses it.
func ParseFit(data []byte) (*yaml.Node, []Dropped, error) {
	if err := Check(data); err != nil {
		return nil, nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	total, err := Measure(&doc)
	if err == nil && total.check() == nil {
		return &doc, nil, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		if err == nil {
			err = total.check()
		}
		return nil, nil, err
	}
	top := doc.Content[0]
	m := measurer{memo: map[*yaml.Node]Extent{}, open: map[*yaml.Node]bool{}}
	type field struct {
		e    Extent
		err  error
		drop bool
	}
	fields := make([]field, len(top.Content)/2)
	sum := Extent{Nodes: 2} // the document and the mapping
	for i := range fields {
		k, kerr := m.measure(top.Content[2*i])
		v, verr := m.measure(top.Content[2*i+1])
		f := &fields[i]
		f.e = Extent{Nodes: sat(k.Nodes + v.Nodes), Text: sat(k.Text + v.Text), Depth: max(k.Depth, v.Depth) + 1}
		f.err = cmpOr(kerr, verr)
		if f.err == nil {
			f.err = f.e.check()
		}
		if f.err != nil {
			f.drop = true
			continue
		}
		sum.Nodes, sum.Text = sat(sum.Nodes+f.e.Nodes), sat(sum.Text+f.e.Text)
	}
	// What is left over the limits in aggregate: drop the largest field
	// (by its share of the limit it weighs most on) until the rest fits.
	for sum.check() != nil {
		best, bestShare := -1, 0.0
		for i, f := range fields {
			if f.drop {
				continue
			}
			share := max(float64(f.e.Nodes)/MaxExpandedNodes, float64(f.e.Text)/MaxExpandedText)
			if best < 0 || share > bestShare {
				best, bestShare = i, share
			}
		}
		if best < 0 {
			break
		}
		f := &fields[best]
		f.drop = true
		f.err = fmt.Errorf("%w: the document is more than its limits once its aliases are expanded, and this field is the largest part of it", ErrTooLarge)
		sum.Nodes, sum.Text = sum.Nodes-f.e.Nodes, sum.Text-f.e.Text
	}
	kept := *top
	kept.Content = make([]*yaml.Node, 0, len(top.Content))
	var dropped []Dropped
	for i, f := range fields {
		if f.drop {
			dropped = append(dropped, Dropped{Key: top.Content[2*i], Err: f.err})
			continue
		}
		kept.Content = append(kept.Content, top.Content[2*i], top.Content[2*i+1])
	}
	doc.Content = []*yaml.Node{&kept}
	return &doc, dropped, nil
}

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Budget is an aggregate bound over several documents read together (all
// of cloud.cfg and cloud.cfg.d): what is left of one document's limits,
// MaxExpandedText bytes of text and MaxExpandedNodes values once aliases
// are expanded, for all of them. Each document is bounded on its own as
// well (Check, CheckExpanded).
type Budget struct{ Text, Nodes int }

// NewBudget is a whole budget.
func NewBudget() *Budget { return &Budget{Text: MaxExpandedText, Nodes: MaxExpandedNodes} }

// ReadLimit is how many bytes a reader may read for the next document:
// one more than is left, so that a document that does not fit is seen
// not to.
func (b *Budget) ReadLimit() int64 { return int64(b.Text) + 1 }

// Unmarshal is Unmarshal into a node tree within what is left of b, and
// takes the document's text and values from it (the values Scan counts
// on the text, or the expanded ones when more). A document that does not
// fit is refused (wrapping ErrTooLarge) before it is parsed when its text
// or its scanned values do not fit, and before it is decoded when its
// expanded values do not; it takes nothing from b.
func (b *Budget) Unmarshal(data []byte, out *yaml.Node) error {
	if len(data) > b.Text {
		return fmt.Errorf("%w: the documents read together are more than %d bytes", ErrTooLarge, MaxExpandedText)
	}
	scanned := Scan(data).Nodes
	if scanned > b.Nodes {
		return fmt.Errorf("%w: the documents read together are more than %d values", ErrTooLarge, MaxExpandedNodes)
	}
	var doc yaml.Node
	if err := Unmarshal(data, &doc); err != nil {
		return err
	}
	e, err := Measure(&doc)
	if err != nil {
		return err
	}
	if e.Nodes > b.Nodes {
		return fmt.Errorf("%w: the documents read together are more than %d values once their aliases are expanded", ErrTooLarge, MaxExpandedNodes)
	}
	b.Text -= len(data)
	b.Nodes -= max(e.Nodes, scanned)
	*out = doc
	return nil
}
