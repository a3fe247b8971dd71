package sysroot

import "testing"

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		root Root
		in   string
		want string
	}{
		{"", "/proc/cmdline", "/proc/cmdline"},
		{"/", "/proc/cmdline", "/proc/cmdline"},
		{"/tmp/x", "/proc/cmdline", "/tmp/x/proc/cmdline"},
		{"/tmp/x", "proc/../../etc", "/tmp/x/etc"},
		{"/tmp/x/", "/", "/tmp/x"},
	} {
		if got := tc.root.Path(tc.in); got != tc.want {
			t.Errorf("Root(%q).Path(%q) = %q, want %q", tc.root, tc.in, got, tc.want)
		}
	}
}

func TestRel(t *testing.T) {
	r := Root("/tmp/x")
	for in, want := range map[string]string{
		"/tmp/x/var/lib": "/var/lib",
		"/tmp/x":         "/",
		"/tmp/xy/a":      "/tmp/xy/a",
		"/etc":           "/etc",
	} {
		if got := r.Rel(in); got != want {
			t.Errorf("Rel(%q) = %q, want %q", in, got, want)
		}
	}
}
