package yamlx

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Limits of one YAML document read from outside the VM (meta-data,
// network-config, guestinfo metadata, the configuration file). The YAML
// library spends about 250 bytes per value it decodes, so a few MiB of
// "[a,a,a,...]" cost it 500 MiB before any alias is expanded: the bounds
// are checked on the text, before the library sees it.
const (
	// MaxDocument bounds the text. The decoded documents are bounded
	// at 1 MiB (MaxMetaDataExpanded, MaxExpandedSize); comments and
	// indentation get the other half.
	MaxDocument = 2 << 20
	// MaxNodes bounds the values of a document, counted by Scan (which
	// counts at least as many as the decoder makes): about 16 MiB of the
	// decoder's allocations.
	MaxNodes = 1 << 16
	// MaxDepth bounds the nesting of collections.
	MaxDepth = 100
)

// ErrTooComplex is wrapped by Check for a document beyond a limit.
var ErrTooComplex = errors.New("a YAML or JSON document beyond the limits")

// Check refuses, before any decoding, a document larger than MaxDocument,
// with more than MaxNodes values or nested deeper than MaxDepth. The
// error says which limit and where, never what the text says. Scanning
// is linear in the text and allocates in proportion to its nesting only.
func Check(data []byte) error {
	if len(data) > MaxDocument {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrTooComplex, len(data), MaxDocument)
	}
	s := Scan(data)
	if s.Nodes > MaxNodes {
		return fmt.Errorf("%w: more than %d values (by line %d)", ErrTooComplex, MaxNodes, s.NodesLine)
	}
	if s.Depth > MaxDepth {
		return fmt.Errorf("%w: nested more than %d levels deep (at line %d)", ErrTooComplex, MaxDepth, s.DepthLine)
	}
	return nil
}

// Unmarshal is yaml.Unmarshal bounded: the one way a document from
// outside is decoded. Check bounds the text before it is parsed, and
// CheckExpanded the parsed tree before anything is decoded from it, so
// that aliases never cost more than the limits allow. Into a *yaml.Node
// it stores the tree, measured; a caller that walks it or decodes a part
// of it needs no other bound. An empty document leaves out as it was.
func Unmarshal(data []byte, out any) error {
	doc, err := Parse(data)
	if err != nil {
		return err
	}
	if n, ok := out.(*yaml.Node); ok {
		*n = *doc
		return nil
	}
	if doc.Kind == 0 {
		return nil
	}
	return doc.Decode(out)
}

