package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// RemoveInIfSum removes a file only while it holds what was read: one
// changed since, past the limit, swapped for a link, or never read is
// left with ErrChanged; one gone says fs.ErrNotExist.
func TestRemoveInIfSum(t *testing.T) {
	root := t.TempDir()
	put := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "read\n")
	put("b", "edited\n")
	put("c", "read\n")
	if err := os.Symlink("a", filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	read := Sum([]byte("read\n"))
	for _, tc := range []struct {
		name, sum string
		limit     int64
		want      error
		gone      bool
	}{
		{"a", read, 1 << 20, nil, true},
		{"b", read, 1 << 20, ErrChanged, false},
		{"c", read, 2, ErrChanged, false},
		{"d", read, 1 << 20, ErrChanged, false},
		{"c", "", 1 << 20, ErrChanged, false},
		{"e", read, 1 << 20, fs.ErrNotExist, true},
	} {
		err := RemoveInIfSum(root, "/"+tc.name, tc.sum, tc.limit)
		if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s (sum %q, limit %d): %v, want %v", tc.name, tc.sum, tc.limit, err, tc.want)
		}
		if _, err := os.Lstat(filepath.Join(root, tc.name)); (err == nil) == tc.gone {
			t.Errorf("%s: gone %v, want %v", tc.name, err != nil, tc.gone)
		}
	}
}
