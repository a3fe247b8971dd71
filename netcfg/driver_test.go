package netcfg

import (
	"strings"
	"testing"
)

func TestCheckDriverName(t *testing.T) {
	for _, ok := range []string{
		"virtio_net", "e1000e", "vmxnet3", "mlx5_core", "ne2k-pci", "xen-netfront", "8139too",
		strings.Repeat("x", maxDriverName),
	} {
		if err := CheckDriverName(ok); err != nil {
			t.Errorf("CheckDriverName(%q) = %v, want nil", ok, err)
		}
	}
	for in, want := range map[string]string{
		"":                                   "empty driver name",
		"vmx net3":                           "driver name has U+0020 at byte 4",
		"virtio*":                            "U+002A at byte 7",
		"e1000,e1000e":                       "U+002C at byte 6",
		"a\nb":                               "U+000A at byte 2",
		"e1000\x00":                          "U+0000 at byte 6",
		"v\u00e9th":                          "U+00E9 at byte 2",
		"\xff":                               "U+FFFD at byte 1",
		"a/b":                                "U+002F",
		"a.b":                                "U+002E",
		"E1000":                              "U+0045 at byte 1",
		"vmxNET3":                            "U+004E at byte 4",
		strings.Repeat("x", maxDriverName+1): "32 bytes long, more than 31",
	} {
		err := CheckDriverName(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckDriverName(%q) = %v, want an error saying %q", in, err, want)
			continue
		}
		if len(in) > 1 && strings.Contains(err.Error(), in) {
			t.Errorf("CheckDriverName(%q) quotes its input: %v", in, err)
		}
	}
}

func FuzzCheckDriverName(f *testing.F) {
	for _, s := range []string{"virtio_net", "", "E1000", "a b", "a,b", "\xff", strings.Repeat("y", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckDriverName(s) != nil {
			return
		}
		// What passes can go into a comma- or space-separated list, a
		// log line and a networkd match without changing its structure.
		if s == "" || len(s) > maxDriverName || strings.ContainsAny(s, ", \t\n*?[]\\/.\"'") || CheckLine(s) != nil {
			t.Fatalf("CheckDriverName accepted %q", s)
		}
	})
}
