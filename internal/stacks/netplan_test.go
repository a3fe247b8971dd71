package stacks

import (
	"strings"
	"testing"
)

// FuzzParseNetplan: a netplan YAML file of the image (a person's) never
// makes the reader fail other than with an error naming the file, and
// every entry it returns has its file, an ID and a renderer.
func FuzzParseNetplan(f *testing.F) {
	for _, s := range []string{
		"network:\n  version: 2\n  ethernets:\n    all-en:\n      match: {name: \"en*\"}\n      dhcp4: true\n",
		"network: {version: 2, renderer: NetworkManager, ethernets: {renderer: networkd, e: {match: {driver: [a, b]}}}}",
		"network: {ethernets: {e: {match: null}, f: [1], g: {match: {name: 5, macaddress: [x]}}}}",
		"network: [1, 2]",
		"network: {ethernets: {a: &x {match: {name: '*'}}, b: *x}}",
		"- a\n- b\n",
		"network:\n  ethernets:\n    all: {match: {name: '[en'}}\n",
		"network:\n  ethernets:\n    1: {match: {true: x, name: 'en*'}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ents, err := ParseNetplan("/etc/netplan/f.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "/etc/netplan/f.yaml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, e := range ents {
			if e.File != "/etc/netplan/f.yaml" || e.ID == "" && !e.Match || (e.Renderer != "networkd" && e.Renderer != "NetworkManager") {
				t.Fatalf("entry %+v", e)
			}
			e.Matches("52:54:00:00:00:01", "eth0", e.Name)
			_ = e.Describe()
		}
	})
}
