package netcfg

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// Problem is one part of a network configuration that Parse or
// FromSmartOS would leave out, or the error that would stop them, with
// where it is in the text.
type Problem struct {
	// Line and Column (from 1) are where the field's value starts; for
	// a problem of the whole document, where the document starts. A
	// text the YAML library cannot read is located at the start of the
	// line it names.
	Line, Column int
	// Path names the field as Config.Notes does ("" for the whole
	// document).
	Path string
	// Msg is the note or the error: what is wrong and what the parser
	// does about it, never the value.
	Msg string
}

// Check reads a version 1 or 2 network configuration as Parse does and
// returns, located in data, every part Parse would leave out (all of
// them, where Config.Notes keeps the first 64) and the error that would
// stop Parse. A configuration that Parse reads whole, or that disables
// the network, has none. Notes and errors are the parser's own: Check
// is Parse with nothing left out in silence.
func Check(data []byte) []Problem {
	root, doc, probs := decodeForCheck(data)
	if probs != nil {
		return probs
	}
	top := root
	if top.Kind == yaml.MappingNode && yamlx.KeyNode(top, "version") == nil {
		if inner, ok := yamlx.Locate(top, "network"); ok && inner != top {
			top = inner
		}
	}
	n := &notes{all: true}
	_, err := parseValue(doc, n)
	if errors.Is(err, ErrDisabled) {
		return nil
	}
	return located(top, n, err, "")
}

// CheckSmartOS is Check for SmartOS network metadata written as one
// document: a mapping of the keys FromSmartOS reads (sdc:nics, and
// sdc:routes, sdc:resolvers and sdc:dns_domain when present), or the
// list of sdc:nics alone.
func CheckSmartOS(data []byte) []Problem {
	root, _, probs := decodeForCheck(data)
	if probs != nil {
		return probs
	}
	value := func(key string) []byte {
		n, ok := yamlx.Locate(root, key)
		if !ok {
			return nil
		}
		var v any
		if n.Decode(&v) != nil {
			return nil
		}
		if s, ok := v.(string); ok {
			return []byte(s)
		}
		b, err := json.Marshal(v)
		if err != nil {
			// A mapping with a key that is not a string: no JSON
			// says it, and "[" fails as the parser's own error.
			return []byte("[")
		}
		return b
	}
	n := &notes{all: true}
	var err error
	prefix := ""
	switch root.Kind {
	case yaml.SequenceNode:
		prefix = "sdc:nics"
		_, err = fromSmartOS(value(""), nil, nil, "", n)
	case yaml.MappingNode:
		if yamlx.KeyNode(root, "sdc:nics") == nil {
			return []Problem{{Line: root.Line, Column: root.Column, Msg: "no sdc:nics: want a mapping of sdc:nics, sdc:routes, sdc:resolvers and sdc:dns_domain, or the list of sdc:nics"}}
		}
		_, err = fromSmartOS(value("sdc:nics"), value("sdc:routes"), value("sdc:resolvers"), string(value("sdc:dns_domain")), n)
	default:
		return []Problem{{Line: root.Line, Column: root.Column, Msg: "SmartOS network metadata must be a mapping or a list, not " + yamlx.NodeKind(root)}}
	}
	return located(root, n, err, prefix)
}

// decodeForCheck decodes data as Parse does, into a node tree (for the
// positions) and a value (for the parser), or says why it cannot.
func decodeForCheck(data []byte) (root *yaml.Node, doc any, probs []Problem) {
	whole := func(msg string) []Problem { return []Problem{{Line: 1, Column: 1, Msg: msg}} }
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, whole("empty network configuration")
	}
	if err := yamlx.Check(data); err != nil {
		return nil, nil, whole("network configuration: " + err.Error())
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, nil, []Problem{yamlProblem(err)}
	}
	if err := yamlx.CheckExpanded(&n); err != nil {
		return nil, nil, whole("network configuration: " + err.Error())
	}
	if len(n.Content) == 0 {
		return nil, nil, whole("empty network configuration")
	}
	if err := n.Decode(&doc); err != nil {
		return nil, nil, []Problem{yamlProblem(err)}
	}
	return n.Content[0], doc, nil
}

// yamlProblem is the problem of a text the YAML library cannot read.
func yamlProblem(err error) Problem {
	msg := "network configuration is not YAML or JSON"
	if strings.Contains(err.Error(), "already defined") {
		msg += ": a key is defined twice in one mapping"
	}
	return Problem{Line: max(yamlx.Line(err), 1), Column: 1, Msg: msg}
}

// located turns the parser's notes and error into problems placed in
// the tree top, where the parser's paths start after prefix.
func located(top *yaml.Node, n *notes, err error, prefix string) []Problem {
	var out []Problem
	place := func(path, msg string) {
		p := Problem{Path: path, Msg: msg}
		rel, ok := strings.CutPrefix(path, prefix)
		if !ok {
			rel = path
		}
		at, _ := yamlx.Locate(top, rel)
		p.Line, p.Column = at.Line, at.Column
		out = append(out, p)
	}
	for i, msg := range n.list {
		place(n.paths[i], msg)
	}
	if err != nil {
		var fe *FieldError
		path := ""
		if errors.As(err, &fe) {
			path = fe.Path
		}
		place(path, err.Error())
	}
	return out
}
