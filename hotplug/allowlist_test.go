package hotplug

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

func TestResolveAllowlistPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name       string
		md, cfg    Setting
		platform   string
		wantOrigin string
		allows     []string
		denies     []string
	}{
		{
			name:       "vmware default",
			platform:   "vmware",
			wantOrigin: "default for vmware",
			allows:     []string{"e1000", "e1000e", "vlance", "vmxnet2", "vmxnet3", "vrdma"},
			denies:     []string{"virtio_net", "veth", "bridge", ""},
		},
		{
			name:       "kvm default",
			platform:   "kvm",
			wantOrigin: "default for kvm",
			allows:     []string{"virtio_net", "e1000", "e1000e", "vmxnet3"},
			denies:     []string{"vmxnet2", "veth", "bridge", "tun"},
		},
		{name: "proxmox default", platform: "proxmox", wantOrigin: "default for proxmox", allows: []string{"virtio_net"}},
		{name: "bhyve default", platform: "bhyve", wantOrigin: "default for bhyve", allows: []string{"virtio_net"}},
		{name: "smartos default", platform: "smartos", wantOrigin: "default for smartos", allows: []string{"virtio_net"}},
		{
			name:       "config over default",
			cfg:        Setting{Set: true, Value: []any{"veth"}},
			platform:   "kvm",
			wantOrigin: "config hotplug.drivers",
			allows:     []string{"veth"},
			denies:     []string{"virtio_net"},
		},
		{
			name:       "metadata over config, vmware key",
			md:         Setting{Set: true, Value: "vmxnet3, e1000"},
			cfg:        Setting{Set: true, Value: []string{"veth"}},
			platform:   "vmware",
			wantOrigin: "metadata network-drivers",
			allows:     []string{"vmxnet3", "e1000"},
			denies:     []string{"veth", "vrdma"},
		},
		{
			name:       "metadata key elsewhere",
			md:         Setting{Set: true, Value: []string{"virtio_net", "virtio_net"}},
			platform:   "smartos",
			wantOrigin: "metadata seedkeeper:network-drivers",
			allows:     []string{"virtio_net"},
			denies:     []string{"e1000"},
		},
		{
			name:       "unset settings fall through",
			md:         Setting{Value: "bogus value ignored when not set"},
			cfg:        Setting{},
			platform:   "qemu",
			wantOrigin: "default for qemu",
			allows:     []string{"virtio_net"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ResolveAllowlist(tc.md, tc.cfg, tc.platform)
			if a.Reason() != "" {
				t.Fatalf("allowlist closed: %s", a.Reason())
			}
			if a.Origin() != tc.wantOrigin {
				t.Errorf("Origin() = %q, want %q", a.Origin(), tc.wantOrigin)
			}
			for _, d := range tc.allows {
				if !a.Allows(d) {
					t.Errorf("does not allow %q: %v", d, a)
				}
			}
			for _, d := range tc.denies {
				if a.Allows(d) {
					t.Errorf("allows %q: %v", d, a)
				}
			}
		})
	}
}

