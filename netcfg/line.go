package netcfg

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// CheckLine reports whether s can be written as part of one line of a
// line-oriented file (a networkd file, resolv.conf, an ifupdown stanza):
// valid UTF-8 with no control character (among them CR, LF, NUL, VT, FF,
// TAB and U+0085) and no line or paragraph separator (U+2028, U+2029).
// Any of these could end the line for some reader and start a directive
// or a section of the input's choosing. The error names the character
// and its byte offset, never the text.
func CheckLine(s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return fmt.Errorf("invalid UTF-8 at byte %d", i)
			}
		case unicode.IsControl(r), r == '\u2028', r == '\u2029':
			return fmt.Errorf("control character %U at byte %d", r, i)
		}
	}
	return nil
}
