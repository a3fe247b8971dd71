package agent_test

// The boot flow around a missing source: a template booted without its
// seed, then cloned or given the seed; a cidata CD-ROM that appears late;
// an mdata host that does not answer. The command's side (exit codes, what
// status prints) is tested in cmd/seedkeeper.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// cloudInitRanWithNone puts on root what Debian's cloud-init 22.4.2 wrote
// when it ran as DataSourceNone (testdata/identity/cloud-init-22.4-none):
// what a boot without a seed left before seedkeeper held cloud-init back.
func cloudInitRanWithNone(t *testing.T, root string) {
	t.Helper()
	copyTree(t, "../testdata/identity/cloud-init-22.4-none", root)
}

// copyTree copies a directory tree, symlinks as symlinks.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		d := filepath.Join(dst, rel)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, d)
		case e.IsDir():
			return os.MkdirAll(d, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := e.Info()
		return os.WriteFile(d, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reboot forgets what lives on tmpfs.
func reboot(t *testing.T, root string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, "run")); err != nil {
		t.Fatal(err)
	}
}

// bootNoSource boots root, which has no source, and checks that
// cloud-init is held back (the command's exit 1).
func bootNoSource(t *testing.T, root string) *commandBoot {
	t.Helper()
	b := bootCommand(t, root, "", agent.NetworkAuto)
	if !errors.Is(b.err, datasource.ErrNoSource) {
		t.Fatalf("boot without a seed: %v\n%s", b.err, b.log)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err != nil {
		t.Errorf("cloud-init is not held back on a boot without a source: %v", err)
	}
	return b
}

// wantFirstRun checks that boot handed cloud-init the reported ID as a
// new instance and that the status says why the placeholder was not kept.
func wantFirstRun(t *testing.T, root, reported string, placeholder bool) {
	t.Helper()
	if got := metaDataID(t, root); got != reported {
		t.Errorf("cloud-init is handed %q; want the reported %q", got, reported)
	}
	ci, _ := os.ReadFile(filepath.Join(root, "var/lib/cloud/data/instance-id"))
	if strings.TrimSpace(string(ci)) == reported {
		t.Fatalf("cloud-init already ran with %q: the test proves nothing", reported)
	}
	st := savedStatus(t, root)
	if id := st.Identity; id == nil || id.InstanceID != reported || id.ReportedID != reported || id.Rule != 6 || id.RuleName != "first-run" || id.PinnedID != reported {
		t.Errorf("decision: %+v", st.Identity)
	} else if placeholder && !strings.Contains(id.Explanation, `cloud-init ran before with "iid-datasource-none", but that is not an identity`) {
		t.Errorf("the status does not say why the placeholder was not kept: %s", id.Explanation)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err == nil {
		t.Error("cloud-init is still held back on a boot with a source")
	}
}

// A template booted once without its cloud-init drive,
// then cloned; the clone boots with a Proxmox seed and must be a new
// instance with the reported ID (user-data applied, its own SSH host
// keys), never the placeholder iid-datasource-none.
func TestBootTemplateWithoutSeedThenCloned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ranNone bool // cloud-init ran as DataSourceNone on the template
	}{
		{"cloud-init held back on the template", false},
		{"cloud-init ran as DataSourceNone on the template", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			template := machineRoot(t, uuidVM, nil)
			bootNoSource(t, template)
			if tc.ranNone {
				cloudInitRanWithNone(t, template)
			}
			clone := machineRoot(t, uuidClone, nil)
			copyTree(t, filepath.Join(template, "var"), filepath.Join(clone, "var"))
			reported := attachProxmox(t, clone, "192.0.2.53")
			bootCommandOK(t, clone, agent.NetworkAuto)
			wantFirstRun(t, clone, reported, tc.ranNone)
		})
	}
}

// The same disk first boots without the cidata CD-ROM,
// then with it: the second boot applies the seed as a new instance.
func TestBootSameDiskWithoutThenWithSeed(t *testing.T) {
	for _, ranNone := range []bool{false, true} {
		root := machineRoot(t, uuidVM, nil)
		bootNoSource(t, root)
		if ranNone {
			cloudInitRanWithNone(t, root)
		}
		reboot(t, root)
		reported := attachProxmox(t, root, "192.0.2.53")
		bootCommandOK(t, root, agent.NetworkAuto)
		wantFirstRun(t, root, reported, ranNone)
		// cloud-init now runs with it; the next boot keeps it.
		writeFile(t, filepath.Join(root, "var/lib/cloud/data/instance-id"), reported+"\n")
		writeFile(t, filepath.Join(root, "var/lib/cloud/instances", reported, "datasource"),
			"DataSourceNoCloud: DataSourceNoCloud [seed=/var/lib/cloud/seed/nocloud][dsmode=net]\n")
		os.Remove(filepath.Join(root, "var/lib/cloud/instance"))
		if err := os.Symlink("/var/lib/cloud/instances/"+reported, filepath.Join(root, "var/lib/cloud/instance")); err != nil {
			t.Fatal(err)
		}
		reboot(t, root)
		bootCommandOK(t, root, agent.NetworkAuto)
		if got, st := metaDataID(t, root), savedStatus(t, root); got != reported || st.Identity == nil || st.Identity.RuleName != "keep" {
			t.Errorf("third boot: %q, %+v; want %q kept", got, st.Identity, reported)
		}
		// The CD-ROM is detached: cloud-init runs with the seed written
		// before, not held back.
		os.RemoveAll(filepath.Join(root, "dev"))
		os.RemoveAll(filepath.Join(root, "sys/class/block"))
		reboot(t, root)
		b := bootCommand(t, root, "", agent.NetworkAuto)
		if !errors.Is(b.err, datasource.ErrNoSource) || !strings.Contains(b.log.String(), "cloud-init runs with the seed an earlier boot wrote") {
			t.Errorf("boot after the CD-ROM was detached: %v\n%s", b.err, b.log)
		}
		if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err == nil {
			t.Error("cloud-init held back although the seed of an earlier boot is there")
		}
	}
}

