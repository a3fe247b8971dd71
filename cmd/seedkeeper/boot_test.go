package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testseed"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

const fixtureSeed = "../../testdata/nocloud/seed"

// What the boot writes is tested in process in agent; here, the command:
// exit codes, the log line of an unchanged seed, and what status says
// after each boot, as text and as JSON.
func TestBootNoCloudSeed(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	shipDropIn(t, root)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))

	r := runBinary(t, nil, "boot", "--root", root)
	if r.code != exitOK {
		t.Fatalf("first boot: %v", r)
	}
	s := runBinary(t, nil, "status", "--root", root)
	if !strings.Contains(s.stdout, "Seed:        /var/lib/cloud/seed/nocloud: wrote /var/lib/cloud/seed/nocloud/meta-data, /var/lib/cloud/seed/nocloud/user-data, /var/lib/cloud/seed/nocloud/vendor-data; removed /var/lib/cloud/seed/nocloud/network-config\n") {
		t.Errorf("status after the first boot does not say what was written and removed:\n%s", s.stdout)
	}

	r = runBinary(t, nil, "boot", "--root", root)
	if r.code != exitOK {
		t.Fatalf("second boot: %v", r)
	}
	if !strings.Contains(r.stderr, `msg="seed unchanged"`) {
		t.Errorf("second boot does not log that the seed is unchanged:\n%s", r.stderr)
	}

	s = runBinary(t, nil, "status", "--root", root)
	if s.code != exitOK {
		t.Fatalf("status: %v", s)
	}
	for _, want := range []string{
		"): ok\n",
		"Config:      defaults\n",
		"nocloud:     detected: seed directory /var/lib/seedkeeper/imported-seed\n",
		"Read from:   nocloud via dir:/var/lib/seedkeeper/imported-seed\n",
		"Instance ID: iid-fixture-01 (reported iid-fixture-01; rule 1, keep)\n",
		"Why:         Instance ID \"iid-fixture-01\": the nocloud source reported \"iid-fixture-01\"",
		"Seed:        /var/lib/cloud/seed/nocloud: unchanged\n",
		"Network:     planned: ",
		"Hotplug:     allowlist e1000,e1000e,virtio_net,vmxnet3 (from default for qemu)\n",
	} {
		if !strings.Contains(s.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, s.stdout)
		}
	}
	j := runBinary(t, nil, "status", "--root", root, "--json")
	var sj statusJSON
	if err := json.Unmarshal([]byte(j.stdout), &sj); err != nil || j.code != exitOK {
		t.Fatalf("status --json: %v\n%v", err, j)
	}
	if sj.Outcome != "ok" || sj.Source != "nocloud" || sj.Transport != "dir:/var/lib/seedkeeper/imported-seed" ||
		sj.Identity == nil || sj.Identity.InstanceID != "iid-fixture-01" || sj.Identity.RuleName != "keep" || sj.Identity.Explanation == "" ||
		sj.Seed == nil || sj.Seed.Dir != "/var/lib/cloud/seed/nocloud" || len(sj.Seed.Written) != 0 ||
		sj.Network == nil || sj.Network.Action != "planned" || !strings.Contains(sj.Network.Allowlist, "from default for qemu") ||
		len(sj.Candidates) != 3 {
		t.Errorf("status --json = %s", j.stdout)
	}
}

// attachProxmoxISO makes Proxmox's cidata ISO root's /dev/sr0 and returns
// the instance ID in its meta-data.
func attachProxmoxISO(t *testing.T, root string, hostResolvers ...string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "cidata.iso")
	id := testseed.ProxmoxISO(t, img, hostResolvers...)
	attachDisk(t, root, "sr0", img)
	return id
}

func bootOK(t *testing.T, root string) procResult {
	t.Helper()
	r := runBinary(t, nil, "boot", "--root", root)
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	return r
}

// The identity and seed scenarios of the boot flow (a Proxmox resolver
// change, a clone, an existing VM, a seed directory and a cidata disk)
// run in process in agent/boot_identity_test.go; the tests here are the
// command's: exit codes, messages, what status prints.

// What a boot without a source writes is tested in process in agent;
// here, the command: exit 1, the log line, what status says.
func TestBootNoSource(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	shipDropIn(t, root)
	r := runBinary(t, nil, "boot", "--root", root)
	if r.code != exitNoSource || !strings.Contains(r.stderr, "no metadata source on this machine; nothing to do") {
		t.Fatalf("boot with no source: %v", r)
	}
	if !strings.Contains(r.stderr, "cloud-init: no metadata source and no seed: cloud-init is skipped this boot") {
		t.Errorf("boot does not log that cloud-init is held back:\n%s", r.stderr)
	}
	s := runBinary(t, nil, "status", "--root", root)
	if s.code != exitOK || !strings.Contains(s.stdout, "): no-source\n") || !strings.Contains(s.stdout, "nocloud:     not present: no ds=nocloud") ||
		!strings.Contains(s.stdout, "cloud-init:  no metadata source and no seed: cloud-init is skipped this boot") {
		t.Errorf("status: %v", s)
	}
}

