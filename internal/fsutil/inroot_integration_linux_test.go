//go:build linux

package fsutil

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/nohang"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// bindMount mounts src on dst for the test, or skips with how to run it.
func bindMount(t *testing.T, src, dst string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount inside a test root: run `sudo make test`")
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount (%v): run as root with `sudo make test` where mounts are allowed", err)
	}
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
}

// TestIntegrationInRootBindMount: a bind mount inside the root leads
// neither a read nor a removal onto the host, whichever walk is used.
func TestIntegrationInRootBindMount(t *testing.T) {
	testenv.Integration(t)
	forEachWalk(t, func(t *testing.T) {
		host := t.TempDir()
		os.WriteFile(filepath.Join(host, "cloud-init.log"), []byte("HOST SECRET"), 0o600)
		hostFile := filepath.Join(t.TempDir(), "shadow")
		os.WriteFile(hostFile, []byte("HOST SECRET"), 0o600)
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "var/log"), 0o755)
		os.MkdirAll(filepath.Join(root, "var/lib/cloud/instances/i-1/mnt"), 0o755)
		os.WriteFile(filepath.Join(root, "var/lib/cloud/instances/i-1/x"), nil, 0o644)
		os.WriteFile(filepath.Join(root, "var/log/file"), nil, 0o644)
		bindMount(t, host, filepath.Join(root, "var/log"))
		bindMount(t, host, filepath.Join(root, "var/lib/cloud/instances/i-1/mnt"))
		// A bind-mounted file, over a file of the image.
		os.WriteFile(filepath.Join(root, "var/lib/cloud/shadow"), nil, 0o644)
		bindMount(t, hostFile, filepath.Join(root, "var/lib/cloud/shadow"))

		if _, err := ReadFileIn(context.Background(), root, "/var/log/cloud-init.log", SmallFile); !errors.Is(err, ErrCrossesMount) {
			t.Errorf("a read through a bind mount: %v; want ErrCrossesMount", err)
		}
		if _, err := ReadFileIn(context.Background(), root, "/var/lib/cloud/shadow", SmallFile); !errors.Is(err, ErrCrossesMount) {
			t.Errorf("a read of a bind-mounted file: %v; want ErrCrossesMount", err)
		}
		if _, err := ReadDirIn(root, "/var/log"); !errors.Is(err, ErrCrossesMount) {
			t.Errorf("a listing of a mount point: %v; want ErrCrossesMount", err)
		}
		if err := RemoveIn(root, "/var/log/cloud-init.log", false); err == nil {
			t.Errorf("a removal through a bind mount succeeded")
		}
		if err := RemoveIn(root, "/var/lib/cloud/shadow", false); err == nil {
			t.Errorf("the removal of a bind-mounted file succeeded")
		}
		err := RemoveIn(root, "/var/lib/cloud", true)
		if !errors.Is(err, ErrCrossesMount) {
			t.Errorf("a tree removal over mounts: %v; want ErrCrossesMount", err)
		}
		for _, f := range []string{filepath.Join(host, "cloud-init.log"), hostFile} {
			if b, err := os.ReadFile(f); err != nil || string(b) != "HOST SECRET" {
				t.Errorf("the host file %s was touched: %q, %v", f, b, err)
			}
		}
		if _, err := os.Lstat(filepath.Join(root, "var/lib/cloud/instances/i-1/x")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the tree's own files were left: %v", err)
		}
	})
}

// TestIntegrationInRootDevice: a device node in the image is described,
// never opened, read or emptied.
func TestIntegrationInRootDevice(t *testing.T) {
	testenv.Integration(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to make device nodes: run `sudo make test`")
	}
	forEachWalk(t, func(t *testing.T) {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "etc"), 0o755)
		// 1:5 is /dev/zero: a read would never end.
		if err := unix.Mknod(filepath.Join(root, "etc/machine-id"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
			t.Skipf("cannot make a device node here (%v): run `sudo make test` on a file system that allows them", err)
		}
		var err error
		nohang.Run(t, "ReadFileIn of a device", func() {
			_, err = ReadFileIn(context.Background(), root, "/etc/machine-id", SmallFile)
		})
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
			t.Errorf("ReadFileIn of a device: %v", err)
		}
		if err := TruncateIn(root, "/etc/machine-id"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("TruncateIn of a device: %v", err)
		}
		if fi, err := StatIn(root, "/etc/machine-id", false); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("StatIn of a device: %v, %v", fi, err)
		}
		if err := RemoveIn(root, "/etc/machine-id", false); err != nil {
			t.Errorf("RemoveIn of a device node: %v", err)
		}
	})
}

// TestIntegrationInRootBindMountRootSpelling: a root given as a relative
// path, or through a link, finds the same bind mount inside it as its
// absolute spelling (the mount table names mounts by absolute, resolved
// paths), whichever walk is used.
func TestIntegrationInRootBindMountRootSpelling(t *testing.T) {
	testenv.Integration(t)
	forEachWalk(t, func(t *testing.T) {
		host := t.TempDir()
		os.WriteFile(filepath.Join(host, "cloud-init.log"), []byte("HOST SECRET"), 0o600)
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "var/log"), 0o755)
		bindMount(t, host, filepath.Join(root, "var/log"))
		linked := filepath.Join(t.TempDir(), "img")
		if err := os.Symlink(root, linked); err != nil {
			t.Fatal(err)
		}
		t.Chdir(filepath.Dir(root))
		for _, r := range []string{filepath.Base(root), "./" + filepath.Base(root) + "/", linked} {
			if b, err := ReadFileIn(context.Background(), r, "/var/log/cloud-init.log", SmallFile); !errors.Is(err, ErrCrossesMount) {
				t.Errorf("root %s: a read through a bind mount: %q, %v; want ErrCrossesMount", r, b, err)
			}
			if err := RemoveIn(r, "/var/log/cloud-init.log", false); err == nil {
				t.Errorf("root %s: a removal through a bind mount succeeded", r)
			}
			if err := RemoveIn(r, "/var", true); !errors.Is(err, ErrCrossesMount) {
				t.Errorf("root %s: a tree removal over a mount: %v; want ErrCrossesMount", r, err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(host, "cloud-init.log")); err != nil || string(b) != "HOST SECRET" {
			t.Errorf("the host file was touched: %q, %v", b, err)
		}
	})
}