// A typo must close the gate, never open it: every broken value allows
// nothing, does not fall through to the next source, and says why and where.
func TestResolveAllowlistBrokenClosesGate(t *testing.T) {
	good := Setting{Set: true, Value: []string{"veth"}}
	for _, tc := range []struct {
		name       string
		md, cfg    Setting
		platform   string
		wantReason []string
	}{
		{"metadata unreadable", Setting{Err: errors.New("vmware-rpctool: permission denied")}, good, "vmware",
			[]string{"metadata network-drivers", "cannot be read", "permission denied"}},
		{"config unreadable", Setting{}, Setting{Err: errors.New("config.yaml line 3: mapping values are not allowed")}, "kvm",
			[]string{"config hotplug.drivers", "cannot be read", "line 3"}},
		{"empty name in string", Setting{Set: true, Value: "vmxnet3,,e1000"}, good, "vmware",
			[]string{"metadata network-drivers", "entry 2", "empty driver name"}},
		{"trailing comma", Setting{}, Setting{Set: true, Value: "virtio_net,"}, "kvm",
			[]string{"config hotplug.drivers", "entry 2", "empty"}},
		{"empty string", Setting{Set: true, Value: ""}, good, "smartos",
			[]string{"metadata seedkeeper:network-drivers", "empty"}},
		{"empty list", Setting{}, Setting{Set: true, Value: []any{}}, "kvm",
			[]string{"config hotplug.drivers", "empty"}},
		{"null", Setting{}, Setting{Set: true, Value: nil}, "kvm",
			[]string{"config hotplug.drivers", "null"}},
		{"upper case", Setting{Set: true, Value: "VMXNET3"}, good, "vmware",
			[]string{"entry 1", "U+0056 at byte 1"}},
		{"space inside", Setting{}, Setting{Set: true, Value: []string{"vmx net3"}}, "kvm",
			[]string{"entry 1", "U+0020 at byte 4"}},
		{"glob", Setting{}, Setting{Set: true, Value: "virtio*"}, "kvm",
			[]string{"entry 1", "U+002A"}},
		{"udev alternation", Setting{Set: true, Value: "e1000|vmxnet3"}, good, "vmware",
			[]string{"entry 1", "U+007C"}},
		{"number", Setting{}, Setting{Set: true, Value: 1000}, "kvm",
			[]string{"config hotplug.drivers", "is a number"}},
		{"mapping", Setting{}, Setting{Set: true, Value: map[string]any{"virtio_net": true}}, "kvm",
			[]string{"is a mapping"}},
		{"bool", Setting{Set: true, Value: true}, good, "smartos",
			[]string{"is a boolean"}},
		{"list with a number", Setting{}, Setting{Set: true, Value: []any{"virtio_net", 3}}, "kvm",
			[]string{"entry 2 is a number"}},
		{"list with an empty name", Setting{}, Setting{Set: true, Value: []string{"virtio_net", ""}}, "kvm",
			[]string{"entry 2", "empty"}},
		{"too long", Setting{}, Setting{Set: true, Value: strings.Repeat("a", 32)}, "kvm",
			[]string{"32 bytes long, more than 31"}},
		{"non-ascii", Setting{}, Setting{Set: true, Value: "virtio_nеt"}, "kvm",
			[]string{"entry 1", "U+0435 at byte 9"}},
		{"unknown platform", Setting{}, Setting{}, "hyperv",
			[]string{"default for hyperv", "no default", "hotplug.drivers"}},
		{"no platform", Setting{}, Setting{}, "",
			[]string{"default for unknown platform", "no default"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ResolveAllowlist(tc.md, tc.cfg, tc.platform)
			for _, d := range []string{"veth", "virtio_net", "vmxnet3", "e1000", "VMXNET3", "", "vmx net3", "virtio*", "e1000|vmxnet3"} {
				if a.Allows(d) {
					t.Errorf("broken allowlist allows %q", d)
				}
			}
			if len(a.Drivers()) != 0 {
				t.Errorf("Drivers() = %v, want none", a.Drivers())
			}
			r := a.Reason()
			if r == "" {
				t.Fatal("no Reason for a closed allowlist")
			}
			for _, w := range tc.wantReason {
				if !strings.Contains(r, w) {
					t.Errorf("Reason() = %q, want it to mention %q", r, w)
				}
			}
			if !strings.HasPrefix(a.String(), "nothing (") {
				t.Errorf("String() = %q", a.String())
			}
		})
	}
}

func TestZeroAllowlistAllowsNothing(t *testing.T) {
	var a Allowlist
	if a.Allows("virtio_net") || a.Allows("") {
		t.Error("zero Allowlist allows a driver")
	}
	if a.Reason() == "" {
		t.Error("zero Allowlist has no Reason")
	}
}

