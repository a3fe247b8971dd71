package bound

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestCheckEdges(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want bool
	}{{-1, false}, {0, true}, {10, true}, {11, false}, {math.MinInt64, false}, {math.MaxInt64, false}} {
		err := Check("n", c.v, 0, 10)
		if (err == nil) != c.want {
			t.Errorf("Check(%d in 0..10) = %v", c.v, err)
		}
		var be *Error
		if err != nil && (!errors.As(err, &be) || be.Name != "n" || err.Error() != "n: out of range (want between 0 and 10)") {
			t.Errorf("Check(%d) error %q", c.v, err)
		}
	}
	for _, c := range []struct {
		v    time.Duration
		want bool
	}{{-1, false}, {0, true}, {time.Millisecond - 1, false}, {time.Millisecond, true}, {time.Hour, true}, {time.Hour + 1, false}} {
		if err := CheckOff("w", c.v, time.Millisecond, time.Hour); (err == nil) != c.want {
			t.Errorf("CheckOff(%v) = %v", c.v, err)
		} else if err != nil && !strings.Contains(err.Error(), "want 0 (off) or between 1ms and 1h0m0s") {
			t.Errorf("CheckOff(%v) error %q", c.v, err)
		}
	}
}

func TestParseDurationEdges(t *testing.T) {
	ok := map[string]time.Duration{
		"1ms": time.Millisecond, "0.001": time.Millisecond, "30": 30 * time.Second, "1.5": 1500 * time.Millisecond,
		"24h": 24 * time.Hour, "86400": 24 * time.Hour, "2m": 2 * time.Minute,
	}
	for s, want := range ok {
		if d, err := ParseDuration("--t", s, MinTimeout, MaxTimeout); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, d, err, want)
		}
	}
	for _, s := range []string{"", "soon", "-1s", "-1", "0", "0s", "999us", "1e-10", "1e-300", "24h0m0.000000001s", "86400.001",
		"25h", "1e300", "1e400", "-1e400", "NaN", "Inf", "+Inf", "-Inf", "9223372036854775807", "SECRETMARKER"} {
		d, err := ParseDuration("--t", s, MinTimeout, MaxTimeout)
		var be *Error
		if err == nil || !errors.As(err, &be) || be.Name != "--t" {
			t.Errorf("ParseDuration(%q) = %v, %v; want a range error", s, d, err)
			continue
		}
		if len(s) >= 4 && strings.Contains(err.Error(), s) {
			t.Errorf("ParseDuration(%q): the error quotes the input: %q", s, err)
		}
	}
	for s, want := range map[string]time.Duration{"0": 0, "0s": 0, "0.0": 0, "1ms": time.Millisecond} {
		if d, err := ParseDurationOff("--t", s, MinTimeout, MaxTimeout); err != nil || d != want {
			t.Errorf("ParseDurationOff(%q) = %v, %v", s, d, err)
		}
	}
	for _, s := range []string{"-1s", "-0.5", "1ns", "1e-10", "25h", "NaN"} {
		if d, err := ParseDurationOff("--t", s, MinTimeout, MaxTimeout); err == nil {
			t.Errorf("ParseDurationOff(%q) = %v, want an error", s, d)
		}
	}
}

func TestParseInt(t *testing.T) {
	if n, err := ParseInt("mtu", "9000", 68, 65535); err != nil || n != 9000 {
		t.Errorf("ParseInt = %d, %v", n, err)
	}
	for _, s := range []string{"67", "65536", "-1", "0x10", "1e3", "", "99999999999999999999"} {
		if _, err := ParseInt("mtu", s, 68, 65535); err == nil || !strings.HasPrefix(err.Error(), "mtu: out of range") {
			t.Errorf("ParseInt(%q) = %v", s, err)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1s", "-1s", "1e300", "NaN", "0.0000000001", "9223372036854775807ns", "2562047h47m16.854775807s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration("x", s, MinTimeout, MaxTimeout)
		if err == nil && (d < MinTimeout || d > MaxTimeout) {
			t.Fatalf("ParseDuration(%q) = %v, outside the range", s, d)
		}
		if err != nil && len(s) >= 4 && strings.Contains(err.Error(), s) {
			t.Fatalf("error quotes the input: %q", err)
		}
	})
}
