package vm

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// snapshot is the report as one of its earlier snapshots saw the
// network: the files under dir/ (sk.settle's early/) in place of the
// report's own.
func (r *sdReport) snapshot(t *testing.T, dir string) *sdReport {
	t.Helper()
	v := &sdReport{name: r.name + " (" + dir + ")", files: maps.Clone(r.files), console: r.console, wall: r.wall}
	n := 0
	for name, b := range r.files {
		if rest, ok := strings.CutPrefix(name, dir+"/"); ok {
			v.files[rest] = b
			n++
		}
	}
	if n == 0 {
		t.Fatalf("%s: the report has no %s snapshot", r.name, dir)
	}
	return v
}

// settled checks that the report's own snapshot was taken at least 30 s
// after the image's manager became active (sk.settle's "settle" file).
func settled(t *testing.T, r *sdReport, manager string) {
	t.Helper()
	f := strings.Fields(r.get(t, "settle"))
	if len(f) != 3 || f[0] != manager {
		t.Fatalf("%s: settle is %q, want %q ACTIVE NOW", r.name, r.get(t, "settle"), manager)
	}
	active, err1 := strconv.ParseInt(f[1], 10, 64)
	now, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || active == 0 {
		t.Fatalf("%s: %s.service never became active (settle %q)", r.name, manager, r.get(t, "settle"))
	}
	if d := time.Duration(now-active) * time.Microsecond; d < 30*time.Second {
		t.Errorf("%s: the late snapshot came %v after %s.service was active, not 30 s", r.name, d, manager)
	} else {
		t.Logf("%s: late snapshot %v after %s.service was active", r.name, d.Round(time.Second), manager)
	}
}

// nmUnmanagedProblems says where NetworkManager does not leave the named
// devices alone: a device it shows in another state than unmanaged, a
// connection it made or loaded on one of them, or a "Wired connection" of
// its own making.
func nmUnmanagedProblems(t *testing.T, r *sdReport, devs []string) []string {
	t.Helper()
	states := map[string]string{}
	for _, l := range strings.Split(r.get(t, "nm-device-states"), "\n") {
		if dev, st, ok := strings.Cut(l, ":"); ok {
			states[dev] = st
		}
	}
	var out []string
	for _, d := range devs {
		if states[d] != "unmanaged" {
			out = append(out, fmt.Sprintf("NetworkManager shows %s as %q, want unmanaged", d, states[d]))
		}
	}
	for _, l := range strings.Split(r.get(t, "nm-connections"), "\n") {
		f := strings.Split(l, ":")
		if len(f) < 3 {
			continue
		}
		if strings.HasPrefix(f[0], "Wired connection") || slices.Contains(devs, f[2]) {
			out = append(out, fmt.Sprintf("NetworkManager has a connection %q on %q", f[0], f[2]))
		}
	}
	return out
}

