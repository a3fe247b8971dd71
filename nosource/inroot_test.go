package nosource

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/nohang"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// linkedOut makes root's dir a link to a directory outside root and
// returns that directory (the "host" the link leads to).
func linkedOut(t *testing.T, root sysroot.Root, dir string) string {
	t.Helper()
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Dir(root.Path(dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, root.Path(dir)); err != nil {
		t.Fatal(err)
	}
	return out
}

// An image whose /run is a link out of the root: the gate must not write
// its marker or switch cloud-init's status files outside the image.
func TestHoldCloudInitStaysInRoot(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	host := linkedOut(t, root, "/run")
	// The host's own cloud-init status, which the gate must not touch.
	if err := os.MkdirAll(filepath.Join(host, "cloud-init"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "cloud-init/enabled"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Refusing is right (the image's /run leads out of it); writing
	// through the link is not.
	if _, err := HoldCloudInit(root, t0); err != nil {
		t.Logf("HoldCloudInit: %v", err)
	}
	for _, p := range []string{"seedkeeper/no-source", "cloud-init/disabled"} {
		if _, err := os.Lstat(filepath.Join(host, p)); err == nil {
			t.Errorf("%s written outside the root, through the link at /run", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(host, "cloud-init/enabled")); err != nil {
		t.Errorf("the host's cloud-init/enabled was removed through the link at /run: %v", err)
	}
	if err := Release(root); err != nil {
		t.Logf("Release: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(host, "cloud-init/enabled")); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// The late-source record under a /run linked out of the root.
func TestRecordLateStaysInRoot(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	host := linkedOut(t, root, "/run")
	if err := RecordLate(root, "a seed appeared"); err != nil {
		t.Logf("RecordLate: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(host, "seedkeeper/late-source")); err == nil {
		t.Error("the late-source record was written outside the root, through the link at /run")
	}
}

// A seed found only through a link out of the root is not the image's.
func TestSeedPresentStaysInRoot(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	host := linkedOut(t, root, "/var/lib/cloud")
	for _, f := range []string{"meta-data", "user-data"} {
		p := filepath.Join(host, "seed/nocloud", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The image's /var/lib/cloud now is an absolute link: inside the root
	// it names a directory that does not exist.
	if d := seedPresent(root); d != "" {
		t.Errorf("seedPresent = %q: a seed outside the root was taken for the image's", d)
	}
}

// A FIFO where udevd's comm should be: the wait refuses it at once,
// never blocks on it.
func TestWaitForDevicesProcFIFO(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	fakeProc(t, root, "systemd")
	if err := os.MkdirAll(root.Path("/proc/7"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(root.Path("/proc/7/comm"), 0o644); err != nil {
		t.Fatal(err)
	}
	put(t, root, udevControl, "")
	var w Waited
	nohang.Run(t, "WaitForDevices with a FIFO at /proc/7/comm", func() {
		w = WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: time.Minute, clock: newStepClock()})
	})
	if w.Drained {
		t.Errorf("wait = %+v: a FIFO was taken for udevd", w)
	}
}
