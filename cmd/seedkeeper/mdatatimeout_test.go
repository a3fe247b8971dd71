package main

import (
	"strings"
	"testing"
	"time"
)

// "mdata-get -t 1e-10" and "-t 1e300" were accepted and
// meant "no timeout". A timeout outside 1ms..24h is a usage error, like
// the reference tools' bad command lines: exit 3, before any I/O.
func TestMdataTimeoutOutOfRangeIsAUsageError(t *testing.T) {
	for _, v := range []string{"1e-10", "1e300", "NaN", "Inf", "+Inf", "-1", "0", "-5s", "0s", "100us", "25h", "1e10", "9223372036854775807", "soon"} {
		// A transport that would fail at once if it were used: exit 3,
		// not 2, shows nothing was tried.
		r := runInProcess("mdata", "get", "-t", v, "sdc:uuid")
		if r.code != exitUsage || !strings.Contains(r.stderr, "invalid timeout") {
			t.Errorf("-t %s: %v", v, r)
		}
	}
	for v, want := range map[string]time.Duration{
		"1ms": time.Millisecond, "0.001": time.Millisecond, "30": 30 * time.Second,
		"1.5": 1500 * time.Millisecond, "24h": 24 * time.Hour, "86400": 24 * time.Hour, "2m": 2 * time.Minute,
	} {
		if d, err := parseTimeout(v); err != nil || d != want {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v", v, d, err, want)
		}
	}
}

// "seedkeeper fetch --timeout -1s" used to mean "wait for ever": a
// negative timeout skipped the deadline. Every duration flag goes through
// the one range check: 0 (the default) is "no limit", 1ms..24h a bound,
// anything else a usage error that names the flag and the range and does
// not quote the value.
func TestFetchTimeoutOutOfRangeIsAUsageError(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"-1s", "-1ns", "-0.5", "1ns", "999us", "24h0m1s", "25h", "1e300", "NaN", "Inf", "-Inf", "soon", "SECRETMARKER"} {
		r := runInProcess("fetch", "--root", root, "--source", "nocloud", "--timeout", v)
		if r.code != exitUsage || !strings.Contains(r.stderr, "seedkeeper fetch: --timeout: out of range (want ") || !strings.Contains(r.stderr, "0 (off) or between 1ms and 24h0m0s)") ||
			strings.Contains(r.stderr, "SECRETMARKER") || r.stdout != "" {
			t.Errorf("fetch --timeout %s: %+v", v, r)
		}
		if r := runInProcess("fetch", "--root", root, "--timeout="+v); r.code != exitUsage {
			t.Errorf("fetch --timeout=%s: %+v", v, r)
		}
	}
	// In range, the flag is taken and the read goes on: an empty root has
	// no NoCloud seed, which is exit 1, not a usage error.
	for _, v := range []string{"0", "0s", "1ms", "0.001", "24h", "86400", "30s"} {
		if r := runInProcess("fetch", "--root", root, "--source", "nocloud", "--timeout", v); r.code != exitNoSource {
			t.Errorf("fetch --timeout %s: %+v, want exit %d", v, r, exitNoSource)
		}
	}
}
