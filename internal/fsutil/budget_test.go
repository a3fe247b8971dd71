package fsutil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A budget takes files up to its total exactly, and refuses the byte
// and the file past it, naming the file, the set and the bound.
func TestBudgetBoundary(t *testing.T) {
	root := t.TempDir()
	for name, n := range map[string]int{"a": 6, "b": 4, "c": 1} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	b := NewBudget("the set", 10, 3)
	for _, n := range []string{"a", "b"} {
		if _, err := b.ReadFileIn(ctx, root, "/"+n, SmallFile); err != nil {
			t.Fatalf("%s within the total: %v", n, err)
		}
	}
	_, err := b.ReadFileIn(ctx, root, "/c", SmallFile)
	if !errors.Is(err, ErrOverBudget) || !strings.Contains(err.Error(), "/c") || !strings.Contains(err.Error(), "the set") || !strings.Contains(err.Error(), "10 bytes") {
		t.Errorf("one byte past the total: %v", err)
	}

	b = NewBudget("the set", 100, 2)
	for _, n := range []string{"a", "b"} {
		if _, err := b.ReadFileIn(ctx, root, "/"+n, SmallFile); err != nil {
			t.Fatalf("%s within the count: %v", n, err)
		}
	}
	if _, err := b.ReadFileIn(ctx, root, "/c", SmallFile); !errors.Is(err, ErrOverBudget) || !strings.Contains(err.Error(), "2 files") {
		t.Errorf("one file past the count: %v", err)
	}

	// A file over its own limit is that error, not the budget's, and
	// costs the budget nothing.
	b = NewBudget("the set", 100, 2)
	if _, err := b.ReadFileIn(ctx, root, "/a", 5); !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrOverBudget) {
		t.Errorf("a file over its own limit: %v", err)
	}
	if _, err := b.ReadFileIn(ctx, root, "/a", 6); err != nil {
		t.Errorf("after a refused file: %v", err)
	}
}
