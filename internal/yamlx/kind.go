package yamlx

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Kind names the kind of a decoded YAML (or JSON) value for messages, in
// the one set of words every reader uses: "null", "a string", "a
// boolean", "a number", "a list", "a mapping". It describes, never
// quotes: the value may be a secret.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string, []byte:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64, json.Number:
		return "a number"
	case []any, []string:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	}
	return "a value of another kind"
}

// NodeKind is Kind for a node not yet decoded, with the size of a string
// ("a string of 1675 bytes": a meta-data file that is a private key is
// described, not shown). A custom tag is not named: it is text from the
// document too.
func NodeKind(n *yaml.Node) string {
	if n == nil {
		return "null"
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 1 {
			return NodeKind(n.Content[0])
		}
		return "an empty document"
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return fmt.Sprintf("a string of %d bytes", len(n.Value))
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		case "!!binary", "!!timestamp":
			return fmt.Sprintf("a %s of %d bytes", n.ShortTag()[2:], len(n.Value))
		}
		return fmt.Sprintf("a scalar with a custom tag, of %d bytes", len(n.Value))
	}
	return "a value of another kind"
}
