// Package safetext makes text that came from metadata safe to print on a
// terminal: control characters, escape sequences, invalid UTF-8 and the
// invisible characters that reorder or hide text are shown as Go-style
// escapes instead of being acted on. Every human-readable output of
// seedkeeper that can hold host-controlled text goes through it.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character that a terminal would act on or
// that does not print shown as an escape: "\x1b", "\n", "\u202e", and
// "\xff" for a byte that is not UTF-8. Printable text, spaces included,
// is unchanged.
func Escape(s string) string { return escape(s, false) }

// EscapeLines is Escape for text that is meant to span lines (user-data
// shown by fetch): it keeps "\n" and tabs as they are.
func EscapeLines(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	if safe(s, lines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case printable(r):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

func safe(s string, lines bool) bool {
	for _, r := range s {
		if r == utf8.RuneError {
			return false // checked byte by byte in escape
		}
		if !printable(r) && !(lines && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}

// printable reports whether r prints as itself and moves nothing: a
// graphic character or the ASCII space, and not one of the format
// characters that reorder or hide text (bidirectional overrides,
// zero-width characters).
func printable(r rune) bool {
	if r == ' ' {
		return true
	}
	if unicode.Is(unicode.Cf, r) {
		return false
	}
	return unicode.IsGraphic(r) && !unicode.IsSpace(r)
}

// Strings returns the escapes of every element of ss.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Escape(s)
	}
	return out
}
