package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cloudInitRanWithNone puts on root what Debian's cloud-init 22.4.2 wrote
// when it ran as DataSourceNone (testdata/identity/cloud-init-22.4-none):
// what a boot without a seed left before seedkeeper held cloud-init back.
func cloudInitRanWithNone(t *testing.T, root string) {
	t.Helper()
	if err := copyTreeT("../../testdata/identity/cloud-init-22.4-none", root); err != nil {
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

func bootNoSource(t *testing.T, root string) procResult {
	t.Helper()
	r := runBinary(t, nil, "boot", "--root", root)
	if r.code != exitNoSource {
		t.Fatalf("boot without a seed: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err != nil {
		t.Errorf("cloud-init is not held back on a boot without a source: %v", err)
	}
	return r
}

// wantFirstRun checks that boot handed cloud-init the reported ID as a
// new instance and that status says why the placeholder was not kept.
func wantFirstRun(t *testing.T, root, reported string, placeholder bool) {
	t.Helper()
	if got := metaDataID(t, root); got != reported {
		t.Errorf("cloud-init is handed %q; want the reported %q", got, reported)
	}
	ci := strings.TrimSpace(readFileIfAny(filepath.Join(root, "var/lib/cloud/data/instance-id")))
	if ci == reported {
		t.Fatalf("cloud-init already ran with %q: the test proves nothing", reported)
	}
	st := readStatus(t, root)
	if st.Identity == nil || st.Identity.RuleName != "first-run" || st.Identity.PinnedID != reported {
		t.Errorf("decision: %+v", st.Identity)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err == nil {
		t.Error("cloud-init is still held back on a boot with a source")
	}
	s := runBinary(t, nil, "status", "--root", root)
	want := "Instance ID: " + reported + " (reported " + reported + "; rule 6, first-run)"
	if !strings.Contains(s.stdout, want) {
		t.Errorf("status lacks %q:\n%s", want, s.stdout)
	}
	if placeholder && !strings.Contains(s.stdout, `cloud-init ran before with "iid-datasource-none", but that is not an identity`) {
		t.Errorf("status does not say why the placeholder was not kept:\n%s", s.stdout)
	}
}

func readFileIfAny(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
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
			template := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
			bootNoSource(t, template)
			if tc.ranNone {
				cloudInitRanWithNone(t, template)
			}
			clone := scratchRoot(t, kvmProduct, kvmVendor, "7D1A0C44-5B6E-4F2A-8E3D-1C9B0A7F6E5D")
			if err := copyTreeT(filepath.Join(template, "var"), filepath.Join(clone, "var")); err != nil {
				t.Fatal(err)
			}
			reported := attachProxmoxISO(t, clone, "192.0.2.53")
			bootOK(t, clone)
			wantFirstRun(t, clone, reported, tc.ranNone)
		})
	}
}

// The same disk first boots without the cidata CD-ROM,
// then with it: the second boot applies the seed as a new instance.
func TestBootSameDiskWithoutThenWithSeed(t *testing.T) {
	for _, ranNone := range []bool{false, true} {
		root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
		bootNoSource(t, root)
		if ranNone {
			cloudInitRanWithNone(t, root)
		}
		reboot(t, root)
		reported := attachProxmoxISO(t, root, "192.0.2.53")
		bootOK(t, root)
		wantFirstRun(t, root, reported, ranNone)
		// cloud-init now runs with it; the next boot keeps it.
		writeFile(t, filepath.Join(root, "var/lib/cloud/data/instance-id"), reported+"\n", 0o644)
		writeFile(t, filepath.Join(root, "var/lib/cloud/instances", reported, "datasource"),
			"DataSourceNoCloud: DataSourceNoCloud [seed=/var/lib/cloud/seed/nocloud][dsmode=net]\n", 0o644)
		os.Remove(filepath.Join(root, "var/lib/cloud/instance"))
		if err := os.Symlink("/var/lib/cloud/instances/"+reported, filepath.Join(root, "var/lib/cloud/instance")); err != nil {
			t.Fatal(err)
		}
		reboot(t, root)
		bootOK(t, root)
		if got, st := metaDataID(t, root), readStatus(t, root); got != reported || st.Identity == nil || st.Identity.RuleName != "keep" {
			t.Errorf("third boot: %q, %+v; want %q kept", got, st.Identity, reported)
		}
		// The CD-ROM is detached: cloud-init runs with the seed written
		// before, not held back.
		os.RemoveAll(filepath.Join(root, "dev"))
		os.RemoveAll(filepath.Join(root, "sys/class/block"))
		reboot(t, root)
		r := runBinary(t, nil, "boot", "--root", root)
		if r.code != exitNoSource || !strings.Contains(r.stderr, "cloud-init runs with the seed an earlier boot wrote") {
			t.Errorf("boot after the CD-ROM was detached: %v", r)
		}
		if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err == nil {
			t.Error("cloud-init held back although the seed of an earlier boot is there")
		}
	}
}

// copyTreeT copies a directory tree, symlinks as symlinks.
func copyTreeT(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
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
}

// The cidata CD-ROM appears after boot first looked (its
// driver loads from the real root while udev works through coldplug).
// Boot waits for the udev queue to drain, looks again and finds it: the
// seed is applied on this boot, cloud-init is not held back.
func TestBootWaitsForLateCDROM(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	writeFile(t, filepath.Join(root, "run/udev/control"), "", 0o644)
	writeFile(t, filepath.Join(root, "run/udev/queue"), "", 0o644)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, "boot: {device_wait: 2m}\n", 0o644)
	notify := newNotifySocket(t)
	cmd := exec.Command(seedkeeperBinary(t), "boot", "--root", root, "--config", cfg)
	cmd.Env = testEnv([]string{"NOTIFY_SOCKET=" + notify.path})
	log := &syncBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	const waiting = "STATUS=no metadata source yet; waiting for late seed devices"
	waitFor(t, waiting, func() bool { return notify.has(waiting) })
	reported := attachProxmoxISO(t, root, "192.0.2.53") // sr0 appears
	os.Remove(filepath.Join(root, "run/udev/queue"))    // udev is done with it
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("boot did not finish after the queue drained\n%s", log)
	}
	if waitErr != nil {
		t.Fatalf("boot: %v\n%s", waitErr, log)
	}
	if got := metaDataID(t, root); got != reported {
		t.Errorf("meta-data ID %q; want %q", got, reported)
	}
	if !strings.Contains(log.String(), `msg="no metadata source at first; late seed devices: the udev queue drained" waited_for="the udev queue to drain (/run/udev/queue)"`) {
		t.Errorf("boot does not log what it waited for:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(root, "run/seedkeeper/no-source")); err == nil {
		t.Error("cloud-init held back although the seed was found")
	}
	if st, dw := readStatus(t, root), deviceWait(t, root); st.Outcome != "ok" || !strings.Contains(dw, "the udev queue drained") {
		t.Errorf("status: outcome %q, device wait %q", st.Outcome, dw)
	}
}

