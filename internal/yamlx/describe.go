package yamlx

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a YAML library error described: where it is and what is wrong,
// never what the text says.
type Error struct {
	// Line is the line the library names, from 1; 0 when it names none.
	Line int
	// Msg is the library's words less everything they quote of the text:
	// a value, a key, an anchor's name, a tag of the text's own.
	Msg string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Describe is the one describer of the YAML library's errors, which quote
// the text (an anchor's name, a key defined twice, a value that does not
// decode, a tag): it returns an *Error saying the same less what is
// quoted. Of a type error with several problems it says the first and
// counts the rest. The limits' own errors (ErrTooComplex, ErrTooLarge)
// quote nothing and are returned as they are, as is nil.
func Describe(err error) error {
	if err == nil || errors.Is(err, ErrTooComplex) || errors.Is(err, ErrTooLarge) {
		return err
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		d := describe(te.Errors[0])
		if n := len(te.Errors) - 1; n > 0 {
			d.Msg += fmt.Sprintf(" (and %d more)", n)
		}
		return d
	}
	return describe(err.Error())
}

// Line is the line a YAML library error names, from 1; 0 when none.
func Line(err error) int {
	var d *Error
	if errors.As(Describe(err), &d) {
		return d.Line
	}
	return 0
}

func describe(s string) *Error {
	s = strings.TrimPrefix(s, "yaml: ")
	d := &Error{}
	if m := lineAt.FindStringSubmatch(s); m != nil {
		d.Line, _ = strconv.Atoi(m[1])
		s = s[len(m[0]):]
	}
	// What the library quotes ('an anchor', "a key", `a value`) may hold
	// the quote itself: everything from the first quote to the last
	// goes, or to the end when there is one.
	if i := strings.IndexAny(s, quotes); i >= 0 {
		rest := ""
		if j := strings.LastIndexAny(s, quotes); j > i {
			rest = s[j+1:]
		}
		s = strings.TrimRight(s[:i], " ") + rest
	}
	s = ownTag.ReplaceAllStringFunc(s, func(t string) string {
		if knownTags[strings.TrimSpace(t)] {
			return t
		}
		return " a tag"
	})
	d.Msg = s
	return d
}

var (
	lineAt = regexp.MustCompile(`^line (\d+): `)
	quotes = "'\"`"
	// A tag as the library writes it; the text may give its own.
	ownTag    = regexp.MustCompile(` !\S*`)
	knownTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
		"!!map": true, "!!seq": true, "!!timestamp": true, "!!binary": true, "!!merge": true}
)
