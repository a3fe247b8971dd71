package datasource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// noCloudMeta is one source's meta-data document: the decoded mapping and,
// for keys whose order matters (public-keys as a mapping), the YAML nodes.
type noCloudMeta struct {
	values map[string]any
	nodes  map[string]*yaml.Node
	// warnings name keys that were dropped.
	warnings []string
}

// parseNoCloudMeta reads a meta-data document: YAML, or JSON (which YAML
// mostly is; JSON that YAML rejects, such as tab-indented, is read as
// JSON). An empty document is an empty mapping; anything but a mapping is
// an error naming the file.
func parseNoCloudMeta(data []byte, name string) (noCloudMeta, error) {
	md := noCloudMeta{values: map[string]any{}, nodes: map[string]*yaml.Node{}}
	// Bounded before anything is decoded: a key whose aliases expand
	// beyond the limits is left out, the others kept.
	pdoc, over, err := yamlx.ParseFit(data)
	if err != nil {
		if errors.Is(err, yamlx.ErrTooComplex) || errors.Is(err, yamlx.ErrTooLarge) {
			return md, fmt.Errorf("%s: meta-data: %w", name, err)
		}
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) > 0 && trimmed[0] == '{' {
			var m map[string]any
			if jerr := json.Unmarshal(trimmed, &m); jerr == nil {
				md.values = m
				return md, nil
			}
		}
		return md, fmt.Errorf("%s: meta-data is not YAML or JSON: %w", name, yamlx.Describe(err))
	}
	doc := *pdoc
	for _, d := range over {
		md.warnings = append(md.warnings, fmt.Sprintf("%s: meta-data key %s dropped: %v", name, droppedKeyName(d.Key), d.Err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return md, nil // empty, or only comments
	}
	top := doc.Content[0]
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
		return md, nil
	}
	if top.Kind != yaml.MappingNode {
		return md, fmt.Errorf("%s: meta-data must be a mapping, not %s", name, yamlx.NodeKind(top))
	}
	// A key that is not a scalar ([a]: b) cannot be a meta-data key:
	// leave it out, and go on with the others.
	kept := *top
	kept.Content = nil
	dropped := 0
	for i := 0; i+1 < len(top.Content); i += 2 {
		k := top.Content[i]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			dropped++
			continue
		}
		kept.Content = append(kept.Content, top.Content[i], top.Content[i+1])
	}
	if dropped > 0 {
		md.warnings = append(md.warnings, fmt.Sprintf("%s: %d meta-data keys that are not strings dropped", name, dropped))
	}
	top = &kept
	if err := top.Decode(&md.values); err != nil {
		return md, fmt.Errorf("%s: meta-data: %w", name, yamlx.Describe(err))
	}
	md.warnings = append(md.warnings, boundMetaData(name+": meta-data", md.values)...)
	for k, v := range md.values {
		// Nested mappings with keys that are not strings (1: a) become
		// string-keyed, as JSON (fetch --json) needs them.
		md.values[k] = plainValue(v)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if _, kept := md.values[top.Content[i].Value]; kept {
			md.nodes[top.Content[i].Value] = top.Content[i+1]
		}
	}
	return md, nil
}

// noCloudString reads a scalar meta-data value as text: strings as they are,
// numbers and booleans as YAML wrote them (instance-id: 12345 is the ID
// "12345"). ok is false when the key is absent or null.
func noCloudString(md map[string]any, key string) (s string, ok bool, err error) {
	v, present := md[key]
	if !present || v == nil {
		return "", false, nil
	}
	switch t := v.(type) {
	case string:
		return t, true, nil
	case int, int64, uint64, float64, bool, json.Number:
		return fmt.Sprint(t), true, nil
	}
	return "", false, fmt.Errorf("meta-data %s: want a string, got %s", key, yamlx.Kind(v))
}

// noCloudPublicKeys reads meta-data public-keys the way cloud-init's
// normalize_pubkey_data does: a string holds one key per line; a list
// holds keys; a mapping holds, per name, a key or a list of keys, taken in
// document order. Blank entries are dropped, and so are entries that are
// not strings, with a warning each. where names each key returned.
func noCloudPublicKeys(v any, node *yaml.Node) (keys, where, warnings []string) {
	add := func(at string, v any) {
		s, ok := v.(string)
		if !ok {
			warnings = append(warnings, fmt.Sprintf("meta-data public-keys%s dropped: want a key string, got %s", at, yamlx.Kind(v)))
			return
		}
		if s = strings.TrimSpace(s); s != "" {
			keys = append(keys, s)
			where = append(where, "meta-data public-keys"+at)
		}
	}
	switch t := v.(type) {
	case nil:
	case string:
		for i, line := range strings.Split(t, "\n") {
			add(fmt.Sprintf(" line %d", i+1), line)
		}
	case []any:
		for i, e := range t {
			add(fmt.Sprintf("[%d]", i), e)
		}
	case map[string]any:
		for _, name := range noCloudKeyOrder(t, node) {
			switch kl := t[name].(type) {
			case []any:
				for i, e := range kl {
					add(fmt.Sprintf(".%s[%d]", name, i), e)
				}
			default:
				add("."+name, kl)
			}
		}
	default:
		warnings = append(warnings, fmt.Sprintf("meta-data public-keys dropped: want a string, a list or a mapping, got %s", yamlx.Kind(v)))
	}
	return keys, where, warnings
}

// noCloudKeyOrder returns m's keys in document order when node is the YAML
// mapping m came from, else sorted.
func noCloudKeyOrder(m map[string]any, node *yaml.Node) []string {
	var names []string
	if node != nil && node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			if _, ok := m[node.Content[i].Value]; ok && !slices.Contains(names, node.Content[i].Value) {
				names = append(names, node.Content[i].Value)
			}
		}
	}
	if len(names) == len(m) {
		return names
	}
	names = names[:0]
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// droppedKeyName names a key ParseFit left out: by name when it is a
// plain one, else described with its line.
func droppedKeyName(k *yaml.Node) string {
	if k.Kind == yaml.ScalarNode && plainNameRE.MatchString(k.Value) {
		return k.Value
	}
	if k.Kind == yaml.ScalarNode {
		return fmt.Sprintf("(a key of %d bytes, line %d)", len(k.Value), k.Line)
	}
	return "(" + yamlx.NodeKind(k) + ", line " + fmt.Sprint(k.Line) + ")"
}