// Parse is Unmarshal into a node tree: Check, the parse, CheckExpanded.
// A caller whose decoder must be set up its own way (KnownFields) checks
// the text with Parse first.
func Parse(data []byte) (*yaml.Node, error) {
	if err := Check(data); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if err := CheckExpanded(&doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// Stats is what Scan found.
type Stats struct {
	Nodes, Depth         int
	NodesLine, DepthLine int // where Nodes passed MaxNodes and Depth MaxDepth
}

// Scan counts the values and the nesting of a YAML text without parsing
// it. The counts are upper bounds of what the decoder builds (its node
// tree: documents, collections, scalars, aliases), never less: where the
// text is ambiguous to a scanner this simple (a quote that may be text,
// a plain scalar going on over lines) it counts every indicator it sees.
// It skips only what the decoder cannot turn into values either:
// comments and the body of a block scalar.
func Scan(data []byte) Stats {
	var sc scanner
	sc.Nodes = 1 // the document
	for lineNo := 1; len(data) > 0; lineNo++ {
		var line []byte
		if i := indexNL(data); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		sc.line = lineNo
		sc.scanLine(line)
	}
	return sc.Stats
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

type entry struct {
	col  int
	dash bool // a block sequence; else a block mapping
}

type scanner struct {
	Stats
	line  int
	quote byte // the open quote of a scalar that goes on over lines
	flow  int  // depth of flow collections
	// block: inside the body of a block scalar, which goes on while
	// lines are blank or indented more than parent.
	block  bool
	parent int
	stack  []entry
}

func (sc *scanner) count(n int) {
	sc.Nodes += n
	if sc.Nodes > MaxNodes && sc.NodesLine == 0 {
		sc.NodesLine = sc.line
	}
}

func (sc *scanner) deeper() {
	if d := len(sc.stack) + sc.flow + 1; d > sc.Depth {
		sc.Depth = d
		if d > MaxDepth && sc.DepthLine == 0 {
			sc.DepthLine = sc.line
		}
	}
}

// pushKey notes a block mapping key at col: a new mapping unless the one
// at col is already open (a key at a compact sequence's column ends it).
func (sc *scanner) pushKey(col int) {
	if n := len(sc.stack); n > 0 && sc.stack[n-1].col == col && sc.stack[n-1].dash {
		sc.stack = sc.stack[:n-1]
	}
	if n := len(sc.stack); n > 0 && sc.stack[n-1].col >= col && !sc.stack[n-1].dash {
		return
	}
	sc.stack = append(sc.stack, entry{col: col})
	sc.count(1)
	sc.deeper()
}

// pushDash notes a block sequence entry at col.
func (sc *scanner) pushDash(col int) {
	if n := len(sc.stack); n > 0 && sc.stack[n-1].col >= col && sc.stack[n-1].dash {
		return
	}
	sc.stack = append(sc.stack, entry{col: col, dash: true})
	sc.count(1)
	sc.deeper()
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// scanLine counts the nodes of one line and follows the collections it
// opens and closes: the start of the line (lineStart), then each of its
// characters, inside a quote (inQuote) or not (token).
func (sc *scanner) scanLine(line []byte) {
	i, ok := sc.lineStart(line)
	if !ok {
		return
	}
	cur := cursor{expect: true, tok: i}
	for ; i < len(line); i++ {
		next := byte(' ')
		if i+1 < len(line) {
			next = line[i+1]
		}
		if sc.quote != 0 {
			i += sc.inQuote(&cur, line[i], next)
			continue
		}
		quoted := cur.afterQuote
		cur.afterQuote = false
		var stop bool
		if i, stop = sc.token(&cur, line, i, next, quoted); stop {
			return
		}
	}
}

// cursor is where the scan of a line is: whether a value may start at
// the next character, where the last scalar started, and whether the
// character before closed a quote.
type cursor struct {
	expect     bool
	tok        int
	afterQuote bool
}

// lineStart reads the start of a line: its indentation, the end of a
// block scalar, a document marker or a directive, and the block
// collections the indentation closes. It returns where the line's
// tokens start, and false when it has none (a blank line, a directive,
// a line of a block scalar).
func (sc *scanner) lineStart(line []byte) (int, bool) {
	indent := 0
	for indent < len(line) && line[indent] == ' ' {
		indent++
	}
	blank := true
	for _, c := range line[indent:] {
		if !isBlank(c) {
			blank = false
			break
		}
	}
	marker := len(line) >= 3 && (string(line[:3]) == "---" || string(line[:3]) == "...") && (len(line) == 3 || isBlank(line[3]))
	if sc.block {
		if blank || indent > sc.parent && !marker {
			return 0, false
		}
		sc.block = false
	}
	switch {
	case blank:
		return 0, false
	case sc.quote != 0 || sc.flow != 0:
		return indent, true
	case marker:
		sc.stack = sc.stack[:0]
		sc.count(1) // a new document
		return 3, true
	case indent == 0 && line[0] == '%':
		return 0, false // a directive
	}
	for n := len(sc.stack); n > 0 && sc.stack[n-1].col > indent; n-- {
		sc.stack = sc.stack[:n-1]
	}
	return indent, true
}

// inQuote reads c inside a quote, or what may be one: every indicator
// counts, so that text taken for a quote is never less. It returns how
// many characters after c it took too (an escape).
func (sc *scanner) inQuote(cur *cursor, c, next byte) int {
	switch {
	case sc.quote == '"' && c == '\\':
		return 1
	case c == sc.quote && c == '\'' && next == '\'':
		return 1
	case c == sc.quote:
		sc.quote, cur.expect, cur.afterQuote = 0, false, true
	case c == '[' || c == '{' || c == ',' || c == ':' || c == '-' || c == '?' || c == '*':
		sc.count(1)
	}
	return 0
}

// token reads the character at i outside a quote; quoted says a quote
// ended just before it. It returns the index of the last character it
// took, and true when the rest of the line is not scanned (a comment, a
// block scalar's header).
func (sc *scanner) token(cur *cursor, line []byte, i int, next byte, quoted bool) (int, bool) {
	c := line[i]
	switch {
	case isBlank(c):
	case c == '#' && (i == 0 || isBlank(line[i-1])):
		return i, true // a comment
	case sc.flowToken(cur, c):
	case (c == '"' || c == '\'') && cur.expect:
		sc.quote, cur.tok = c, i
		sc.count(1)
	case (c == '-' || c == '?') && cur.expect && isBlank(next):
		sc.entry(c, i)
		cur.tok = i + 2
	case c == ':' && (isBlank(next) || sc.flow > 0 || quoted):
		sc.count(1)
		if sc.flow == 0 {
			sc.pushKey(cur.tok)
		}
		cur.expect = true
	case (c == '|' || c == '>') && cur.expect && sc.flow == 0:
		sc.count(1)
		sc.block, sc.parent = true, -1
		if n := len(sc.stack); n > 0 {
			sc.parent = sc.stack[n-1].col
		}
		return i, true // the rest is the header and a comment
	case (c == '*' || c == '&' || c == '!') && cur.expect:
		// An alias is the value; an anchor or a tag: the value
		// follows, or an empty one is made for it.
		sc.count(1)
		cur.expect = c != '*'
		for i+1 < len(line) && !endsName(line[i+1]) {
			i++
		}
	case cur.expect:
		sc.count(1)
		cur.tok = i
		cur.expect = false
	}
	return i, false
}

// flowToken reads a flow collection's indicator, and reports whether c
// was one.
func (sc *scanner) flowToken(cur *cursor, c byte) bool {
	switch {
	case (c == '[' || c == '{') && (cur.expect || sc.flow > 0):
		sc.flow++
		sc.count(1)
		sc.deeper()
		cur.expect = true
	case (c == ']' || c == '}') && sc.flow > 0:
		sc.flow--
		sc.count(1) // an implicit null before it
		cur.expect = false
	case c == ',' && sc.flow > 0:
		sc.count(1) // an implicit null before it
		cur.expect = true
	default:
		return false
	}
	return true
}

// entry notes a block sequence entry ("- ") or an explicit key ("? ")
// at i.
func (sc *scanner) entry(c byte, i int) {
	sc.count(1)
	if c == '?' {
		sc.count(1) // a key and its value, either may be empty
	}
	if sc.flow > 0 {
		return
	}
	if c == '-' {
		sc.pushDash(i)
	} else {
		sc.pushKey(i)
	}
}

// endsName reports whether c ends the name of an anchor, an alias or a
// tag for the scan. The decoder ends them earlier or at the same place
// (its anchors are letters, digits, "-" and "_"); stopping at ":" and the
// flow indicators too may count a value twice, never miss one.
func endsName(c byte) bool {
	return isBlank(c) || c == ':' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}'
}
