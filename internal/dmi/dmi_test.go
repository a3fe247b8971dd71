package dmi

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

func TestRead(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, Dir), 0o755)
	os.WriteFile(filepath.Join(root, Dir, "product_uuid"), []byte(" 4211-ABCD \n"), 0o444)
	r := sysroot.Root(root)
	if v, err := Read(r, "product_uuid"); v != " 4211-ABCD" || err != nil {
		t.Errorf("Read = %q, %v; want the value right-trimmed", v, err)
	}
	if v := Value(r, "product_uuid"); v != "4211-ABCD" {
		t.Errorf("Value = %q, want it trimmed", v)
	}
	if _, err := Read(r, "product_serial"); !errors.Is(err, fs.ErrNotExist) || err.Error() == "" {
		t.Errorf("Read of a missing attribute: %v, want ErrNotExist", err)
	}
	if v := Value(r, "product_serial"); v != "" {
		t.Errorf("Value of a missing attribute = %q", v)
	}
}
