package netcfg

import (
	"fmt"
	"strings"
	"testing"
)

func BenchmarkParseProxmox(b *testing.B) {
	data := readFixture(b, "valid/proxmox-static-dual.yaml")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// v2With64NICs is a v2 document with 64 ethernets, each matched by MAC,
// renamed, with a static address pair, a gateway and DNS.
func v2With64NICs() []byte {
	var s strings.Builder
	s.WriteString("version: 2\nethernets:\n")
	for i := range 64 {
		fmt.Fprintf(&s, `  nic%d:
    match: {macaddress: "02:00:00:00:%02x:%02x"}
    set-name: eth%d
    mtu: 9000
    addresses: [10.%d.0.5/24, "fd00:%x::5/64"]
    routes: [{to: default, via: 10.%d.0.1, metric: %d}]
    nameservers: {addresses: [10.%d.0.2], search: [example.lan]}
`, i, i/256, i%256, i, i, i, i, 100+i, i)
	}
	return []byte(s.String())
}

func BenchmarkParseV2With64NICs(b *testing.B) {
	data := v2With64NICs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		c, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Interfaces) != 64 {
			b.Fatalf("got %d interfaces", len(c.Interfaces))
		}
	}
}

func BenchmarkRenderNetworkd64NICs(b *testing.B) {
	c, err := Parse(v2With64NICs())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := renderNetworkd(c, nil); err != nil {
			b.Fatal(err)
		}
	}
}
