package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
)

func runNetCapture(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = runNet(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Usage errors exit 3, as in every other command (net used to exit 2).
func TestNetUsage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "net.yaml")
	os.WriteFile(good, []byte("version: 2\nethernets: {}\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 3\nethernets:\n  eth0:\n    addresses: [10.0.0.1/24]\n"), 0o644)
	badAddr := filepath.Join(dir, "bad-address.yaml")
	os.WriteFile(badAddr, []byte("version: 2\nethernets:\n  eth0:\n    addresses: [10.0.0.300/24]\n"), 0o644)
	corruptRoot := filepath.Join(dir, "root")
	receipt := filepath.Join(corruptRoot, "var/lib/seedkeeper/network-receipt.json")
	os.MkdirAll(filepath.Dir(receipt), 0o755)
	os.WriteFile(receipt, []byte(`{"version":1,"links":{`), 0o644)

	tests := []struct {
		args       []string
		code       int
		stdout     string
		stderr     string
		stdoutMore []string
	}{
		{args: []string{"--help"}, code: 0, stdout: "Usage: seedkeeper net plan", stdoutMore: []string{"Exit status:", "  4  apply only: some operations failed", "--drivers LIST"}},
		{args: []string{"apply", "--help"}, code: 0, stdout: "Usage: seedkeeper net plan"},
		{args: nil, code: 3, stderr: "Usage: seedkeeper net plan"},
		{args: []string{"show"}, code: 3, stderr: `unknown command "show" (want plan or apply)`},
		{args: []string{"plan"}, code: 3, stderr: "seedkeeper net plan: --config FILE is required"},
		{args: []string{"plan", "--config", good, "extra"}, code: 3, stderr: `unexpected argument "extra"`},
		{args: []string{"apply", "--bogus"}, code: 3, stderr: "flag provided but not defined: -bogus"},
		{args: []string{"plan", "--config", filepath.Join(dir, "missing.yaml")}, code: 2, stderr: "reading network configuration: open " + filepath.Join(dir, "missing.yaml")},
		{args: []string{"plan", "--config", bad}, code: 2, stderr: "reading network configuration " + bad + ": "},
		// One bad field degrades that field: the plan says what was left out.
		{args: []string{"plan", "--config", badAddr}, code: 0, stdout: "note: network config: ethernets.eth0.addresses[0]: not an IP address; the address left out\n"},
		{args: []string{"apply", "--config", good, "--root", corruptRoot}, code: 2, stderr: "reading network receipt " + receipt + ": unexpected end of JSON input (it records what seedkeeper added"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runNetCapture(tt.args...)
		if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("net %q = %d\nstdout %q\nstderr %q\nwant %d, stdout containing %q, stderr containing %q",
				tt.args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
		}
		for _, s := range tt.stdoutMore {
			if !strings.Contains(stdout, s) {
				t.Errorf("net %q: stdout lacks %q", tt.args, s)
			}
		}
	}
	if data, _ := os.ReadFile(receipt); string(data) != `{"version":1,"links":{` {
		t.Errorf("corrupt receipt was rewritten: %q", data)
	}
}

// netRoot is a scratch root whose DMI says product (and vendor).
func netRoot(t *testing.T, product, vendor string) string {
	t.Helper()
	root := t.TempDir()
	dmi := filepath.Join(root, "sys/class/dmi/id")
	os.MkdirAll(dmi, 0o755)
	os.WriteFile(filepath.Join(dmi, "product_name"), []byte(product+"\n"), 0o444)
	os.WriteFile(filepath.Join(dmi, "sys_vendor"), []byte(vendor+"\n"), 0o444)
	return root
}

// net decides its allowlist as boot does: on VMware the VMware defaults
// or the metadata's network-drivers, not a KVM list of its own (it used
// to apply with virtio_net,e1000,e1000e,vmxnet3 everywhere).
func TestNetAllowlistIsBoots(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "net.yaml")
	os.WriteFile(good, []byte("version: 2\nethernets: {}\n"), 0o644)
	// No guestinfo tools on PATH: a VMware guest without metadata.
	t.Setenv("PATH", t.TempDir())
	t.Setenv("VMX_GUESTINFO", "")
	vmware := netRoot(t, "VMware Virtual Platform", "VMware, Inc.")
	kvm := netRoot(t, "Standard PC (Q35 + ICH9, 2009)", "QEMU")

	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{name: "VMware default", args: []string{"--root", vmware}, code: 0,
			want: "seedkeeper net plan: driver allowlist e1000,e1000e,vlance,vmxnet2,vmxnet3,vrdma (from default for vmware)\n"},
		{name: "KVM default", args: []string{"--root", kvm}, code: 0,
			want: "seedkeeper net plan: driver allowlist e1000,e1000e,virtio_net,vmxnet3 (from default for qemu)\n"},
		{name: "VMware metadata network-drivers", args: []string{"--root", vmware}, code: 0,
			env:  map[string]string{"VMX_GUESTINFO": "1", "VMX_GUESTINFO_METADATA": "instance-id: i-1\nnetwork-drivers: [vmxnet3, veth]\n"},
			want: "seedkeeper net plan: driver allowlist veth,vmxnet3 (from metadata network-drivers)\n"},
		{name: "malformed metadata network-drivers closes the gate", args: []string{"--root", vmware}, code: 0,
			env:  map[string]string{"VMX_GUESTINFO": "1", "VMX_GUESTINFO_METADATA": "instance-id: i-1\nnetwork-drivers: 'vmxnet3 veth'\n"},
			want: "seedkeeper net plan: driver allowlist nothing (metadata network-drivers:"},
		{name: "configuration hotplug.drivers", args: []string{"--root", kvm}, code: 0,
			env:  map[string]string{"CONFIG": "hotplug: {drivers: [mlx5_core]}\n"},
			want: "seedkeeper net plan: driver allowlist mlx5_core (from config hotplug.drivers)\n"},
		{name: "the flag beats the metadata", args: []string{"--root", vmware, "--drivers", "veth"}, code: 0,
			env:  map[string]string{"VMX_GUESTINFO": "1", "VMX_GUESTINFO_METADATA": "instance-id: i-1\nnetwork-drivers: [vmxnet3]\n"},
			want: "seedkeeper net plan: driver allowlist veth (from flag --drivers)\n"},
		{name: "bad flag", args: []string{"--root", vmware, "--drivers", "veth;x"}, code: exitUsage,
			want: "seedkeeper net plan: --drivers: entry 1: driver name has U+003B at byte 5"},
		{name: "an empty entry in the flag", args: []string{"--root", vmware, "--drivers", "veth,,e1000"}, code: exitUsage,
			want: "seedkeeper net plan: --drivers: entry 2: empty driver name"},
		{name: "a flag of commas", args: []string{"--root", vmware, "--drivers", " , "}, code: exitUsage,
			want: "seedkeeper net plan: --drivers: entry 1: empty driver name"},
		{name: "an empty flag allows nothing", args: []string{"--root", vmware, "--drivers", ""}, code: 0,
			want: "seedkeeper net plan: driver allowlist nothing (flag --drivers: the list is empty; allowing no driver)\n"},
		{name: "metadata that cannot be read", args: []string{"--root", vmware}, code: exitError,
			env:  map[string]string{"VMX_GUESTINFO": "1", "VMX_GUESTINFO_METADATA": "x", "VMX_GUESTINFO_METADATA_ENCODING": "rot13"},
			want: "reading the metadata for the driver allowlist: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				if k == "CONFIG" {
					p := filepath.Join(tc.args[1], "etc/seedkeeper/config.yaml")
					os.MkdirAll(filepath.Dir(p), 0o755)
					os.WriteFile(p, []byte(v), 0o644)
					t.Cleanup(func() { os.Remove(p) })
					continue
				}
				t.Setenv(k, v)
			}
			code, stdout, stderr := runNetCapture(append([]string{"plan", "--config", good}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("net plan %q = %d\nstdout %q\nstderr %q\nwant %d, stderr containing %q", tc.args, code, stdout, stderr, tc.code, tc.want)
			}
		})
	}
}

// The help's default allowlists are the table's, platform by platform.
func TestNetHelpDefaultsAreTheTable(t *testing.T) {
	_, stdout, _ := runNetCapture("--help")
	for _, name := range datasource.Names() {
		s, _ := datasource.Lookup(name)
		for _, p := range s.Platforms {
			if !strings.Contains(stdout, p) {
				t.Errorf("net --help does not name platform %s", p)
			}
		}
		if len(s.Platforms) > 0 && !strings.Contains(stdout, " "+strings.Join(s.Drivers, ",")+"\n") {
			t.Errorf("net --help does not list %s's default drivers %v", name, s.Drivers)
		}
	}
}
