package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/nohang"
)

// An open for an image or a block device (a seed device) takes a regular
// file, refuses a FIFO without blocking on it, and never follows a link
// out of the root.
func TestOpenInBlockDevice(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, _ := hostile(t)
		f, err := OpenIn(root, "/etc/inside", Regular|BlockDevice)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		nohang.Run(t, "OpenIn of a FIFO", func() {
			if f, err := OpenIn(root, "/fifo", Regular|BlockDevice); !errors.Is(err, ErrNotRegular) {
				if f != nil {
					f.Close()
				}
				t.Errorf("FIFO: %v, want ErrNotRegular", err)
			}
		})
		for _, p := range []string{"/abs", "/up", "/var/lib/cloud/data/hostdir/secret"} {
			if f, err := OpenIn(root, p, Regular|BlockDevice); err == nil {
				f.Close()
				t.Errorf("%s: opened out of the root", p)
			}
		}
		if _, err := OpenIn(root, "/dev/null", BlockDevice); err == nil {
			t.Error("/dev/null under the root: opened")
		}
	})
	// The machine's own character device is no block device.
	if f, err := OpenIn("", "/dev/null", Regular|BlockDevice); !errors.Is(err, ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Errorf("/dev/null: %v, want ErrNotRegular", err)
	}
}

// RemoveEmptyDirIn removes an empty directory only, never through a link,
// and leaves a full one.
func TestRemoveEmptyDirIn(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, secret := hostile(t)
		if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
			t.Fatal(err)
		}
		if gone, err := RemoveEmptyDirIn(root, "/empty"); !gone || err != nil {
			t.Errorf("empty: %v, %v", gone, err)
		}
		if gone, err := RemoveEmptyDirIn(root, "/etc"); gone || err != nil {
			t.Errorf("full: %v, %v", gone, err)
		}
		if gone, err := RemoveEmptyDirIn(root, "/missing"); gone || err != nil {
			t.Errorf("missing: %v, %v", gone, err)
		}
		if _, err := RemoveEmptyDirIn(root, "/fifo"); err == nil {
			t.Error("a FIFO removed as a directory")
		}
		// The host directory is emptied first: only the link may go.
		host := filepath.Dir(secret)
		os.Remove(secret)
		if gone, err := RemoveEmptyDirIn(root, "/var/lib/cloud/data/hostdir"); gone || err == nil {
			t.Errorf("a link to a directory: %v, %v", gone, err)
		}
		if _, err := os.Stat(host); err != nil {
			t.Errorf("the directory out of the root: %v", err)
		}
	})
}

// NotLinkedIn refuses a link to a directory of seedkeeper's, and a path
// that is no directory; a missing one is fine.
func TestNotLinkedIn(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, _ := hostile(t)
		if err := NotLinkedIn(root, "/var/lib/cloud/data/hostdir"); !errors.Is(err, ErrSymlink) {
			t.Errorf("linked: %v", err)
		}
		if err := NotLinkedIn(root, "/etc/inside"); err == nil {
			t.Error("a file taken for a directory")
		}
		if err := NotLinkedIn(root, "/etc"); err != nil {
			t.Errorf("/etc: %v", err)
		}
		if err := NotLinkedIn(root, "/nowhere/at/all"); err != nil {
			t.Errorf("missing: %v", err)
		}
		if err := SyncDirIn(root, "/etc"); err != nil {
			t.Errorf("SyncDirIn: %v", err)
		}
		if err := SyncDirIn(root, "/fifo"); err == nil {
			t.Error("SyncDirIn of a FIFO")
		}
	})
}

// MkdirIn makes a directory with exactly its mode, never through a link,
// and leaves an existing one's mode unless asked.
func TestMkdirIn(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, secret := hostile(t)
		made, err := MkdirIn(root, "/new/private", 0o700, false)
		if err != nil || !made {
			t.Fatalf("MkdirIn = %v, %v", made, err)
		}
		if fi, err := os.Stat(filepath.Join(root, "new/private")); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("made %v, %v; want 0700", fi.Mode(), err)
		}
		os.Chmod(filepath.Join(root, "new/private"), 0o755)
		if made, err := MkdirIn(root, "/new/private", 0o700, false); made || err != nil {
			t.Errorf("again: %v, %v", made, err)
		}
		if fi, _ := os.Stat(filepath.Join(root, "new/private")); fi.Mode().Perm() != 0o755 {
			t.Errorf("mode changed without setPerm: %v", fi.Mode())
		}
		if _, err := MkdirIn(root, "/new/private", 0o700, true); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(root, "new/private")); fi.Mode().Perm() != 0o700 {
			t.Errorf("mode not set with setPerm: %v", fi.Mode())
		}
		if _, err := MkdirIn(root, "/var/lib/cloud/data/hostdir/made", 0o755, false); err == nil {
			t.Error("made a directory through a link out of the root")
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(secret), "made")); err == nil {
			t.Error("a directory was made out of the root")
		}
		if _, err := MkdirIn(root, "/fifo", 0o755, false); err == nil {
			t.Error("a FIFO taken for a directory")
		}
	})
}

// RenameIn renames within one directory, never through a link on the way.
func TestRenameIn(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, secret := hostile(t)
		if err := RenameIn(root, "/etc/inside", "/etc/renamed"); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "etc/renamed")); err != nil || string(b) != "inside" {
			t.Errorf("renamed: %q, %v", b, err)
		}
		if err := RenameIn(root, "/var/lib/cloud/data/hostdir/secret", "/var/lib/cloud/data/hostdir/gone"); err == nil {
			t.Error("renamed through a link out of the root")
		}
		if _, err := os.Stat(secret); err != nil {
			t.Errorf("the file out of the root: %v", err)
		}
		if err := RenameIn(root, "/etc/renamed", "/srv/elsewhere"); err == nil {
			t.Error("renamed across directories")
		}
	})
}
