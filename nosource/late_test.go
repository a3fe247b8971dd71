package nosource

import (
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

func TestLate(t *testing.T) {
	ran := func(outcome, source, transport string) Boot {
		return Boot{Ran: true, At: t0, Outcome: outcome, Source: source, Transport: transport}
	}
	const next = "it takes effect on the next boot, and nothing from it is applied before"
	for _, tc := range []struct {
		name  string
		boot  Boot
		found Found
		want  string // "" means not late
	}{
		{"nothing found", ran("no-source", "", ""), Found{}, ""},
		// The CD-ROM attached after boot looked.
		{"late CD-ROM, detected", ran("no-source", "", ""), Found{Source: "nocloud"},
			"a seed appeared after boot: boot found no metadata source at 2026-03-01T08:00:00Z, and nocloud is here now; " + next},
		{"late CD-ROM, read", ran("no-source", "", ""), Found{"nocloud", "iso9660:/dev/sr0"},
			"a seed appeared after boot: boot found no metadata source at 2026-03-01T08:00:00Z, and nocloud via iso9660:/dev/sr0 is here now; " + next},
		{"late mdata host", ran("no-source", "", ""), Found{Source: "smartos"},
			"a metadata source appeared after boot: boot found no metadata source at 2026-03-01T08:00:00Z, and smartos is here now; " + next},
		{"boot failed before a source", ran("error", "", ""), Found{Source: "smartos"},
			"boot did not decide on a metadata source at 2026-03-01T08:00:00Z (outcome error), and smartos is here now; " + next},
		{"another kind", ran("ok", "nocloud", "dir:/var/lib/cloud/seed/nocloud-net"), Found{"vmware", "guestinfo"},
			"a metadata source appeared after boot: boot decided on nocloud via dir:/var/lib/cloud/seed/nocloud-net at 2026-03-01T08:00:00Z, and vmware via guestinfo is here now; " + next},
		{"a second seed", ran("ok", "nocloud", "dir:/var/lib/seedkeeper/imported-seed"), Found{"nocloud", "dir:/var/lib/seedkeeper/imported-seed,iso9660:/dev/sr0"},
			"a seed appeared after boot: boot read nocloud from dir:/var/lib/seedkeeper/imported-seed at 2026-03-01T08:00:00Z, and iso9660:/dev/sr0 is here now; " + next},
		// Not late: the source boot decided on.
		{"same, detected", ran("ok", "nocloud", "iso9660:/dev/sr0"), Found{Source: "nocloud"}, ""},
		{"same seed, new content", ran("ok", "nocloud", "iso9660:/dev/sr0"), Found{"nocloud", "iso9660:/dev/sr0"}, ""},
		{"a seed removed", ran("ok", "nocloud", "dir:/var/lib/cloud/seed/nocloud-net,iso9660:/dev/sr0"), Found{"nocloud", "dir:/var/lib/cloud/seed/nocloud-net"}, ""},
		{"first run's seed, then its import", ran("ok", "nocloud", "dir:/var/lib/cloud/seed/nocloud"), Found{"nocloud", "dir:/var/lib/seedkeeper/imported-seed"}, ""},
		{"mdata over another port", ran("partial", "smartos", "serial:/dev/ttyS1"), Found{"smartos", "vsock:2:505"}, ""},
	} {
		msg, late := Late(tc.boot, tc.found)
		switch {
		case tc.want == "" && (late || msg != ""):
			t.Errorf("%s: late %v %q; want not late", tc.name, late, msg)
		case tc.want != "" && (!late || !strings.Contains(msg, tc.want) || !strings.HasSuffix(msg, next)):
			t.Errorf("%s: late %v %q; want %q", tc.name, late, msg, tc.want)
		}
	}
}

// When boot has not decided in this boot it may still be running, or
// have failed before saving: the source waits for boot, not for "the next
// boot".
func TestLateBootNotRun(t *testing.T) {
	msg, late := Late(Boot{}, Found{Source: "vmware"})
	if want := "a metadata source (vmware) is here, but seedkeeper boot has not decided on a source in this boot; nothing from it is applied until seedkeeper boot has run"; !late || msg != want {
		t.Errorf("Late = %v %q; want %q", late, msg, want)
	}
}

func TestRecordLate(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	if msg, err := ReadLate(root); msg != "" || err != nil {
		t.Errorf("ReadLate before = %q, %v", msg, err)
	}
	if err := RecordLate(root, "a seed appeared"); err != nil {
		t.Fatal(err)
	}
	if msg, err := ReadLate(root); msg != "a seed appeared" || err != nil {
		t.Errorf("ReadLate = %q, %v", msg, err)
	}
}
