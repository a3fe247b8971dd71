package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/alloctest"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// cfgFlood is an image whose cloud.cfg.d holds 40 files each within the
// limits of one document (30,000 values, counted twice by the scan) and a last one that sets the
// default user: every file fits on its own, all of them do not.
func cfgFlood(t testing.TB) sysroot.Root {
	root := t.TempDir()
	d := filepath.Join(root, "etc/cloud/cloud.cfg.d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	big := "packages: [" + strings.Repeat("a,", 30000) + "a]\n"
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%02d-big.cfg", i)), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "99-user.cfg"), []byte("system_info: {default_user: {name: admin}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return sysroot.Root(root)
}

// cloud.cfg and cloud.cfg.d are bounded together as one document is: the
// check holds every file's decoded values at once, so 40 files at the
// limits of one cost 40 times it. The files past the bound are errors
// of their own, naming it.
func TestReadCloudConfigAggregateBound(t *testing.T) {
	root := cfgFlood(t)
	var cc cloudConfig
	var err error
	n := alloctest.Bytes(func() { cc, err = readCloudConfig(root) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files read, %d bytes allocated", len(cc), n)
	if n > 24<<20 {
		t.Errorf("reading cloud.cfg.d allocated %d bytes; want what one document at the limits costs", n)
	}
	var over int
	for _, f := range cc {
		if errors.Is(f.Err, yamlx.ErrTooLarge) && strings.Contains(f.Err.Error(), "together") {
			over++
		}
	}
	if over < 30 || cc[0].Err != nil {
		t.Errorf("%d files refused as over the aggregate bound, the first %v; want the first read and the rest refused", over, cc[0].Err)
	}
}
