package vm

import (
	"maps"
	"slices"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// The v1 and v2 stacked-links seeds say the same thing: their
// network-configs read to links that render to the same networkd files
// and plan to the same live links, so make test boots the v2 seed alone
// (make e2e boots v1's too).
func TestStackedSeedsAgree(t *testing.T) {
	live := []apply.Link{
		{Index: 2, Name: "ens4", MAC: nicBond0.MAC, MTU: 1500, Driver: "virtio_net"},
		{Index: 3, Name: "ens5", MAC: nicBond1.MAC, MTU: 1500, Driver: "virtio_net"},
	}
	plans := map[int]string{}
	render := func(v int) map[string][]byte {
		c, err := netcfg.Parse([]byte(stackedSeed(v).NetworkConfig))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		p := apply.Diff(c, live, apply.Drivers("virtio_net"), nil)
		plans[v] = p.String()
		sf, err := netcfg.Networkd.Render(netcfg.Detection{Stack: netcfg.Networkd}, p.Pinned(c), p.Owns)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		return sf.Files
	}
	v1, v2 := render(1), render(2)
	if plans[1] != plans[2] || len(plans[1]) == 0 {
		t.Errorf("live plans differ:\nv1:\n%s\nv2:\n%s", plans[1], plans[2])
	}
	if !slices.Equal(slices.Sorted(maps.Keys(v1)), slices.Sorted(maps.Keys(v2))) {
		t.Fatalf("files: v1 %q, v2 %q", slices.Sorted(maps.Keys(v1)), slices.Sorted(maps.Keys(v2)))
	}
	for n := range v1 {
		if string(v1[n]) != string(v2[n]) {
			t.Errorf("%s:\nv1:\n%s\nv2:\n%s", n, v1[n], v2[n])
		}
	}
}
