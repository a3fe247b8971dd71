//go:build linux

package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make device nodes and bind mounts in a test image: run `sudo make test`")
	}
}

// bind mounts src on dst (a file or directory in the image) for the test.
func bind(t *testing.T, src, dst string) {
	t.Helper()
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount (%v): run as root with `sudo make test` where mounts are allowed", err)
	}
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
}

// TestIntegrationDeviceAtEveryPath: a device node (here /dev/zero's, a
// read that never ends) at any path check and seal touch is never read.
func TestIntegrationDeviceAtEveryPath(t *testing.T) {
	testenv.Integration(t)
	needRoot(t)
	for _, sys := range touchedPaths {
		t.Run(sys, func(t *testing.T) {
			m, secret := hostileImage(t)
			m.remove(sys)
			p := filepath.Join(m.dir, sys)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
				t.Skipf("cannot make a device node here (%v): run `sudo make test` on a file system that allows them", err)
			}
			checkAndSeal(t, m, secret)
		})
	}
}

// TestIntegrationBindMountAtEveryPath: a host file bind-mounted at any
// path check and seal touch is neither shown nor removed.
func TestIntegrationBindMountAtEveryPath(t *testing.T) {
	testenv.Integration(t)
	needRoot(t)
	for _, sys := range touchedPaths {
		t.Run(sys, func(t *testing.T) {
			m, secret := hostileImage(t)
			m.remove(sys)
			m.write(sys, "")
			bind(t, secret, filepath.Join(m.dir, sys))
			s := checkAndSeal(t, m, secret)
			if s == nil {
				return
			}
			for _, a := range s.Plan.Changes() {
				if a.Path == sys && a.Op != Write {
					t.Errorf("planned %s on a mount point", a.Op)
				}
			}
		})
	}
}

// TestIntegrationBindMountedDirectories: a host directory bind-mounted
// as the image's /var/log, or inside cloud-init's state, is never
// crossed: the log there is skipped with why, the tree's own files go, and
// the host's files stay.
func TestIntegrationBindMountedDirectories(t *testing.T) {
	testenv.Integration(t)
	needRoot(t)
	m, secret := hostileImage(t)
	host := t.TempDir()
	for _, f := range []string{"cloud-init.log", "cloud-init-output.log", "passwd"} {
		os.WriteFile(filepath.Join(host, f), []byte(hostSecret+"\n"), 0o644)
	}
	bind(t, host, filepath.Join(m.dir, "var/log"))
	m.write(paths.CloudDir+"/instances/"+templateID+"/mnt/.keep", "")
	bind(t, host, filepath.Join(m.dir, paths.CloudDir, "instances", templateID, "mnt"))
	s := checkAndSeal(t, m, secret)
	var skipped bool
	for _, a := range s.Plan.Actions {
		if a.Path == paths.CloudInitLog {
			skipped = a.Op == Skip && strings.Contains(a.Why, "mount")
		}
	}
	if !skipped {
		t.Errorf("the log behind the mount is not named as skipped: %v", s.Plan.Actions)
	}
	if s.Err == nil || !strings.Contains(s.Err.Error(), "mnt") || !strings.Contains(s.Err.Error(), "mount point") {
		t.Errorf("the mount inside the state tree is not reported: %v", s.Err)
	}
	for _, f := range []string{"cloud-init.log", "cloud-init-output.log", "passwd"} {
		if b, err := os.ReadFile(filepath.Join(host, f)); err != nil || string(b) != hostSecret+"\n" {
			t.Errorf("the host's %s was touched: %q, %v", f, b, err)
		}
	}
	if m.exists(paths.CloudDir + "/instances/" + templateID + "/user-data.txt") {
		t.Error("the tree's own files were left")
	}
}
