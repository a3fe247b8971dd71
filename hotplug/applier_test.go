package hotplug

import (
	"net/netip"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

func TestOnlyKeepsTheGivenNICs(t *testing.T) {
	route := netcfg.Route{To: netip.MustParsePrefix("0.0.0.0/0"), Via: netip.MustParseAddr("192.0.2.1")}
	cfg := &netcfg.Config{
		Interfaces: []netcfg.Interface{
			{ID: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01"},
			{ID: "eth1", Kind: netcfg.Physical, MAC: "52:54:00:00:00:02"},
			{ID: "eth2", Kind: netcfg.Physical, MatchName: "eth2"},
			{ID: "bond0", Kind: netcfg.Bond, Links: []string{"eth0"}},
		},
		Routes: []netcfg.Route{route},
		DNS:    netcfg.DNS{Search: []string{"example.org"}},
	}
	got := Only(cfg, []string{"52:54:00:00:00:02"})
	if len(got.Interfaces) != 1 || got.Interfaces[0].ID != "eth1" {
		t.Errorf("interfaces %+v, want eth1 only", got.Interfaces)
	}
	if len(got.Routes) != 1 || got.DNS.Search[0] != "example.org" {
		t.Errorf("global routes or DNS lost: %+v", got)
	}
	if len(cfg.Interfaces) != 4 {
		t.Error("Only changed its input")
	}
	if got := Only(cfg, []string{"52:54:00:00:00:03"}); len(got.Interfaces) != 0 {
		t.Errorf("unknown MAC kept %+v", got.Interfaces)
	}
	if Only(nil, nil) != nil {
		t.Error("Only(nil) is not nil")
	}
}
