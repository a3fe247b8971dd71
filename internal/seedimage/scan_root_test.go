package seedimage

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/nohang"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testseed"
)

// The scan under --root reads the image's devices only: a /dev linked out
// of the root (here to a directory holding a cidata ISO), a device node
// linked to a file outside, and a FIFO are none of them, and the FIFO is
// refused without blocking.
func TestScanStaysInRoot(t *testing.T) {
	iso := filepath.Join(t.TempDir(), "sr0")
	testseed.Gunzip(t, "../../testdata/nocloud/cloud-localds.iso.gz", iso)
	if found, _, err := Scan(sysroot.Root(attached(t, "sr0", iso)), "cidata"); err != nil || len(found) != 1 {
		t.Fatalf("control: the ISO attached inside the root: %v, %v", found, err)
	}

	linkedDev := attached(t, "sr0", iso)
	os.RemoveAll(filepath.Join(linkedDev, "dev"))
	if err := os.Symlink(filepath.Dir(iso), filepath.Join(linkedDev, "dev")); err != nil {
		t.Fatal(err)
	}
	linkedNode := attached(t, "sr0", iso)
	os.Remove(filepath.Join(linkedNode, "dev/sr0"))
	if err := os.Symlink(iso, filepath.Join(linkedNode, "dev/sr0")); err != nil {
		t.Fatal(err)
	}
	fifo := attached(t, "sr0", iso)
	os.Remove(filepath.Join(fifo, "dev/sr0"))
	if err := syscall.Mkfifo(filepath.Join(fifo, "dev/sr0"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, root := range map[string]string{"a linked /dev": linkedDev, "a linked /dev/sr0": linkedNode, "a FIFO at /dev/sr0": fifo} {
		var found []Device
		nohang.Run(t, "Scan with "+name, func() {
			found, _, _ = Scan(sysroot.Root(root), "cidata")
		})
		if len(found) != 0 {
			t.Errorf("%s: found %+v outside the root", name, found)
		}
	}
	// The image itself, opened under the root, is refused the same way.
	if im, err := OpenIn(sysroot.Root(linkedNode), "/dev/sr0"); err == nil {
		im.Close()
		t.Error("OpenIn followed /dev/sr0 out of the root")
	}
}

// attached returns a root with the image at img as its block device name.
func attached(t *testing.T, name, img string) string {
	root := t.TempDir()
	testseed.Attach(t, root, name, img)
	return root
}
