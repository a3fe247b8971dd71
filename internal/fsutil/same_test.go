package fsutil

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/alloctest"
)

func TestSameFileIn(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16+3) // more than one read
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, big, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	changed := bytes.Clone(big)
	changed[len(changed)-1] ^= 1
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"the same bytes", big, true},
		{"the last byte differs", changed, false},
		{"one byte shorter", big[:len(big)-1], false},
		{"one byte longer", append(bytes.Clone(big), 'x'), false},
		{"empty", []byte{}, false},
	} {
		if got, err := SameFileIn(ctx, "", p, tc.data); err != nil || got != tc.want {
			t.Errorf("%s: SameFileIn = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := SameFileIn(ctx, "", empty, nil); err != nil || !got {
		t.Errorf("an empty file and no data: %v, %v", got, err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if _, err := SameFileIn(ctx, "", link, big); !errors.Is(err, ErrSymlink) {
		t.Errorf("through a link: %v, want ErrSymlink", err)
	}
	if _, err := SameFileIn(ctx, "", dir, nil); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a directory: %v, want ErrNotRegular", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := SameFileIn(cancelled, "", p, big); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

// Comparing a file of many MiB costs one 64 KiB read buffer, not a copy
// of the file: boot compares what it is about to write (a 16 MiB value)
// with what is on disk.
func TestSameFileInHoldsNoCopy(t *testing.T) {
	data := bytes.Repeat([]byte{0xa5}, 8<<20)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var same bool
	var err error
	n := alloctest.Bytes(func() { same, err = SameFileIn(context.Background(), "", p, data) })
	if err != nil || !same {
		t.Fatalf("SameFileIn = %v, %v", same, err)
	}
	if n > 1<<20 {
		t.Errorf("comparing an 8 MiB file allocated %d bytes, want under 1 MiB", n)
	}
}