// A boot that finds its source at once does not wait, however busy udev
// is.
func TestBootNoWaitWithSource(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	writeFile(t, filepath.Join(root, "run/udev/control"), "", 0o644)
	writeFile(t, filepath.Join(root, "run/udev/queue"), "", 0o644) // never drains
	attachProxmoxISO(t, root, "192.0.2.53")
	r := bootOK(t, root)
	if strings.Contains(r.stderr, "late seed devices") || deviceWait(t, root) != "" {
		t.Errorf("boot waited although the source was there:\n%s", r.stderr)
	}
}

// deviceWait is what status.json says about the wait for late devices.
func deviceWait(t *testing.T, root string) string {
	t.Helper()
	var st struct {
		DeviceWait string `json:"device_wait"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, statusPath))), &st); err != nil {
		t.Fatal(err)
	}
	return st.DeviceWait
}

// A late CD-ROM, after the fact: it appears after boot found no
// source. watch applies nothing from it, status says it takes effect on
// the next boot, and the next boot applies it as a new instance.
func TestLateSeedTakesEffectOnNextBoot(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	bootNoSource(t, root)
	reported := attachProxmoxISO(t, root, "192.0.2.53")

	s := runBinary(t, nil, "status", "--root", root)
	const next = "; it takes effect on the next boot, and nothing from it is applied before\n"
	if !strings.Contains(s.stdout, "Late source: a seed appeared after boot: boot found no metadata source at ") ||
		!strings.Contains(s.stdout, ", and nocloud is here now"+next) {
		t.Errorf("status does not say the seed came late:\n%s", s.stdout)
	}
	before := filesUnder(t, root)
	w := runBinary(t, nil, "watch", "--root", root)
	if w.code != exitOK || !strings.Contains(w.stderr, `msg="watch: a seed appeared after boot: boot found no metadata source at `) {
		t.Fatalf("watch: %v", w)
	}
	// watch wrote nothing but its note for status: no seed, no network
	// files, no identity.
	after := filesUnder(t, root)
	want := append(before, "run/seedkeeper/late-source")
	slices.Sort(want)
	if !slices.Equal(after, want) {
		t.Errorf("files after watch: %q; want %q", after, want)
	}
	if j := runBinary(t, nil, "status", "--root", root, "--json"); !strings.Contains(j.stdout, `"late_source": "a seed appeared after boot`) {
		t.Errorf("status --json lacks late_source:\n%s", j.stdout)
	}

	reboot(t, root)
	bootOK(t, root)
	wantFirstRun(t, root, reported, false)
	if s := runBinary(t, nil, "status", "--root", root); strings.Contains(s.stdout, "Late source:") {
		t.Errorf("status after the next boot still reports a late source:\n%s", s.stdout)
	}
}
