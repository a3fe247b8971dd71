package vm

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// The VMware guest: the Debian 12 networkd image with a vmware-rpctool
// that answers as a VMX does (systemd/vmware-rpctool, the "vmware" image
// variant), booted with VMware's SMBIOS, so that seedkeeper and cloud-init's
// ds-identify both see a VMware VM, and the guestinfo on the kernel command
// line. cloud-init runs NoCloud from seedkeeper's seed, so what its VMware
// datasource did beyond reading guestinfo is seedkeeper's: waiting for the
// network the metadata's wait-on-network asks for, publishing the guest's
// addresses, and keeping VMware's customization off. One boot.

// vmwareSMBIOS is what a VMware VM's SMBIOS system information says
// (the UUID is the boot's); ds-identify reads product_name, sys_vendor and
// product_serial, seedkeeper product_name and product_uuid.
const vmwareSMBIOS = "type=1,manufacturer=VMware,, Inc.,product=VMware Virtual Platform,serial=VMware-42 13 ab cd 5e ed 40 00-80 00 00 00 00 00 00 42"

const (
	vmwareUUID       = "4213abcd-5eed-4000-8000-000000000042"
	vmwareInstanceID = "vmw-guest-0042"
	vmwareHostname   = "vmw-guest"
	vmwareAddr4      = "10.0.2.40"
	// vmwareAddr6 is the address the NIC makes from the router
	// advertisements of QEMU's user network (fec0::/64, EUI-64 of the MAC).
	vmwareAddr6   = "fec0::250:56ff:fe5e:ed40"
	vmwareMetaKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGUlGMwCcdLBaNz51zkJXw6u4zK/enkkaV6+EDg5M4+6 metadata@vmware"
	vmwareUserKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN3DYcDcAun/PsVM6lPpUvn4XMZ6BSvFGjVqa7y5D/HJ userdata@vmware"
)

// nicVMware has a VMware MAC on QEMU's 10.0.2.0/24. It is a virtio NIC, not
// a vmxnet3: virtio_net is in the image's initramfs, so the NIC is there
// when seedkeeper-boot runs, and the metadata's network-drivers allows it
// (VMware's default allowlist would leave it alone).
var nicVMware = sdNIC{MAC: "00:50:56:5e:ed:40", Net: "10.0.2.0/24"}

// vmwareGuestinfo is the VMX's guestinfo of the scenario, in the two
// encodings cloud-init's VMware datasource documents: the metadata as
// gzip+base64, the user-data as base64, each named in its .encoding key.
func vmwareGuestinfo(t testing.TB) map[string]string {
	t.Helper()
	md := fmt.Sprintf(`instance-id: %s
local-hostname: %s
public-keys-data: %s
wait-on-network:
  ipv4: true
network-drivers: [virtio_net]
network:
  version: 2
  ethernets:
    nic0:
      match:
        macaddress: "%s"
      set-name: ens192
      addresses: [%s/24]
      gateway4: 10.0.2.2
      accept-ra: true
      nameservers:
        addresses: [10.0.2.3]
        search: [vmware.lan]
`, vmwareInstanceID, vmwareHostname, vmwareMetaKey, nicVMware.MAC, vmwareAddr4)
	ud := fmt.Sprintf("#cloud-config\nssh_authorized_keys:\n  - %s\n", vmwareUserKey)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(md)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"metadata":          base64.StdEncoding.EncodeToString(gz.Bytes()),
		"metadata.encoding": "gzip+base64",
		"userdata":          base64.StdEncoding.EncodeToString([]byte(ud)),
		"userdata.encoding": "base64",
	}
}

// vmwareCmdline is the guestinfo as the stub takes it from the kernel
// command line: sk.gi.KEY=VALUE, sorted.
func vmwareCmdline(gi map[string]string) []string {
	var out []string
	for k, v := range gi {
		out = append(out, "sk.gi."+k+"="+v)
	}
	slices.Sort(out)
	return out
}

