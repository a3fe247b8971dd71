package apply

import (
	"slices"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// A v2 macaddress on a bond was ignored, so the bond took a member's MAC
// and the DHCP lease the user pinned changed: the bond is made with it.
// What the live apply leaves to the stack's files (routing rules, an
// ethernet's new MAC) is said in the plan, with the link and the key.
func TestDiffV2MACAndUnappliedNoted(t *testing.T) {
	cfg, err := netcfg.Parse([]byte("version: 2\nethernets:\n" +
		"  eth0: {match: {macaddress: '" + mac1 + "'}, macaddress: '02:00:00:00:00:aa', addresses: [192.0.2.5/24]," +
		" routes: [{to: default, via: 192.0.2.1, table: 100}], routing-policy: [{from: 192.0.2.0/24, table: 100}]}\n" +
		"  eth1: {match: {macaddress: '" + mac2 + "'}}\n" +
		"bonds: {bond0: {interfaces: [eth1], macaddress: '02:00:00:00:00:b0', addresses: [198.51.100.5/24]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := Diff(cfg, stackNICs(), virtio, nil)
	var spec *LinkSpec
	for _, op := range p.Ops {
		if op.Kind == CreateLink && op.Spec.Name == "bond0" {
			spec = op.Spec
		}
	}
	if spec == nil || spec.MAC != "02:00:00:00:00:b0" {
		t.Errorf("bond0 spec %+v, want MAC 02:00:00:00:00:b0; ops %v", spec, p.Ops)
	}
	want := "eth0: not applied live, left to the stack's files: macaddress, routing-policy"
	if !slices.Contains(p.Notes, want) {
		t.Errorf("notes %q, want %q", p.Notes, want)
	}
}
