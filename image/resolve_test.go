package image

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestResolveStaysInRoot(t *testing.T) {
	dir := t.TempDir()
	root := sysroot.Root(dir)
	symlink(t, "/var/lib/dbus/machine-id", filepath.Join(dir, "etc/machine-id"))
	symlink(t, "../../srv/cloud", filepath.Join(dir, "var/lib/cloud"))
	symlink(t, "../../../../../../../../tmp", filepath.Join(dir, "var/lib/escape"))
	symlink(t, "loop", filepath.Join(dir, "etc/loop"))
	cases := []struct {
		sys    string
		follow bool
		want   string
		err    error
	}{
		{"/etc/machine-id", true, "/var/lib/dbus/machine-id", nil},
		{"/etc/machine-id", false, "/etc/machine-id", nil},
		{"/var/lib/cloud/instances/i-1", false, "/srv/cloud/instances/i-1", nil},
		{"/var/lib/cloud", true, "/srv/cloud", nil},
		{"/var/lib/cloud", false, "/var/lib/cloud", nil},
		{"/var/lib/escape/x", false, "", ErrOutsideRoot},
		{"/nothing/../here", false, "/here", nil},
	}
	for _, c := range cases {
		got, err := resolve(root, c.sys, c.follow)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("resolve(%s, %v) = %q, %v; want %q, %v", c.sys, c.follow, got, err, c.want, c.err)
		}
	}
	if _, err := resolve(root, "/etc/loop", true); err == nil {
		t.Error("a link loop resolved")
	}
	// The real root: ".." at "/" stays at "/", as the kernel has it.
	if got, err := resolve(sysroot.Root(""), "/../etc", false); got != "/etc" || err != nil {
		t.Errorf("real root: %q, %v", got, err)
	}
}
