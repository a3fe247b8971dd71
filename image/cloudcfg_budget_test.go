package image

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// padCfg is a cloud.cfg.d file of n bytes, each under the per-file bound,
// that cloud-init reads as an empty mapping (comments).
func padCfg(n int) string {
	line := "# " + strings.Repeat("x", 77) + "\n"
	return strings.Repeat(line, n/len(line))
}

// So many files that each is small: the file count is bounded too.
func TestCloudConfigFileCountBound(t *testing.T) {
	m := freshImage(t)
	for i := range fsutil.ConfigSetFiles + 1 {
		m.write(fmt.Sprintf("%s/%04d.cfg", CloudCfgD, i), "{}\n")
	}
	if _, err := readCloudConfig(m.root()); !errors.Is(err, fsutil.ErrOverBudget) {
		t.Fatalf("readCloudConfig of %d files: %v", fsutil.ConfigSetFiles+2, err)
	}
}

// /etc/default/grub and grub.d are read within one aggregate bound: a
// ds=nocloud line in a file past it is not read (as a file past the
// per-file bound is not).
func TestGrubDefaultsAggregateBound(t *testing.T) {
	m := freshImage(t)
	m.write("/etc/default/grub.d/99-late.cfg", "GRUB_CMDLINE_LINUX=\"ds=nocloud;i=iid-late\"\n")
	in := &inspection{root: m.root()}
	if got := in.noCloudLines(); len(got) != 1 || got[0].file != "/etc/default/grub.d/99-late.cfg" {
		t.Fatalf("before the pads: %+v", got)
	}
	per := fsutil.SmallFile - 4096
	for i := range fsutil.ConfigSetTotal/per + 1 {
		m.write(fmt.Sprintf("/etc/default/grub.d/%02d-pad.cfg", i), padCfg(per))
	}
	if got := in.noCloudLines(); len(got) != 0 {
		t.Errorf("a file past the aggregate bound was read: %+v", got)
	}
}
