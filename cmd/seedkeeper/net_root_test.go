package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// net plan --root reads (and apply writes) the receipt under the root
// only: with the image's /var/lib a link out of it, the receipt found
// there (here one that cannot be parsed) is neither read nor replaced,
// and the command says which link it refused.
func TestNetReceiptStaysInRoot(t *testing.T) {
	good := filepath.Join(t.TempDir(), "net.yaml")
	os.WriteFile(good, []byte("version: 2\nethernets: {}\n"), 0o644)
	host := t.TempDir()
	receipt := filepath.Join(host, "lib/seedkeeper/network-receipt.json")
	os.MkdirAll(filepath.Dir(receipt), 0o755)
	os.WriteFile(receipt, []byte("the host's receipt\n"), 0o644)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "var"), 0o755)
	if err := os.Symlink(filepath.Join(host, "lib"), filepath.Join(root, "var/lib")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runNetCapture("plan", "--config", good, "--root", root, "--drivers", "veth")
	if code == 0 || strings.Contains(stderr, "reading network receipt") || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("net plan = %d\nstdout %q\nstderr %q\nwant a refusal naming the link, the host's receipt unread", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(receipt); string(b) != "the host's receipt\n" {
		t.Errorf("the host's receipt is now %q", b)
	}
}
