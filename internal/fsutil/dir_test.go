package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// /var/lib/seedkeeper and /run/systemd/network were
// followed when they were symbolic links.
func TestWriteFileRefusesALinkedDirectory(t *testing.T) {
	root := t.TempDir()
	elsewhere := filepath.Join(root, "elsewhere")
	os.Mkdir(elsewhere, 0o755)
	state := filepath.Join(root, "var/lib/seedkeeper")
	os.MkdirAll(filepath.Dir(state), 0o755)
	if err := os.Symlink(elsewhere, state); err != nil {
		t.Fatal(err)
	}
	// Same content already there: still refused, not "unchanged".
	os.WriteFile(filepath.Join(elsewhere, "status.json"), []byte("x"), 0o600)
	for _, data := range []string{"x", "y"} {
		_, err := WriteFile(filepath.Join(state, "status.json"), []byte(data), 0o600)
		if !errors.Is(err, ErrSymlink) {
			t.Errorf("writing %q through a linked directory: %v, want ErrSymlink", data, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(elsewhere, "status.json")); string(b) != "x" {
		t.Errorf("the link's target was written: %q", b)
	}
	if err := MkdirNoFollow(state, 0o755); !errors.Is(err, ErrSymlink) {
		t.Errorf("MkdirNoFollow(a link) = %v", err)
	}
	if err := NotLinked(state); !errors.Is(err, ErrSymlink) {
		t.Errorf("NotLinked(a link) = %v", err)
	}
	if err := NotLinked(filepath.Join(root, "absent")); err != nil {
		t.Errorf("NotLinked(absent) = %v", err)
	}
	if err := NotLinked(elsewhere); err != nil {
		t.Errorf("NotLinked(a directory) = %v", err)
	}
	d := filepath.Join(root, "run/systemd/network")
	if err := MkdirNoFollow(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Errorf("MkdirNoFollow did not make %s: %v", d, err)
	}
	f := filepath.Join(root, "file")
	os.WriteFile(f, nil, 0o600)
	if err := MkdirNoFollow(f, 0o755); err == nil {
		t.Errorf("MkdirNoFollow(a file) succeeded")
	}
}

// The receipt lock was created through a symbolic link
// (O_CREAT without O_NOFOLLOW), so root could create a file anywhere.
func TestOpenLockRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "etc-nologin")
	lock := filepath.Join(dir, "state", "receipt.json.lock")
	os.MkdirAll(filepath.Dir(lock), 0o755)
	os.Symlink(target, lock)
	if _, err := OpenLock(lock); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenLock through a dangling link = %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("the link's target was created")
	}
	os.Remove(lock)
	f, err := OpenLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, _ := os.Stat(lock); fi.Mode().Perm() != 0o600 {
		t.Errorf("lock mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := OpenLock(dir); err == nil {
		t.Errorf("OpenLock(a directory) succeeded")
	}
}
