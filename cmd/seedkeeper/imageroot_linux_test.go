//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// TestIntegrationImageSealBindMount: a host directory bind-mounted as the
// image's /var/log, and a host file bind-mounted over the image's
// instance-id: seal removes no host file and no command shows one.
func TestIntegrationImageSealBindMount(t *testing.T) {
	testenv.Integration(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount inside a test image: run `sudo make test`")
	}
	root := imageRoot(t, kvmUUID)
	cloudInitRan(t, root, "template-1")
	host := t.TempDir()
	writeFile(t, filepath.Join(host, "cloud-init.log"), hostSecretID+"\n", 0o644)
	secret := hostFile(t)
	mount := func(src, dst string) {
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("cannot bind-mount (%v): run as root with `sudo make test` where mounts are allowed", err)
		}
		t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
	}
	mount(host, filepath.Join(root, "var/log"))
	mount(secret, filepath.Join(root, "var/lib/cloud/data/instance-id"))
	for _, args := range [][]string{{"image", "check"}, {"identity", "show"}, {"image", "seal"}} {
		r := runBinary(t, nil, append(args, "--root", root)...)
		if strings.Contains(r.stdout+r.stderr, hostSecretID) {
			t.Errorf("%q shows a host file:\n%v", args, r)
		}
		if args[1] == "seal" && !strings.Contains(r.stdout, "skip        /var/log/cloud-init.log: a mount point inside the root") {
			t.Errorf("seal does not name the mounted log as skipped:\n%v", r)
		}
	}
	for _, f := range []string{filepath.Join(host, "cloud-init.log"), secret} {
		if readFile(t, f) != hostSecretID+"\n" {
			t.Errorf("the host's %s changed", f)
		}
	}
}