// startBoot runs Boot as bootCommand does, in the background: its log and
// notifications can be read at once, its status and error once done is
// closed. The boot is cancelled and awaited when the test ends.
func startBoot(t *testing.T, root, cfgPath string) (b *commandBoot, done <-chan struct{}) {
	t.Helper()
	e, b := commandEnv(root, cfgPath)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		b.st, b.err = agent.Boot(ctx, e, agent.BootOptions{Network: agent.NetworkAuto})
	}()
	t.Cleanup(func() { cancel(); <-ch })
	return b, ch
}

// The cidata CD-ROM appears after boot first looked (its
// driver loads from the real root while udev works through coldplug).
// Boot waits for the udev queue to drain, looks again and finds it: the
// seed is applied on this boot, cloud-init is not held back.
func TestBootWaitsForLateCDROM(t *testing.T) {
	root := machineRoot(t, uuidVM, map[string]string{"run/udev/control": "", "run/udev/queue": ""})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, "boot: {device_wait: 2m}\n")
	b, done := startBoot(t, root, cfg)
	const waiting = "STATUS=no metadata source yet; waiting for late seed devices"
	waitFor(t, waiting, func() bool { return b.notify.has(waiting) })
	reported := attachProxmox(t, root, "192.0.2.53")                         // sr0 appears
	if err := os.Remove(filepath.Join(root, "run/udev/queue")); err != nil { // udev is done with it
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("boot did not finish after the queue drained\n%s", b.log)
	}
	if b.err != nil {
		t.Fatalf("boot: %v\n%s", b.err, b.log)
	}
	if got := metaDataID(t, root); got != reported {
		t.Errorf("meta-data ID %q; want %q", got, reported)
	}
	if !strings.Contains(b.log.String(), `msg="no metadata source at first; late seed devices: the udev queue drained" waited_for="the udev queue to drain (/run/udev/queue)"`) {
		t.Errorf("boot does not log what it waited for:\n%s", b.log)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err == nil {
		t.Error("cloud-init held back although the seed was found")
	}
	if st := savedStatus(t, root); st.Outcome != "ok" || !strings.Contains(st.DeviceWait, "the udev queue drained") {
		t.Errorf("status: outcome %q, device wait %q", st.Outcome, st.DeviceWait)
	}
}

// A boot that finds its source at once does not wait, however busy udev
// is.
func TestBootNoWaitWithSource(t *testing.T) {
	root := machineRoot(t, uuidVM, map[string]string{"run/udev/control": "", "run/udev/queue": ""}) // never drains
	attachProxmox(t, root, "192.0.2.53")
	b := bootCommandOK(t, root, agent.NetworkAuto)
	if strings.Contains(b.log.String(), "late seed devices") || savedStatus(t, root).DeviceWait != "" {
		t.Errorf("boot waited although the source was there:\n%s", b.log)
	}
}

// A detected mdata host that does not answer is waited for without limit
// (cloud-init LP #1667735: the hang while metadata is down). Each progress
// line goes to systemd as STATUS with EXTEND_TIMEOUT_USEC, which the unit's
// TimeoutStartSec relies on; the boot completes once the host answers.
func TestBootWaitsForSilentMdataHost(t *testing.T) {
	h := mdatatest.NewHost(smartosStore())
	t.Cleanup(func() { h.Close() })
	dir, err := os.MkdirTemp("", "sk-md-") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "metadata.sock")
	if _, err := h.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	transport := "unix:" + sock
	h.Down()
	t.Setenv(mdata.EnvTransport, transport)
	root := kvmRoot(t, map[string]string{"sys/class/dmi/id/product_name": "SmartDC HVM\n", "sys/class/dmi/id/sys_vendor": "Joyent\n"})
	if err := os.Remove(filepath.Join(root, "sys/class/dmi/id/product_uuid")); err != nil {
		t.Fatal(err)
	}
	b, done := startBoot(t, root, "")

	extend := fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", agent.WaitExtension.Microseconds())
	waitFor(t, extend, func() bool { return b.notify.has(extend) })
	if !slices.ContainsFunc(b.notify.lines(), func(s string) bool {
		return strings.HasPrefix(s, "STATUS=waiting for the metadata host on "+transport)
	}) {
		t.Errorf("no STATUS line about the wait: %q", b.notify.lines())
	}
	h.Up()
	select {
	case <-done:
		if b.err != nil {
			t.Fatalf("boot after the host came back: %v\n%s", b.err, b.log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("boot did not finish after the host came back\n%s", b.log)
	}
	if metaDataID(t, root) != mdatatest.SampleUUID || !b.notify.has("READY=1") {
		t.Errorf("meta-data ID %q, notify %q", metaDataID(t, root), b.notify.lines())
	}
}