// installVMwareTools is the "vmware" image variant: the stub
// vmware-rpctool where open-vm-tools puts it, and the datasource's own
// unit-test stub body it sources.
func installVMwareTools(root string) error {
	for _, f := range []struct {
		src, dst string
		mode     os.FileMode
	}{
		{filepath.Join("systemd", "vmware-rpctool"), "/usr/bin/vmware-rpctool", 0o755},
		{filepath.Join("..", "..", "testdata", "vmware", "guestinfo-stub.sh"), "/usr/lib/sk-vmware/guestinfo-stub.sh", 0o644},
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f.dst)), 0o755); err != nil {
			return err
		}
		if err := copyFile(f.src, filepath.Join(root, f.dst), f.mode); err != nil {
			return err
		}
	}
	return nil
}

// rpcCall is one line of the stub's record.
type rpcCall struct {
	at   time.Duration // monotonic
	unit string
	rpc  string
}

func parseRPCCalls(s string) ([]rpcCall, error) {
	var out []rpcCall
	for i, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %d tab-separated fields, want 3", i+1, len(f))
		}
		us, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: the time is not a number", i+1)
		}
		out = append(out, rpcCall{at: time.Duration(us) * time.Microsecond, unit: f[1], rpc: f[2]})
	}
	return out, nil
}

// findRPC returns the first call whose RPC is rpc, made from one of units
// (from any when none is named), and whether there is one.
func findRPC(calls []rpcCall, rpc string, units ...string) (rpcCall, bool) {
	for _, c := range calls {
		if c.rpc == rpc && (len(units) == 0 || slices.Contains(units, c.unit)) {
			return c, true
		}
	}
	return rpcCall{}, false
}