// TestIntegrationSystemdStackedStacks joins TestIntegrationSystemdStacks
// (the other stacks) and TestIntegrationSystemdStackedLinks (stacked links):
// the v2 stacked seed (a bond of two virtio NICs, a VLAN on it, a bridge
// with the address and default route on the VLAN) on the NetworkManager
// and ifupdown images. seedkeeper makes the links live before the
// image's manager starts and renders nothing for them but NetworkManager's
// unmanaged-devices; the links, address and route must hold right after
// the boot and again 30 s after the manager was active, NetworkManager
// must leave them unmanaged without "Wired connection" profiles, and
// ifupdown must not bring them up. nm-noconf hides seedkeeper's drop-in
// from NetworkManager to show the NetworkManager check can fail. Full
// matrix only (make e2e).
func TestIntegrationSystemdStackedStacks(t *testing.T) {
	testenv.Integration(t)
	if !fullMatrix() {
		t.Skip("the full matrix runs in make e2e (SEEDKEEPER_VM_MATRIX=full)")
	}
	t.Parallel()
	devs := func(nics []string) []string { return append(slices.Clone(nics), "bond0", vlanName, "br0") }
	for _, tc := range []struct{ name, stack, unit string }{
		{"nm", "networkmanager", "NetworkManager"},
		{"ifupdown", "ifupdown", "networking"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img := needSystemdImage(t, relBookworm, tc.stack, true)
			d := newSDDisk(t, img)
			r := d.boot(t, sdBoot{Name: tc.name, UUID: uuidVM, Seed: stackedSeed(2),
				NICs: []sdNIC{nicBond0, nicBond1}, Append: []string{"sk.plan=1", "sk.settle=" + tc.unit}})
			early := r.snapshot(t, "early")
			checkStackedState(t, early)
			nics := checkStackedLinks(t, r, tc.unit)
			settled(t, r, tc.unit)
			if u := r.unit(t, tc.unit); u["ActiveState"] != "active" {
				t.Errorf("the image's manager %s.service is not active: %v", tc.unit, u)
			}
			devs := devs(nics)
			switch tc.stack {
			case "networkmanager":
				for _, snap := range []*sdReport{early, r} {
					for _, p := range nmUnmanagedProblems(t, snap, devs) {
						t.Errorf("%s: %s", snap.name, p)
					}
				}
				if nf := r.get(t, "netfiles"); !strings.Contains(nf, "unmanaged-devices+=") {
					t.Errorf("seedkeeper's NetworkManager drop-in has no unmanaged-devices:\n%s", nf)
				}
			case "ifupdown":
				// ifup brought none of them up: ifstate names only lo.
				for _, l := range strings.Split(r.get(t, "ifstate"), "\n") {
					if name, _, _ := strings.Cut(l, "="); slices.Contains(devs, name) {
						t.Errorf("ifupdown brought %s up: ifstate %q", name, r.get(t, "ifstate"))
					}
				}
			}
			// What the manager did to the links, for the log.
			t.Logf("the manager's journal lines:\n%s", managerLines(r.get(t, "journal"), tc.unit, devs))
		})
	}

	// The NetworkManager check can fail: with seedkeeper's conf drop-in
	// hidden from NetworkManager (an empty tmpfs over its
	// /run/NetworkManager/conf.d), nothing says the links are unmanaged,
	// and NetworkManager takes all five over as "connected (externally)"
	// and makes "Wired connection 1" and "2" for the NICs.
	t.Run("nm-noconf", func(t *testing.T) {
		t.Parallel()
		img := needSystemdImage(t, relBookworm, "networkmanager", true)
		d := newSDDisk(t, img)
		r := d.boot(t, sdBoot{Name: "nm-noconf", UUID: uuidVM, Seed: stackedSeed(2),
			NICs: []sdNIC{nicBond0, nicBond1}, Append: []string{"sk.settle=NetworkManager",
				"sk.dropin=NetworkManager.service:TemporaryFileSystem=/run/NetworkManager/conf.d"}})
		if j := r.get(t, "journal"); strings.Contains(j, "run: 50-seedkeeper.conf") {
			t.Errorf("NetworkManager read seedkeeper's drop-in through the tmpfs")
		}
		devs := devs(checkStackedState(t, r))
		p := nmUnmanagedProblems(t, r, devs)
		if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "Wired connection") }) ||
			!slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "want unmanaged") }) {
			t.Errorf("without seedkeeper's drop-in NetworkManager still left the links unmanaged, without Wired connections: the check cannot fail\n%s\n%s",
				r.get(t, "nm-device-states"), r.get(t, "nm-connections"))
		}
		t.Logf("without the drop-in: %s", strings.Join(p, "; "))
	})
}

// managerLines picks the journal lines of the manager (by its process
// name) or naming one of devs, for the log.
func managerLines(journal, unit string, devs []string) string {
	tags := map[string][]string{
		"NetworkManager": {"NetworkManager["},
		"networking":     {"ifup[", "ifup:", "networking", "dhclient"},
	}[unit]
	var out []string
	for _, l := range strings.Split(journal, "\n") {
		hit := false
		for _, tag := range tags {
			hit = hit || strings.Contains(l, tag)
		}
		for _, d := range devs {
			hit = hit || strings.Contains(l, " "+d+":") || strings.Contains(l, "'"+d+"'") || strings.Contains(l, "("+d+")")
		}
		if hit {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