func TestNewAllowlist(t *testing.T) {
	a := NewAllowlist(OriginFlag, []string{"veth", "e1000", "veth"})
	if got := a.Drivers(); !slices.Equal(got, []string{"e1000", "veth"}) {
		t.Errorf("Drivers() = %v", got)
	}
	if a.String() != "e1000,veth (from flag --drivers)" {
		t.Errorf("String() = %q", a.String())
	}
	b := NewAllowlist(OriginFlag, []string{"veth", "Bridge"})
	if b.Allows("veth") || !strings.Contains(b.Reason(), "flag --drivers: entry 2") {
		t.Errorf("bad name did not close the list: %v", b)
	}
}

func TestParseDriverList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "virtio_net", want: []string{"virtio_net"}},
		{in: "virtio_net,e1000", want: []string{"virtio_net", "e1000"}},
		{in: " vmxnet3 ,\te1000e ", want: []string{"vmxnet3", "e1000e"}},
		{in: "net-x_1", want: []string{"net-x_1"}},
		{in: "", wantErr: "empty"},
		{in: "  ", wantErr: "empty"},
		{in: ",", wantErr: "entry 1: empty driver name"},
		{in: "a,,b", wantErr: "entry 2: empty driver name"},
		{in: "a;b", wantErr: "entry 1: driver name has U+003B at byte 2"},
		{in: "a b", wantErr: "entry 1"},
		{in: "a\nb", wantErr: "entry 1"},
		{in: "E1000", wantErr: "entry 1"},
	} {
		got, err := ParseDriverList(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseDriverList(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseDriverList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseDriverList(f *testing.F) {
	for _, s := range []string{"virtio_net,e1000", "", ",", "a,,b", " vmxnet3 ", "E1000", "a|b", "virtio*", "\xff", strings.Repeat("x", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ParseDriverList(s)
		a := ResolveAllowlist(Setting{}, Setting{Set: true, Value: s}, "kvm")
		if err != nil {
			if a.Reason() == "" || a.Allows("virtio_net") {
				t.Fatalf("parse error %v but the allowlist is open: %v", err, a)
			}
			return
		}
		if len(names) == 0 {
			t.Fatal("no error and no names")
		}
		for _, n := range names {
			if netcfg.CheckDriverName(n) != nil {
				t.Fatalf("accepted bad name %q", n)
			}
			if !a.Allows(n) {
				t.Fatalf("allowlist from %q does not allow %q", s, n)
			}
		}
		for _, d := range a.Drivers() {
			if !slices.Contains(names, d) {
				t.Fatalf("allowlist allows %q, which %q did not name", d, s)
			}
		}
	})
}

// The origin names the key the metadata's value came from: the source's
// (a NoCloud seed on a VMware guest sets seedkeeper:network-drivers), or,
// when not given, the key of the source the platform belongs to. The
// defaults are the table's (datasource.PlatformSource).
func TestResolveAllowlistOriginAndDefaults(t *testing.T) {
	for _, tc := range []struct {
		md       Setting
		platform string
		want     string
	}{
		{Setting{Set: true, Value: "e1000", Key: "seedkeeper:network-drivers"}, "vmware", "e1000 (from metadata seedkeeper:network-drivers)"},
		{Setting{Set: true, Value: "e1000"}, "vmware", "e1000 (from metadata network-drivers)"},
		{Setting{Set: true, Value: "e1000"}, "proxmox", "e1000 (from metadata seedkeeper:network-drivers)"},
		{Setting{Set: true, Value: "e1000"}, "", "e1000 (from metadata seedkeeper:network-drivers)"},
		{Setting{Set: true, Value: "e1000"}, "hyperv", "e1000 (from metadata seedkeeper:network-drivers)"},
		{Setting{}, "smartos", "e1000,e1000e,virtio_net,vmxnet3 (from default for smartos)"},
		{Setting{}, "bhyve", "e1000,e1000e,virtio_net,vmxnet3 (from default for bhyve)"},
		{Setting{}, "vmware", "e1000,e1000e,vlance,vmxnet2,vmxnet3,vrdma (from default for vmware)"},
	} {
		if got := ResolveAllowlist(tc.md, Setting{}, tc.platform).String(); got != tc.want {
			t.Errorf("ResolveAllowlist(%+v, %q) = %q, want %q", tc.md, tc.platform, got, tc.want)
		}
	}
}
