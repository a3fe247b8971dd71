package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The image root is an input: whole-process cases of image check, image
// seal and identity show against an image that points at the host.

const hostSecretID = "host-secret-3b4d4e6f"

// hostFile is a file on the host, outside every image root.
func hostFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "instance-id")
	writeFile(t, p, hostSecretID+"\n", 0o644)
	return p
}

// An absolute link at the image's instance-id names a path inside the
// image, as in a chroot: no command prints the host file it points at.
func TestImageRootAbsoluteLinkNotFollowedOntoHost(t *testing.T) {
	secret := hostFile(t)
	for _, args := range [][]string{
		{"image", "check"},
		{"image", "check", "--json"},
		{"image", "seal", "--dry-run"},
		{"image", "seal"},
		{"identity", "show"},
		{"identity", "show", "--json"},
	} {
		root := imageRoot(t, kvmUUID)
		cloudInitRan(t, root, "template-1")
		id := filepath.Join(root, "var/lib/cloud/data/instance-id")
		os.Remove(id)
		if err := os.Symlink(secret, id); err != nil {
			t.Fatal(err)
		}
		r := runBinary(t, nil, append(args, "--root", root)...)
		if strings.Contains(r.stdout+r.stderr, hostSecretID) {
			t.Errorf("%q shows the host's file:\n%v", args, r)
		}
		if r.code == exitUsage {
			t.Errorf("%q: %v", args, r)
		}
		if readFile(t, secret) != hostSecretID+"\n" {
			t.Errorf("%q changed the host's file", args)
		}
	}
}

// A FIFO at the paths check, seal and identity show read must not block:
// each command ends (runBinary fails the test after a minute instead of
// hanging) and says what it found.
func TestImageRootFIFOsDoNotBlock(t *testing.T) {
	for _, args := range [][]string{{"image", "check"}, {"image", "seal"}, {"identity", "show"}} {
		root := imageRoot(t, kvmUUID)
		cloudInitRan(t, root, "template-1")
		for _, p := range []string{"var/lib/cloud/data/instance-id", "etc/machine-id", "etc/cloud/cloud.cfg", "var/lib/seedkeeper/identity.json", "lib/systemd/system/seedkeeper-boot.service"} {
			os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
			os.Remove(filepath.Join(root, p))
			if err := syscall.Mkfifo(filepath.Join(root, p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := runBinary(t, nil, append(args, "--root", root)...)
		if !strings.Contains(r.stdout+r.stderr, "FIFO") {
			t.Errorf("%q does not say a FIFO is in the way: %v", args, r)
		}
	}
}

// def_log_file: / names the image's root: seal lists it as skipped and
// removes nothing it does not list (it used to plan remove-tree /).
func TestImageSealLogFileIsTheRoot(t *testing.T) {
	root := imageRoot(t, kvmUUID)
	cloudInitRan(t, root, "template-1")
	writeFile(t, filepath.Join(root, "etc/cloud/cloud.cfg.d/99-log.cfg"), "def_log_file: /\n", 0o644)
	writeFile(t, filepath.Join(root, "var/log/journal/system.journal"), "keep\n", 0o644)
	writeFile(t, filepath.Join(root, "etc/cloud/cloud.cfg.d/98-out.cfg"), "output: {all: '| tee -a /var/log/journal'}\n", 0o644)
	for _, args := range [][]string{{"--dry-run"}, {}} {
		r := runBinary(t, nil, append([]string{"image", "seal", "--root", root}, args...)...)
		if strings.Contains(r.stdout, "remove-tree /:") || strings.Contains(r.stdout, "remove /:") {
			t.Fatalf("seal %q plans to remove the root: %v", args, r)
		}
		for _, want := range []string{"skip        /: the root itself", "skip        /var/log/journal: a directory, not removed"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("seal %q: %q missing: %v", args, want, r)
			}
		}
	}
	if readFile(t, filepath.Join(root, "var/log/journal/system.journal")) != "keep\n" {
		t.Error("a log directory lost its files")
	}
	if _, err := os.Stat(filepath.Join(root, "lib/systemd/system/seedkeeper-boot.service")); err != nil {
		t.Errorf("the image lost files: %v", err)
	}
}
