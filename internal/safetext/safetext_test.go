package safetext

import (
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"i-0123abcd":       "i-0123abcd",
		"café web 1":       "café web 1",
		"\x1b]0;owned\x07": `\x1b]0;owned\x07`,
		"\x1b[2J\x1b[H":    `\x1b[2J\x1b[H`,
		"a\nb\rc\td":       `a\nb\rc\td`,
		"\x9b31m":          `\x9b31m`, // a C1 CSI as a raw byte
		"\u009b31m":        `\u009b31m`,
		"evil\u202etxt.sh": `evil\u202etxt.sh`,
		"zero\u200bwidth":  `zero\u200bwidth`,
		"line\u2028sep":    `line\u2028sep`,
		"del\x7f":          `del\x7f`,
		"\xff\xfe":         `\xff\xfe`,
		"emoji 🙂":          "emoji 🙂",
		"nbsp\u00a0":       `nbsp\u00a0`,
		"":                 "",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeLines("#cloud-config\n\tx: 1\n\x1b[2J"); got != "#cloud-config\n\tx: 1\n\\x1b[2J" {
		t.Errorf("EscapeLines = %q", got)
	}
}

// FuzzEscape: the result is valid UTF-8 and holds nothing a terminal acts
// on.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"\x1b]0;x\x07", "a\u202eb", "\xff", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Escape(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Escape(%q) = %q is not UTF-8", s, got)
		}
		for _, r := range got {
			if !printable(r) {
				t.Fatalf("Escape(%q) = %q keeps %U", s, got, r)
			}
		}
		if safe(s, false) && got != s {
			t.Fatalf("Escape changed safe text %q", s)
		}
	})
}
