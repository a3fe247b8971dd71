package datasource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Read goes on from what Detect found rather than looking again: a
// ds=nocloud line detection read is used even when the file has changed
// since (NoCloud used to read the serial, the command line and the disks
// twice).
func TestReadDetectedUsesWhatDetectFound(t *testing.T) {
	root := t.TempDir()
	cmdline := filepath.Join(root, "proc/cmdline")
	os.MkdirAll(filepath.Dir(cmdline), 0o755)
	os.WriteFile(cmdline, []byte("quiet ds=nocloud;i=iid-cmdline;h=node1\n"), 0o444)
	o := Options{Root: root, Sources: []string{SourceNoCloud}}

	d, cands, err := Detect(context.Background(), o)
	if err != nil || d.Source != SourceNoCloud || !d.Found || d.Reason != "ds=nocloud on the kernel command line" || len(cands) != 1 {
		t.Fatalf("Detect = %+v, %+v, %v", d, cands, err)
	}
	os.WriteFile(cmdline, []byte("quiet\n"), 0o444)
	md, err := ReadDetected(context.Background(), d, o)
	if err != nil || md.InstanceID != "iid-cmdline" {
		t.Fatalf("ReadDetected = %+v, %v; want the instance ID of the line detection read", md, err)
	}
	if _, err := Read(context.Background(), SourceNoCloud, o); !errors.Is(err, ErrNoSource) {
		t.Errorf("Read by name after the line went away: %v, want ErrNoSource (it reads afresh)", err)
	}
}

// The SmartOS candidate's reason is the transport detection's own
// explanation, not a cut of an error's text.
func TestDetectSmartOSReason(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys/class/dmi/id"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/class/dmi/id/product_name"), []byte("KVM\n"), 0o444)
	_, cands, err := Detect(context.Background(), Options{Root: root, Sources: []string{SourceSmartOS}})
	if !errors.Is(err, ErrNoSource) || len(cands) != 1 || cands[0].Found {
		t.Fatalf("Detect = %+v, %v", cands, err)
	}
	if r := cands[0].Reason; !strings.HasPrefix(r, "no metadata transport on this system: ") || !strings.Contains(r, `DMI product name "KVM" is not SmartDC`) {
		t.Errorf("reason %q", r)
	}
}
