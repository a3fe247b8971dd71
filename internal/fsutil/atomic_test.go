package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f")

	changed, err := WriteFile(p, []byte("one"), 0o600)
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}

	changed, err = WriteFile(p, []byte("one"), 0o600)
	if err != nil || changed {
		t.Fatalf("same content: changed=%v err=%v, want no change", changed, err)
	}
	before, _ := os.Stat(p)

	changed, err = WriteFile(p, []byte("one"), 0o644)
	if err != nil || !changed {
		t.Fatalf("mode change: changed=%v err=%v", changed, err)
	}
	if after, _ := os.Stat(p); after.Mode().Perm() != 0o644 || os.SameFile(before, after) {
		t.Errorf("mode change did not replace the file with a 0644 one")
	}

	changed, err = WriteFile(p, []byte("two"), 0o644)
	if err != nil || !changed {
		t.Fatalf("new content: changed=%v err=%v", changed, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Errorf("content = %q, want two", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temp files left)", len(ents))
	}
}

func TestWriteFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, err := WriteFile(link, []byte("new"), 0o644)
	if !errors.Is(err, ErrSymlink) {
		t.Fatalf("err = %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("symlink target changed to %q", b)
	}
}
