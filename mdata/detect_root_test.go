package mdata

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Detect under a root never leads out of it: with the image's /native
// and /dev links to what stands for the host here, neither the host's
// zone socket nor its serial port is the transport.
func TestDetectStaysInRoot(t *testing.T) {
	host := t.TempDir()
	if err := os.MkdirAll(filepath.Join(host, ".zonecontrol"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(host, ".zonecontrol/metadata.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(filepath.Join(host, "ttyS1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/class/dmi/id"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sys/class/dmi/id/product_name"), []byte("SmartDC HVM\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"native", "dev"} {
		if err := os.Symlink(host, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	tr, why, err := Detect(root, "")
	if err != nil {
		// No transport is right: inside the image /dev/ttyS1 leads nowhere.
		t.Logf("Detect: %v", err)
		return
	}
	var where string
	switch tr := tr.(type) {
	case unixTransport:
		where = string(tr)
	case serialTransport:
		where = string(tr)
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(where))
	if err == nil && strings.HasPrefix(real, host) {
		t.Errorf("Detect = %T %q (%s): it leads out of the root to %s", tr, where, why, real)
	}
	if _, ok := tr.(unixTransport); ok {
		t.Errorf("Detect took the host's zone socket: %q", where)
	}
}
