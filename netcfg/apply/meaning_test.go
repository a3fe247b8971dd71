package apply

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// A v2 macaddress on a bond was ignored, so the bond took a member's MAC
// and the DHCP lease the user pinned changed: the bond is made with it.
// What the live apply leaves to the stack's files (an ethernet's new MAC)
// is said in the plan, with the link and the key.
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
	want := "eth0: not applied live, left to the stack's files: macaddress"
	if !slices.Contains(p.Notes, want) {
		t.Errorf("notes %q, want %q", p.Notes, want)
	}
}

// routing-policy was ignored while the routes with table: were kept, so
// source routing silently did nothing. The rules are planned with their
// link: added when the kernel lacks them, left when it has them (a rule
// made without a priority gets one from the kernel), and removed once no
// longer configured only when seedkeeper added them.
func TestDiffRules(t *testing.T) {
	cfg, err := netcfg.Parse([]byte("version: 2\nethernets:\n" +
		"  eth0: {match: {macaddress: '" + mac1 + "'}, addresses: [192.0.2.5/24], routes: [{to: default, via: 192.0.2.1, table: 100}]," +
		" routing-policy: [{from: 192.0.2.0/24, table: 100}, {to: 198.51.100.0/24, priority: 7}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	live := stackNICs()
	p := Diff(cfg, live, virtio, nil)
	wantOps(t, p,
		"ens3 (bc:24:11:aa:bb:01): add address 192.0.2.5/24",
		"ens3 (bc:24:11:aa:bb:01): add route default via 192.0.2.1 table 100",
		"ens3 (bc:24:11:aa:bb:01): add rule from 192.0.2.0/24 table 100",
		"ens3 (bc:24:11:aa:bb:01): add rule priority 7 to 198.51.100.0/24 table 254")
	res := &Result{Receipt: p.receipt.clone()}
	for _, op := range p.Ops {
		res.Receipt.record(op, nil)
	}
	// Applied: the kernel has the rules, one with a priority of its own.
	live[0].Addresses = []netip.Prefix{pfx("192.0.2.5/24")}
	live[0].Routes = []netcfg.Route{{To: pfx("0.0.0.0/0"), Via: netip.MustParseAddr("192.0.2.1"), Table: 100}}
	live[0].Rules = []netcfg.Rule{
		{From: pfx("192.0.2.0/24"), Table: 100, Priority: 32765},
		{To: pfx("198.51.100.0/24"), Table: 254, Priority: 7},
		{From: pfx("10.9.0.0/16"), Table: 9, Priority: 100}, // someone else's
	}
	p = Diff(cfg, live, virtio, res.Receipt)
	wantOps(t, p)
	// No longer configured: ours goes, the other stays.
	cfg.Interfaces[0].RoutingPolicy = cfg.Interfaces[0].RoutingPolicy[1:]
	p = Diff(cfg, live, virtio, res.Receipt)
	wantOps(t, p, "ens3 (bc:24:11:aa:bb:01): remove rule from 192.0.2.0/24 table 100 (added by seedkeeper, no longer configured)")
	// The receipt keeps the rules across a save and a load.
	back, err := ParseReceipt(res.Receipt.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Links[mac1].Rules; len(got) != 2 {
		t.Errorf("receipt rules %+v\n%s", got, res.Receipt.Marshal())
	}
}
