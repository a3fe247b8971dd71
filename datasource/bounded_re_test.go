package datasource

import (
	"strings"
	"testing"
)

// The patterns' length bounds, checked apart from their regexps, hold at
// the bound and one byte past it, and a match is still whole-string.
func TestBoundedPatterns(t *testing.T) {
	for _, tc := range []struct {
		name string
		re   boundedRE
		unit string
		min  int
	}{
		{"plain name", plainNameRE, "a", 1},
		{"marker", markerRE, "a", 1},
		{"report message", imcMessage, "a", 0},
		{"host name label", hostnameLabel, "a", 1},
	} {
		if s := strings.Repeat(tc.unit, tc.re.max); !tc.re.MatchString(s) {
			t.Errorf("%s: %d bytes, at the bound, refused", tc.name, len(s))
		}
		if s := strings.Repeat(tc.unit, tc.re.max+1); tc.re.MatchString(s) {
			t.Errorf("%s: %d bytes, past the bound, taken", tc.name, len(s))
		}
		if got := tc.re.MatchString(""); got != (tc.min == 0) {
			t.Errorf("%s: the empty string taken = %v", tc.name, got)
		}
		if tc.re.MatchString("a\n") || tc.re.MatchString("a\u00e9") {
			t.Errorf("%s: a match is not the whole string, or not ASCII", tc.name)
		}
	}
	if hostnameLabel.MatchString("-a") || hostnameLabel.MatchString("a-") || !hostnameLabel.MatchString("a-b") {
		t.Error("host name label: hyphens allowed only inside")
	}
}
