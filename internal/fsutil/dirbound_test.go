package fsutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lowerDirBounds lowers the listing bound and the chunk size for a test.
func lowerDirBounds(t *testing.T, limit, chunk int) {
	t.Helper()
	oldLimit, oldChunk := maxDirEntries, dirChunk
	maxDirEntries, dirChunk = limit, chunk
	t.Cleanup(func() { maxDirEntries, dirChunk = oldLimit, oldChunk })
}

func fillDir(t *testing.T, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A listing read a whole directory, however many entries it held: it is
// read a chunk at a time and fails past maxDirEntries.
func TestReadDirInBounded(t *testing.T) {
	lowerDirBounds(t, 10, 3)
	root := t.TempDir()
	fillDir(t, filepath.Join(root, "at"), 10)
	fillDir(t, filepath.Join(root, "over"), 11)
	for _, r := range []string{root, ""} {
		at, over := "/at", "/over"
		if r == "" {
			at, over = filepath.Join(root, "at"), filepath.Join(root, "over")
		}
		ents, err := ReadDirIn(r, at)
		if err != nil || len(ents) != 10 || ents[0].Name() != "f0000" || ents[9].Name() != "f0009" {
			t.Errorf("root %q: a directory at the bound: %d entries, %v; want its 10, sorted", r, len(ents), err)
		}
		ents, err = ReadDirIn(r, over)
		if !errors.Is(err, ErrTooManyEntries) || !strings.Contains(err.Error(), over) || !strings.Contains(err.Error(), "10") || ents != nil {
			t.Errorf("root %q: a directory one over the bound: %d entries, %v; want ErrTooManyEntries naming the path and the bound", r, len(ents), err)
		}
	}
}

// A tree removal read each directory whole: it now reads and removes a
// chunk at a time, and still removes the whole tree.
func TestRemoveTreeInChunks(t *testing.T) {
	lowerDirBounds(t, 10, 4)
	check := func(t *testing.T, remove func(root string) error) {
		root := t.TempDir()
		tree := filepath.Join(root, "var/lib/tree")
		fillDir(t, tree, 25)
		fillDir(t, filepath.Join(tree, "sub"), 13)
		fillDir(t, filepath.Join(tree, "sub/deeper"), 5)
		if err := remove(root); err != nil {
			t.Fatalf("removing the tree: %v", err)
		}
		if _, err := os.Lstat(tree); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the tree is still there: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(root, "var/lib")); err != nil {
			t.Fatalf("its parent went too: %v", err)
		}
	}
	t.Run("RemoveIn", func(t *testing.T) {
		check(t, func(root string) error { return RemoveIn(root, "/var/lib/tree", true) })
	})
	t.Run("portable", func(t *testing.T) {
		check(t, func(root string) error { return portableRemove(root, "/var/lib/tree", true) })
	})
}
