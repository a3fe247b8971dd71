package vm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSDSources: another release's guest is built from the mirror this
// machine uses for Debian itself, with the suite changed, whatever form
// the host's sources take; security and updates entries are not the
// mirror, and a file with no Debian release entry is an error.
func TestSDSources(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"deb822", `Types: deb
# http://snapshot.example/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
`, "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian trixie main"},
		{"deb822-security-first", `Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security

Types: deb-src deb
URIs: http://mirror.example/debian
Suites: bookworm
`, "deb http://mirror.example/debian trixie main"},
		{"one-line", "# comment\ndeb http://security.example/ bookworm-security main\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib\n",
			"deb [signed-by=/k.gpg] http://mirror.example/debian/ trixie main"},
		{"one-line-plain", "deb http://mirror.example/debian bookworm main\n", "deb http://mirror.example/debian trixie main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sdSources(tc.src, "trixie")
			if err != nil || got != tc.want {
				t.Errorf("sdSources = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for _, src := range []string{"", "deb http://security.example/ bookworm-security main\n", "Types: deb\nURIs: http://x/debian-security\nSuites: bookworm-security\n"} {
		if got, err := sdSources(src, "trixie"); err == nil || !strings.Contains(err.Error(), "trixie") {
			t.Errorf("sdSources(%q) = %q, %v; want an error naming the release", src, got, err)
		}
	}
}

// TestBootCostTable: the boot cost summary takes medians (odd and even
// counts), shows the range, and the difference from plain per boot.
func TestBootCostTable(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median of 3 values = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median of 4 values = %v", m)
	}
	got := bootCostTable([]string{"trixie"}, map[string][]bootCostSample{
		"trixie/first/plain":   {{final: 100, ssh: 50, local: 20}, {final: 110, ssh: 60, local: 22}},
		"trixie/first/shipped": {{final: 105, ssh: 52, local: 25, skWall: 2, skCPU: 1}, {final: 115, ssh: 58, local: 27, skWall: 4, skCPU: 1}},
	})
	for _, want := range []string{
		"| trixie | first | plain | 2 | 105.0 [100.0–110.0] | – | 55.0 [50.0–60.0] | – |",
		"| trixie | first | shipped | 2 | 110.0 [105.0–115.0] | +5.0 s (+5 %) | 55.0 [52.0–58.0] | +0.0 s (+0 %) | 26.0 [25.0–27.0] | 3.0 [2.0–4.0] | 1.0 [1.0–1.0] |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "second") {
		t.Errorf("table has a row for boots without samples:\n%s", got)
	}
}

// removeStale removes a stack's older tars, and never another stack's
// whose name begins with it (netplan and netplan-nm) nor the base's.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		"forky-netplan-1111111111111111.tar", "forky-netplan-2222222222222222.tar",
		"forky-netplan-nm-3333333333333333.tar", "forky-base-4444444444444444.tar",
		"trixie-netplan-5555555555555555.tar",
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir, "forky-netplan", filepath.Join(dir, "forky-netplan-2222222222222222.tar"))
	var left []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{"forky-base-4444444444444444.tar", "forky-netplan-2222222222222222.tar",
		"forky-netplan-nm-3333333333333333.tar", "trixie-netplan-5555555555555555.tar"}
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}
