package yamlx

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestLocate(t *testing.T) {
	doc := `version: 2
ethernets:
  eth0:
    routes:
      - to: 10.0.0.0/8
      - to: default
        via: &gw 10.0.0.1
vlans:
  eth0.100:
    id: 100
    link: eth0
  eth0:
    id: 5
other: *gw
`
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path       string
		line, col  int
		wholeFound bool
	}{
		{"ethernets.eth0.routes[1].via", 7, 14, true},
		{"ethernets.eth0.routes[0]", 5, 9, true},
		{"vlans.eth0.100.link", 11, 11, true},
		{"vlans.eth0.id", 13, 9, true},
		{"other", 7, 14, true},                        // an alias is followed to its anchor
		{"ethernets.eth0.routes[7].via", 5, 7, false}, // the deepest node reached
		{"nothing", 1, 1, false},
	} {
		n, ok := Locate(&root, c.path)
		if n.Line != c.line || n.Column != c.col || ok != c.wholeFound {
			t.Errorf("Locate(%q) = %d:%d %v, want %d:%d %v", c.path, n.Line, n.Column, ok, c.line, c.col, c.wholeFound)
		}
	}
	if k := KeyNode(root.Content[0], "vlans"); k == nil || k.Line != 8 || k.Column != 1 {
		t.Errorf("KeyNode(vlans) = %v, want 8:1", k)
	}
}
