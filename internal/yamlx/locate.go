package yamlx

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Locate finds the node a field path names in a YAML tree, for a message
// that says where a field is: path is the readers' form, keys joined by
// "." and list indexes in brackets ("ethernets.eth0.routes[1].via",
// "config[2].subnets[0]"). A key may itself hold a "." (a VLAN named
// eth0.100): at each mapping the longest key that the path goes on
// with is taken. Aliases are followed. Locate returns the deepest node
// the path reaches and whether it reached the end; n itself (a document
// node is looked into) when not even the first step matches.
func Locate(n *yaml.Node, path string) (*yaml.Node, bool) {
	if n == nil {
		return nil, false
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		path = strings.TrimPrefix(path, ".")
		if path == "" {
			return n, true
		}
		next, rest := step(n, path)
		if next == nil {
			return n, false
		}
		n, path = next, rest
	}
}

// step takes one step of path from n: a list index or a mapping key.
func step(n *yaml.Node, path string) (*yaml.Node, string) {
	if path[0] == '[' {
		end := strings.IndexByte(path, ']')
		if end < 0 || n.Kind != yaml.SequenceNode {
			return nil, ""
		}
		i, err := strconv.Atoi(path[1:end])
		if err != nil || i < 0 || i >= len(n.Content) {
			return nil, ""
		}
		return n.Content[i], path[end+1:]
	}
	if n.Kind != yaml.MappingNode {
		return nil, ""
	}
	var best *yaml.Node
	bestLen := -1
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || len(k.Value) <= bestLen || !strings.HasPrefix(path, k.Value) {
			continue
		}
		if r := path[len(k.Value):]; r == "" || r[0] == '.' || r[0] == '[' {
			best, bestLen = n.Content[i+1], len(k.Value)
		}
	}
	if best == nil {
		return nil, ""
	}
	return best, path[bestLen:]
}

// KeyNode returns the key node of key k in mapping m, or nil: where a
// message about the key itself points.
func KeyNode(m *yaml.Node, k string) *yaml.Node {
	for m != nil && m.Kind == yaml.AliasNode && m.Alias != nil {
		m = m.Alias
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == k {
			return m.Content[i]
		}
	}
	return nil
}
