package vm

import (
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
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
`, "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main"},
		{"deb822-security-first", `Types: deb
URIs: http://security.debian.org/debian-security
Suites: bookworm-security

Types: deb-src deb
URIs: http://mirror.example/debian
Suites: bookworm
`, "deb http://mirror.example/debian trixie main"},
		{"one-line", "# comment\ndeb http://security.debian.org/ bookworm-security main\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib\n",
			"deb [signed-by=/k.gpg] http://mirror.example/debian/ trixie main"},
		{"one-line-plain", "deb http://deb.debian.org/debian bookworm main\n", "deb http://deb.debian.org/debian trixie main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sdSources(tc.src, "trixie")
			if err != nil || got != tc.want {
				t.Errorf("sdSources = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for _, src := range []string{"", "deb http://security.debian.org/ bookworm-security main\n", "Types: deb\nURIs: http://x/debian-security\nSuites: bookworm-security\n"} {
		if got, err := sdSources(src, "trixie"); err == nil || !strings.Contains(err.Error(), "trixie") {
			t.Errorf("sdSources(%q) = %q, %v; want an error naming the release", src, got, err)
		}
	}
}