// The stub, run on this host, answers the datasource's reader and writer
// as the unit-test stub does: the guestinfo from the command line it is
// given, decoded by ReadVMware into the scenario's metadata; info-set
// stored, recorded and read back; a missing key "No value found" on stderr
// with exit status 1. What the guest run relies on, checked without a boot.
func TestVMwareRPCToolStub(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	base := t.TempDir()
	bin, lib, run := filepath.Join(base, "bin"), filepath.Join(base, "lib"), filepath.Join(base, "run")
	cmdline := filepath.Join(base, "cmdline")
	for _, d := range []string{bin, lib} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyFile(filepath.Join("systemd", "vmware-rpctool"), filepath.Join(bin, "vmware-rpctool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join("..", "..", "testdata", "vmware", "guestinfo-stub.sh"), filepath.Join(lib, "guestinfo-stub.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	line := "root=LABEL=skroot rw console=ttyS0 " + strings.Join(vmwareCmdline(vmwareGuestinfo(t)), " ") + " sk.gi.bad/key=x\n"
	if err := os.WriteFile(cmdline, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SK_VMWARE_RUN=" + run, "SK_VMWARE_LIB=" + lib, "SK_CMDLINE=" + cmdline}
	dmi := filepath.Join(base, "root", "sys", "class", "dmi", "id")
	if err := os.MkdirAll(dmi, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"product_name": "VMware Virtual Platform\n", "product_uuid": strings.ToUpper(vmwareUUID) + "\n"} {
		if err := os.WriteFile(filepath.Join(dmi, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := datasource.ExecRunner{Path: bin, Env: env}
	md, err := datasource.ReadVMware(context.Background(), datasource.Options{Root: filepath.Join(base, "root"),
		VMware: datasource.VMwareOptions{Runner: r, Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatalf("ReadVMware through the stub: %v", err)
	}
	if md.Origin.Transport != datasource.ToolRPCTool || md.InstanceID != vmwareInstanceID || md.Hostname != vmwareHostname {
		t.Errorf("read through %q: instance %q, hostname %q; want %s, %s, %s", md.Origin.Transport, md.InstanceID, md.Hostname, datasource.ToolRPCTool, vmwareInstanceID, vmwareHostname)
	}
	if !md.WaitOnNetwork.IPv4 || md.WaitOnNetwork.IPv6 {
		t.Errorf("wait-on-network = %+v, want ipv4 only", md.WaitOnNetwork)
	}
	if !bytes.Contains(md.UserData, []byte(vmwareUserKey)) {
		t.Errorf("user-data not decoded: %q", md.UserData)
	}
	if md.Network == nil || len(md.Network.Interfaces) != 1 || !slices.Equal(md.NetworkDrivers, []string{"virtio_net"}) {
		t.Errorf("network %+v, drivers %v: want one interface and [virtio_net]", md.Network, md.NetworkDrivers)
	}

	if err := datasource.SetGuestinfo(context.Background(), r, datasource.ToolRPCTool, "local-ipv4", vmwareAddr4); err != nil {
		t.Fatalf("info-set through the stub: %v", err)
	}
	rpc := func(args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(bin, "vmware-rpctool"), args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	if out, errs, code := rpc("info-get guestinfo.local-ipv4"); out != vmwareAddr4+"\n" || errs != "" || code != 0 {
		t.Errorf("info-get of the key just set: stdout %q, stderr %q, exit %d", out, errs, code)
	}
	if out, errs, code := rpc("info-get guestinfo.vendordata"); out != "" || errs != "No value found\n" || code != 1 {
		t.Errorf("info-get of a missing key: stdout %q, stderr %q, exit %d; want \"No value found\" on stderr, exit 1", out, errs, code)
	}
	if _, errs, code := rpc("info-get guestinfo.bad/key"); code != 1 || errs != "No value found\n" {
		t.Errorf("a command-line key with a slash: stderr %q, exit %d; want no such key", errs, code)
	}
	if _, errs, code := rpc(); code != 1 || !strings.HasPrefix(errs, "Usage: vmware-rpctool") {
		t.Errorf("no argument: stderr %q, exit %d", errs, code)
	}

	b, err := os.ReadFile(filepath.Join(run, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	calls, err := parseRPCCalls(string(b))
	if err != nil {
		t.Fatalf("the record: %v\n%s", err, b)
	}
	for _, want := range []string{"info-get guestinfo.metadata", "info-get guestinfo.metadata.encoding", "info-get guestinfo.userdata",
		"info-set guestinfo.local-ipv4 " + vmwareAddr4, "info-get guestinfo.vendordata", ""} {
		if _, ok := findRPC(calls, want); !ok {
			t.Errorf("the record has no %q:\n%s", want, b)
		}
	}
}

// TestIntegrationSystemdVMware boots the VMware guest once and checks each
// duty of cloud-init's VMware datasource that falls to seedkeeper, on what
// the guest shows: where the metadata came from, the instance, the
// address on the NIC, the stub's record of what was published and when,
// the order of the wait and cloud-init's first units, and cloud-init's
// merged configuration.
func TestIntegrationSystemdVMware(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	img := needSystemdVariant(t, relBookworm, "networkd", "vmware")
	app := vmwareCmdline(vmwareGuestinfo(t))
	// The kernel keeps 2048 bytes of its command line (x86) and drops the
	// rest without a word.
	if n := len(strings.Join(app, " ")); n > 1600 {
		t.Fatalf("the guestinfo takes %d bytes of the kernel command line: too close to its 2048", n)
	}
	d := newSDDisk(t, img)
	r := d.boot(t, sdBoot{Name: "vmware", UUID: vmwareUUID, NICs: []sdNIC{nicVMware}, SMBIOS: []string{vmwareSMBIOS}, Append: app})
	// seedkeeper-boot succeeded and was done before cloud-init-local,
	// the first of cloud-init 22.4's units, started.
	checkSeedkeeperUnit(t, r)
	checkVMwareGuest(t, r)
}

// checkVMwareGuest is the VMware boot's own checks.
func checkVMwareGuest(t *testing.T, r *sdReport) {
	t.Helper()
	jr := r.get(t, "journal-seedkeeper")
	status := r.get(t, "seedkeeper-status")

	// The guest looks like VMware to both.
	dmi := r.get(t, "dmi")
	for _, want := range []string{"sys_vendor=VMware, Inc.", "product_name=VMware Virtual Platform"} {
		if !strings.Contains(dmi, want) {
			t.Errorf("%s: the guest's DMI has no %q:\n%s", r.name, want, dmi)
		}
	}
	if ds := r.get(t, "ds-identify.log"); !strings.Contains(ds, "DMI_PRODUCT_NAME=VMware Virtual Platform") || !strings.Contains(ds, "DMI_SYS_VENDOR=VMware, Inc.") {
		t.Errorf("%s: ds-identify did not read VMware's DMI:\n%s", r.name, ds)
	}

	// seedkeeper-boot read the guestinfo through vmware-rpctool.
	calls, err := parseRPCCalls(r.get(t, "vmware-calls"))
	if err != nil {
		t.Fatalf("%s: the stub's record: %v", r.name, err)
	}
	for _, rpc := range []string{"info-get guestinfo.metadata", "info-get guestinfo.metadata.encoding", "info-get guestinfo.userdata", "info-get guestinfo.userdata.encoding"} {
		if _, ok := findRPC(calls, rpc, "seedkeeper-boot.service"); !ok {
			t.Errorf("%s: no %q from seedkeeper-boot:\n%s", r.name, rpc, r.get(t, "vmware-calls"))
		}
	}
	if !strings.Contains(jr, "vmware guestinfo read") || !strings.Contains(jr, "transport=vmware-rpctool") {
		t.Errorf("%s: seedkeeper's journal does not say guestinfo was read through vmware-rpctool:\n%s", r.name, jr)
	}
	if !strings.Contains(status, "vmware:      detected: DMI product_name \"VMware Virtual Platform\"\n") || !strings.Contains(status, "Read from:   vmware via vmware-rpctool\n") {
		t.Errorf("%s: seedkeeper status does not name VMware and the tool:\n%s", r.name, status)
	}
	var st struct {
		Source, Transport string
		VMware            *struct {
			Wait      string
			Published []string
			Notes     []string
		}
	}
	if err := json.Unmarshal([]byte(r.get(t, "status.json")), &st); err != nil {
		t.Fatalf("%s: status.json: %v", r.name, err)
	}
	if st.Source != datasource.SourceVMware || st.Transport != datasource.ToolRPCTool || st.VMware == nil {
		t.Fatalf("%s: status.json: source %q via %q, vmware %v", r.name, st.Source, st.Transport, st.VMware)
	}

	// cloud-init ran NoCloud from seedkeeper's seed, on the metadata's
	// instance, hostname and keys (metadata and user-data decoded).
	if id := r.instanceID(t); id != vmwareInstanceID {
		t.Errorf("%s: cloud-init's instance is %q, want the metadata's %q", r.name, id, vmwareInstanceID)
	}
	if ds := r.get(t, "datasource"); !strings.HasPrefix(ds, "DataSourceNoCloud") || !strings.Contains(ds, "/var/lib/cloud/seed/nocloud") {
		t.Errorf("%s: cloud-init's datasource is %q, want NoCloud from seedkeeper's seed", r.name, ds)
	}
	if h := r.get(t, "hostname"); h != vmwareHostname {
		t.Errorf("%s: hostname %q, want the metadata's %q", r.name, h, vmwareHostname)
	}
	keys := r.get(t, "authorized-keys")
	for _, k := range []string{vmwareMetaKey, vmwareUserKey} {
		if !strings.Contains(keys, k) {
			t.Errorf("%s: no %s key in authorized_keys:\n%s", r.name, strings.Fields(k)[2], keys)
		}
	}

	// The static addresses are on the NIC, and the allowlist is the
	// metadata's.
	if got := r.addrs(t, "addr.json", nicVMware.MAC); !slices.Equal(got, []string{vmwareAddr4 + "/24"}) {
		t.Errorf("%s: the NIC has %v, want [%s/24]\nnetwork files:\n%s\njournal:\n%s", r.name, got, vmwareAddr4, r.get(t, "netfiles"), jr)
	}
	if got := addrs6(t, r, nicVMware.MAC); !slices.Contains(got, vmwareAddr6+"/64") {
		t.Errorf("%s: the NIC's IPv6 addresses are %v, want %s/64 from the router advertisements\nIPv6 routes:\n%s", r.name, got, vmwareAddr6, r.get(t, "route6.json"))
	}
	if !strings.Contains(status, "Hotplug:     allowlist virtio_net (from ") {
		t.Errorf("%s: the allowlist is not the metadata's network-drivers:\n%s", r.name, status)
	}

	// wait-on-network: boot waited for IPv4 after its network step, then
	// published guestinfo.local-ipv4, before cloud-init-local started: the
	// stub's own clock says when (the journal's does not: it stamps a
	// service's lines when journald reads them, which under TCG is often
	// after cloud-init-local has started).
	bootStart := r.mono(t, "seedkeeper-boot", "ExecMainStartTimestampMonotonic")
	local := r.mono(t, "cloud-init-local", "InactiveExitTimestampMonotonic")
	const ready = "wait-on-network asks for ipv4: ipv4 ready on the owned links after "
	if !strings.HasPrefix(st.VMware.Wait, ready) {
		t.Errorf("%s: status.json vmware.wait = %q, want %q…", r.name, st.VMware.Wait, ready)
	}
	if !strings.Contains(status, "Waited:      "+ready) {
		t.Errorf("%s: seedkeeper status has no Waited: line:\n%s", r.name, status)
	}
	if c, ok := findRPC(calls, "info-set guestinfo.local-ipv4 "+vmwareAddr4); !ok {
		t.Errorf("%s: guestinfo.local-ipv4 was not set to %s:\n%s\nseedkeeper journal:\n%s", r.name, vmwareAddr4, r.get(t, "vmware-calls"), jr)
	} else if c.unit != "seedkeeper-boot.service" || c.at < bootStart || c.at > local {
		t.Errorf("%s: guestinfo.local-ipv4 set by %s at %v; want seedkeeper-boot, after its start (%v) and before cloud-init-local's (%v)", r.name, c.unit, c.at, bootStart, local)
	}

	// guestinfo.local-ipv6: the address comes from router advertisements,
	// which the kernel may take while boot brings the link up, and
	// networkd takes later; whichever of boot and seedkeeper watch sees it
	// first publishes it. The network events are advertised by boot.
	if c, ok := findRPC(calls, "info-set guestinfo.local-ipv6 "+vmwareAddr6); !ok {
		t.Errorf("%s: guestinfo.local-ipv6 was not set to %s:\n%s\nseedkeeper journal:\n%s", r.name, vmwareAddr6, r.get(t, "vmware-calls"), jr)
	} else if c.unit != "seedkeeper-boot.service" && c.unit != "seedkeeper-watch.service" {
		t.Errorf("%s: guestinfo.local-ipv6 set by %s, not by seedkeeper", r.name, c.unit)
	} else {
		t.Logf("%s: guestinfo.local-ipv6 set by %s at %.1fs", r.name, c.unit, c.at.Seconds())
		if w := "published guestinfo.local-ipv6 " + vmwareAddr6 + " (the owned addresses changed)"; c.unit == "seedkeeper-watch.service" && !strings.Contains(jr, w) {
			t.Errorf("%s: seedkeeper watch set guestinfo.local-ipv6 but does not say %q:\n%s", r.name, w, jr)
		}
	}
	for _, rpc := range []string{"info-set guestinfo.cloudinit.updates.supported network=boot;boot-new-instance;hotplug",
		"info-set guestinfo.cloudinit.updates.enabled network=boot;boot-new-instance;hotplug"} {
		if _, ok := findRPC(calls, rpc, "seedkeeper-boot.service"); !ok {
			t.Errorf("%s: no %q from seedkeeper-boot:\n%s", r.name, rpc, r.get(t, "vmware-calls"))
		}
	}
	for _, c := range calls {
		if strings.HasPrefix(c.rpc, "info-set ") && c.unit != "seedkeeper-boot.service" && c.unit != "seedkeeper-watch.service" {
			t.Errorf("%s: %s set guestinfo: %q", r.name, c.unit, c.rpc)
		}
	}
	for _, n := range st.VMware.Notes {
		if strings.Contains(n, "failed") || strings.Contains(n, "not tried") {
			t.Errorf("%s: seedkeeper status: %s", r.name, n)
		}
	}
	if !strings.Contains(status, "Guestinfo:   published guestinfo.local-ipv4 "+vmwareAddr4+"\n") {
		t.Errorf("%s: seedkeeper status does not say guestinfo.local-ipv4 was published:\n%s", r.name, status)
	}

	// The drop-in's disable_vmware_customization is in cloud-init's
	// merged configuration.
	var merged map[string]any
	if err := json.Unmarshal([]byte(r.get(t, "cloud-init-merged-cfg.json")), &merged); err != nil {
		t.Errorf("%s: cloud-init query merged_cfg: %v\n%s", r.name, err, r.get(t, "cloud-init-merged-cfg.err"))
	} else if v, ok := merged["disable_vmware_customization"]; v != true {
		t.Errorf("%s: cloud-init's merged disable_vmware_customization is %v (set: %v), want true", r.name, v, ok)
	}
	if t.Failed() {
		t.Logf("%s: seedkeeper status:\n%s\nstub record:\n%s", r.name, status, r.get(t, "vmware-calls"))
	}
}

// addrs6 returns the IPv6 addresses (CIDR) of the link with mac in the
// report's addr.json, but for link-local ones.
func addrs6(t *testing.T, r *sdReport, mac string) []string {
	t.Helper()
	var links []struct {
		Address  string `json:"address"`
		AddrInfo []struct {
			Family    string `json:"family"`
			Local     string `json:"local"`
			Prefixlen int    `json:"prefixlen"`
			Scope     string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(r.get(t, "addr.json")), &links); err != nil {
		t.Fatalf("%s: addr.json: %v", r.name, err)
	}
	var out []string
	for _, l := range links {
		if !strings.EqualFold(l.Address, mac) {
			continue
		}
		for _, a := range l.AddrInfo {
			// QEMU's fec0::/64 is site-local ("scope site").
			if a.Family == "inet6" && a.Scope != "link" && a.Scope != "host" {
				out = append(out, fmt.Sprintf("%s/%d", a.Local, a.Prefixlen))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestIntegrationSystemdVMwareForky boots the VMware guest once on
// forky's networkd image: cloud-init 26.2, whose VMware datasource knows
// network events of its own (boot, boot-new-instance, hotplug) and would
// render the metadata's network, advertise them in guestinfo and apply
// them. Beside every check of the Debian 12 boot, it shows that the two
// never both configure the NIC: cloud-init ran NoCloud from seedkeeper's
// seed with its network configuration disabled, its renderers wrote no
// file, networkd configured the NIC from seedkeeper's file alone (from
// the first journal line on), and every guestinfo write, the network
// events among them, came from seedkeeper's units, none from cloud-init.
func TestIntegrationSystemdVMwareForky(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	img := needSystemdVariant(t, relForky, "networkd", "vmware")
	d := newSDDisk(t, img)
	r := d.boot(t, sdBoot{Name: "vmware-forky", UUID: vmwareUUID, NICs: []sdNIC{nicVMware}, SMBIOS: []string{vmwareSMBIOS},
		Append: vmwareCmdline(vmwareGuestinfo(t))})
	if v := r.get(t, "cloud-init-version"); !strings.Contains(v, " 26.") {
		t.Fatalf("%s: cloud-init is %q, not 26.x: the case is not exercised", r.name, v)
	}
	checkSeedkeeperUnit(t, r)
	checkCloudInitOrder(t, r, relForky)
	checkVMwareGuest(t, r)

	log := r.get(t, "cloud-init-network")
	if !strings.Contains(log, "network config is disabled by system_cfg") {
		t.Errorf("%s: cloud-init's log does not say its network configuration is disabled by the system config:\n%s", r.name, log)
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "Applying network configuration") || strings.Contains(l, "Generated networking") {
			t.Errorf("%s: cloud-init configured the network: %s", r.name, l)
		}
	}
	netfiles := r.get(t, "netfiles")
	for _, l := range strings.Split(netfiles, "\n") {
		if strings.HasPrefix(l, "== ") && strings.Contains(l, "cloud-init") {
			t.Errorf("%s: cloud-init's renderer wrote %s", r.name, strings.TrimPrefix(l, "== "))
		}
	}
	if f := r.get(t, "netplan-files"); f != "" {
		t.Errorf("%s: /etc/netplan holds %q on an image without netplan: cloud-init rendered it", r.name, f)
	}
	checkOurNetworkFile(t, r, nicVMware.MAC)
	checkOnlyOurFilesConfigured(t, r)
	calls, err := parseRPCCalls(r.get(t, "vmware-calls"))
	if err != nil {
		t.Fatalf("%s: the stub's record: %v", r.name, err)
	}
	for _, c := range calls {
		if strings.HasPrefix(c.rpc, "info-set guestinfo.cloudinit.") && c.unit != "seedkeeper-boot.service" {
			t.Errorf("%s: %s advertised network events: %q", r.name, c.unit, c.rpc)
		}
	}
	if t.Failed() {
		t.Logf("%s: network files:\n%s\nnetworkctl:\n%s", r.name, netfiles, r.get(t, "networkctl"))
	}
}
