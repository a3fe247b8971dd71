// Package bound is the one range check for the numbers and durations a
// person or the metadata hands seedkeeper: command-line flags, keys of
// the configuration file, values read from the metadata. Each caller
// names the value and its range; the error says which value was out of
// range and what the range is, never the value itself (a flag or a key
// may hold anything, a secret pasted in the wrong place included).
package bound

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Error is a value outside its range.
type Error struct {
	// Name says which value: a flag ("--timeout"), a configuration key
	// ("boot.wait"), a metadata field.
	Name string
	// Want describes the accepted values ("between 1ms and 24h0m0s").
	Want string
}

func (e *Error) Error() string { return e.Name + ": " + e.Reason() }

// Reason is the error without the name, for a caller that names the value
// its own way (a field path, a parameter).
func (e *Error) Reason() string { return "out of range (want " + e.Want + ")" }

// Check returns nil when lo <= v <= hi, and otherwise an *Error naming
// name and the range.
func Check[T cmp.Ordered](name string, v, lo, hi T) error {
	if v >= lo && v <= hi {
		return nil
	}
	return &Error{Name: name, Want: between(lo, hi)}
}

// CheckOff is Check for a value whose zero means "off" (no limit, no
// wait): zero or a value in [lo, hi].
func CheckOff[T cmp.Ordered](name string, v, lo, hi T) error {
	var zero T
	if v == zero || v >= lo && v <= hi {
		return nil
	}
	return &Error{Name: name, Want: fmt.Sprintf("0 (off) or %s", between(lo, hi))}
}

func between[T any](lo, hi T) string { return fmt.Sprintf("between %v and %v", lo, hi) }

// ParseDuration reads s as a Go duration ("90s", "1m30s") or a number of
// seconds ("90", "1.5") and checks it against [lo, hi]. Anything that is
// neither, and every number a Duration cannot hold (NaN, Inf, 1e300),
// gives an *Error too: out of range is out of range however it is
// spelled.
func ParseDuration(name, s string, lo, hi time.Duration) (time.Duration, error) {
	d, ok := Duration(s)
	if !ok {
		return 0, &Error{Name: name, Want: "a duration such as 30s, or a number of seconds, " + between(lo, hi)}
	}
	return d, Check(name, d, lo, hi)
}

// ParseDurationOff is ParseDuration for a duration whose zero means off.
func ParseDurationOff(name, s string, lo, hi time.Duration) (time.Duration, error) {
	d, ok := Duration(s)
	if !ok {
		return 0, &Error{Name: name, Want: "a duration such as 30s, or a number of seconds: 0 (off) or " + between(lo, hi)}
	}
	return d, CheckOff(name, d, lo, hi)
}

// Duration reads s as a Go duration or a number of seconds. ok is false
// when s is neither or the number is beyond what a time.Duration holds.
// The value is not range-checked: callers use Check.
func Duration(s string) (d time.Duration, ok bool) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return Seconds(f)
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// Seconds converts a number of seconds to a Duration. ok is false for
// NaN, the infinities and anything beyond ±292 years, where the
// conversion would overflow. A positive value too small for a nanosecond
// stays positive (rounded up to 1ns), so that a range check refuses it
// instead of taking it for zero, which often means "off".
func Seconds(f float64) (d time.Duration, ok bool) {
	ns := f * float64(time.Second)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, false
	}
	d = time.Duration(ns)
	if d == 0 && f > 0 {
		d = 1
	} else if d == 0 && f < 0 {
		d = -1
	}
	return d, true
}

// ParseInt reads s as a decimal integer and checks it against [lo, hi].
func ParseInt(name, s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &Error{Name: name, Want: "an integer " + between(lo, hi)}
	}
	return n, Check(name, n, lo, hi)
}

// The range of a timeout or wait a person sets (a flag, a configuration
// key): below a millisecond it rounds to nothing on the way to the
// kernel, and a day is past any wait a boot or a command should make
// without being told "no limit" (0, where the value allows it).
const (
	MinTimeout = time.Millisecond
	MaxTimeout = 24 * time.Hour
)