// A configuration that cannot be used is logged, and status names it and
// the closed allowlist (what boot does with it is tested in agent).
func TestBootBrokenConfig(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	cfg := filepath.Join(root, "etc/seedkeeper/config.yaml")
	writeFile(t, cfg, "hotplug: {drivers: [e1000}\n", 0o644)
	r := runInProcess("boot", "--root", root)
	if r.code != exitOK || !strings.Contains(r.stderr, "hotplug will allow no driver") {
		t.Fatalf("boot: %v", r)
	}
	s := runInProcess("status", "--root", root)
	if !strings.Contains(s.stdout, "Config:      NOT USED: "+cfg) || !strings.Contains(s.stdout, "Hotplug:     allowlist nothing (config hotplug.drivers: cannot be read: "+cfg) {
		t.Errorf("status:\n%s", s.stdout)
	}
}

func TestCommandUsage(t *testing.T) {
	for _, c := range []struct{ cmd, help string }{
		{"boot", bootHelp}, {"fetch", fetchHelp}, {"status", statusHelp}, {"watch", watchHelp},
	} {
		r := runInProcess(c.cmd, "--help")
		if r.code != exitOK || r.stdout != c.help || r.stderr != "" {
			t.Errorf("%s --help: exit %d, stdout %d bytes (want %d), stderr %q", c.cmd, r.code, len(r.stdout), len(c.help), r.stderr)
		}
		// A mistyped flag is one line with a hint, not the whole help.
		r = runInProcess(c.cmd, "--no-such-flag")
		if want := "seedkeeper " + c.cmd + ": flag provided but not defined: -no-such-flag (\"seedkeeper " + c.cmd + " --help\" lists the options)\n"; r.code != exitUsage || r.stdout != "" || r.stderr != want {
			t.Errorf("%s --no-such-flag: %v\nwant %q", c.cmd, r, want)
		}
		r = runInProcess(c.cmd, "--root", t.TempDir(), "extra")
		if r.code != exitUsage || !strings.Contains(r.stderr, `unexpected argument "extra"`) {
			t.Errorf("%s extra: %v", c.cmd, r)
		}
	}
	if r := runInProcess("boot", "--network", "sometimes"); r.code != exitUsage || !strings.Contains(r.stderr, "want auto, apply, plan or off") {
		t.Errorf("boot --network sometimes: %v", r)
	}
}

// smartosHost serves store on a unix socket, as the host agent does for a
// zone, and returns the SEEDKEEPER_MDATA value that reaches it.
func smartosHost(t *testing.T, st *mdatatest.Store) (*mdatatest.Host, string) {
	t.Helper()
	h := mdatatest.NewHost(st)
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
	return h, "unix:" + sock
}

// smartosStore is the sample VM with every extra cloud-init's SmartOS
// datasource hands on: an operator script without "#!" and legacy
// user-data.
func smartosStore() *mdatatest.Store {
	st := mdatatest.Default()
	st.SetString("sdc:operator-script", "echo operator ran\n")
	st.SetString("user-data", "legacy user-data\n")
	return st
}

// What a SmartOS boot writes is tested in process in
// agent/boot_smartos_test.go (unix socket, serial line, bad sdc:nics);
// here, the command: exit 0 and what status says.
func TestBootSmartOS(t *testing.T) {
	_, transport := smartosHost(t, smartosStore())
	root := scratchRoot(t, "SmartDC HVM", "Joyent", "")
	r := runBinary(t, []string{"SEEDKEEPER_MDATA=" + transport}, "boot", "--root", root)
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	if metaDataID(t, root) != mdatatest.SampleUUID {
		t.Errorf("meta-data ID %q, want sdc:uuid", metaDataID(t, root))
	}
	if s := runBinary(t, nil, "status", "--root", root); !strings.Contains(s.stdout, "Read from:   smartos via "+transport+"\n") ||
		!strings.Contains(s.stdout, "Hotplug:     allowlist ") {
		t.Errorf("status:\n%s", s.stdout)
	}
}

// A ds=nocloud line with an i= left by an image build: boot logs what it
// does beside the seed (cloud-init takes that instance ID), as status
// says it.
func TestBootLogsANoCloudLine(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	writeFile(t, filepath.Join(root, "proc/cmdline"), "root=/dev/vda1 ds=nocloud;i=iid-packer\n", 0o444)
	r := runInProcess("boot", "--root", root)
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	if !strings.Contains(r.stderr, "level=WARN") || !strings.Contains(r.stderr, "cloud-init: ds=nocloud with instance-id in the kernel command line (/proc/cmdline)") ||
		!strings.Contains(r.stderr, "takes its instance ID from the i= of the kernel command line") {
		t.Errorf("boot does not log the line:\n%s", r.stderr)
	}
}

// A bare ds=nocloud line is harmless (the drop-in names NoCloud anyway):
// boot says so as information; a WARN that reads "harmless" on every boot
// is noise an admin learns to ignore.
func TestBootLogsAHarmlessNoCloudLineAsInformation(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	writeFile(t, filepath.Join(root, "proc/cmdline"), "root=/dev/vda1 ds=nocloud\n", 0o444)
	r := runInProcess("boot", "--root", root)
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	var line string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "cloud-init: ds=nocloud in the kernel command line") {
			line = l
		}
	}
	if !strings.Contains(line, "level=INFO") || !strings.Contains(line, "harmless") {
		t.Errorf("the line is not logged as information: %q\n%s", line, r.stderr)
	}
}
