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
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
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
	return installVMwareCustomization(root)
}

// installRPCStub puts the stub vmware-rpctool in bin and the body it
// sources in lib, for a test that runs it on the host.
func installRPCStub(t *testing.T, bin, lib string) {
	t.Helper()
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
// given, decoded by the VMware source into the scenario's metadata; info-set
// stored, recorded and read back; a missing key "No value found" on stderr
// with exit status 1. What the guest run relies on, checked without a boot.
func TestVMwareRPCToolStub(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	base := t.TempDir()
	bin, lib, run := filepath.Join(base, "bin"), filepath.Join(base, "lib"), filepath.Join(base, "run")
	cmdline := filepath.Join(base, "cmdline")
	installRPCStub(t, bin, lib)
	line := "root=LABEL=skroot rw console=ttyS0 " + strings.Join(vmwareCmdline(vmwareGuestinfo(t)), " ") + " sk.gi.bad/key=x\n"
	if err := os.WriteFile(cmdline, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SK_VMWARE_RUN=" + run, "SK_VMWARE_LIB=" + lib, "SK_CMDLINE=" + cmdline}
	// The reader and the writer find the tools in $PATH, as in the guest,
	// and hand the stub its settings in the environment.
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dmi := filepath.Join(base, "root", "sys", "class", "dmi", "id")
	if err := os.MkdirAll(dmi, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"product_name": "VMware Virtual Platform\n", "product_uuid": strings.ToUpper(vmwareUUID) + "\n"} {
		if err := os.WriteFile(filepath.Join(dmi, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md, err := datasource.Read(context.Background(), datasource.SourceVMware, datasource.Options{Root: filepath.Join(base, "root"),
		VMware: datasource.VMwareOptions{Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatalf("reading VMware through the stub: %v", err)
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

	if err := vmtools.Set(context.Background(), nil, vmtools.RPCTool, "local-ipv4", vmwareAddr4); err != nil {
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
	// sdDisk.boot refuses a kernel command line the kernel would cut.
	app := vmwareCmdline(vmwareGuestinfo(t))
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

	// The drop-in's disable_vmware_customization (false, for VMware Tools
	// to hand a spec over) is in cloud-init's merged configuration, whose
	// datasource_list leaves out the VMware and OVF datasources that
	// would read a spec.
	var merged map[string]any
	if err := json.Unmarshal([]byte(r.get(t, "cloud-init-merged-cfg.json")), &merged); err != nil {
		t.Errorf("%s: cloud-init query merged_cfg: %v\n%s", r.name, err, r.get(t, "cloud-init-merged-cfg.err"))
	} else {
		if v, ok := merged["disable_vmware_customization"]; v != false {
			t.Errorf("%s: cloud-init's merged disable_vmware_customization is %v (set: %v), want false", r.name, v, ok)
		}
		if l := fmt.Sprint(merged["datasource_list"]); l != "[NoCloud None]" {
			t.Errorf("%s: cloud-init's merged datasource_list is %s, want [NoCloud None]", r.name, l)
		}
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

// VMware guest customization: the "vmware" image variant also has a
// stand-in for VMware Tools (systemd/vmware-tools, run as
// open-vm-tools.service, as Debian names Tools' unit) that hands the
// customization package chosen with sk.imc=NAME to the guest as Tools
// does, by Tools' own rule, and the packages themselves under
// /usr/lib/sk-vmware/imc. The NIC is a virtio one, which a spec cannot
// allow as guestinfo's network-drivers does: the image's
// /etc/seedkeeper/config.yaml puts virtio_net on the allowlist (a
// metadata's list still wins, as in the guestinfo boot).

const (
	imcLog = "/var/log/vmware-imc/toolsDeployPkg.log"

	imcTradName     = "imc-trad"
	imcTradHost     = "imc-trad"
	imcTradDomain   = "imc.lan"
	imcTradInstance = "imc-trad-0001"
	imcTradAddr     = "10.0.2.41"
	imcTradDNS      = "10.0.2.53"
	imcTradMarker   = "7c3a5e10-0000-4000-8000-0000000000a1"
	// imcTradPassword is the spec's root password; it must reach no
	// log and no status.
	imcTradPassword = "imc-Pw-6f1e-never-logged"

	imcCIName     = "imc-cloudinit"
	imcCIHost     = "imc-ci"
	imcCIInstance = "imc-ci-0002"
	imcCIAddr     = "10.0.2.42"
	imcCIDNS      = "10.0.2.54"
	imcCIMarker   = "7c3a5e10-0000-4000-8000-0000000000b2"
	imcCIUserKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDmY1lUqW3mNnOa2uJ3x7q3dJcKc5wW0x7Qw6yN5QWmz userdata@imc"
	// imcCIPassword is root's password as a spec of the cloud-init kind
	// sets it: in its user-data, for cloud-init to set; it too must
	// reach no log and no status.
	imcCIPassword = "imc-ci-Pw-3b9d-never-logged"
)

// imcPackages are the customization packages, file by file, as vCenter
// makes them: a traditional Linux spec naming a customization script
// (Tools copies it with its wrapper, post-customize-guest.sh), and a spec
// of the cloud-init kind (vSphere 7.0 U3 and later), whose files Tools
// looks for as "metadata" and "userdata". The script, were anything to
// run it, would leave /run/sk-vmware/script-ran.
func imcPackages() map[string]map[string]string {
	script := "#!/bin/sh\ntouch /run/sk-vmware/script-ran\n"
	return map[string]map[string]string{
		imcTradName: {
			"cust.cfg": fmt.Sprintf(`[NETWORK]
NETWORKING = yes
BOOTPROTO = dhcp
HOSTNAME = %s
DOMAINNAME = %s

[NIC-CONFIG]
NICS = NIC1

[NIC1]
MACADDR = %s
ONBOOT = yes
IPv4_MODE = BACKWARDS_COMPATIBLE
BOOTPROTO = static
IPADDR = %s
NETMASK = 255.255.255.0
GATEWAY = 10.0.2.2
PRIMARY = yes

[DNS]
DNSFROMDHCP = no
SUFFIX|1 = %s
NAMESERVER|1 = %s

[PASSWORD]
-PASS = %s

[CUSTOM-SCRIPT]
SCRIPT-NAME = script01.bat

[MISC]
MARKER-ID = %s
INSTANCE-ID = %s
POST-GC-STATUS = yes
`, imcTradHost, imcTradDomain, nicVMware.MAC, imcTradAddr, imcTradDomain, imcTradDNS,
				base64.StdEncoding.EncodeToString([]byte(imcTradPassword+"\n")), imcTradMarker, imcTradInstance),
			"script01.bat":                    script,
			"scripts/post-customize-guest.sh": script,
		},
		imcCIName: {
			"cust.cfg": fmt.Sprintf(`[CLOUDINIT]
METADATA = metadata
USERDATA = userdata

[MISC]
MARKER-ID = %s
POST-GC-STATUS = yes
`, imcCIMarker),
			"metadata": fmt.Sprintf(`instance-id: %s
local-hostname: %s.imc.lan
network:
  version: 2
  ethernets:
    nic0:
      match:
        macaddress: "%s"
      addresses: [%s/24]
      routes:
        - to: 0.0.0.0/0
          via: 10.0.2.2
      nameservers:
        addresses: [%s]
        search: [imc.lan]
`, imcCIInstance, imcCIHost, nicVMware.MAC, imcCIAddr, imcCIDNS),
			"userdata": fmt.Sprintf(`#cloud-config
ssh_authorized_keys:
  - %s
chpasswd:
  expire: false
  users:
    - {name: root, password: %s, type: text}
`, imcCIUserKey, imcCIPassword),
		},
	}
}

// vmwareToolsUnit is the stand-in's unit, ordered as Debian's
// open-vm-tools.service is; it runs only on a boot given sk.imc=.
const vmwareToolsUnit = `[Unit]
Description=VMware Tools stand-in: hands over the customization package sk.imc= names
ConditionKernelCommandLine=sk.imc
DefaultDependencies=no
Before=cloud-init-local.service
After=systemd-remount-fs.service systemd-tmpfiles-setup.service systemd-modules-load.service

[Service]
ExecStart=/usr/lib/sk-vmware/vmware-tools

[Install]
WantedBy=multi-user.target
`

// installVMwareCustomization adds the customization part of the
// "vmware" variant: the stand-in and its unit, enabled; the empty file
// where Debian's open-vm-tools has its deployPkg plugin, by which
// seedkeeper (as cloud-init) knows to wait for a spec; the packages; and
// the allowlist.
func installVMwareCustomization(root string) error {
	files := map[string]string{
		"/etc/systemd/system/open-vm-tools.service":                                   vmwareToolsUnit,
		"/usr/lib/x86_64-linux-gnu/open-vm-tools/plugins/vmsvc/libdeployPkgPlugin.so": "",
		"/etc/seedkeeper/config.yaml":                                                 "hotplug:\n  drivers: [virtio_net]\n",
	}
	for name, pkg := range imcPackages() {
		for f, body := range pkg {
			files["/usr/lib/sk-vmware/imc/"+name+"/"+f] = body
		}
	}
	for dst, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(dst, ".bat") || strings.HasSuffix(dst, ".sh") {
			mode = 0o755
		}
		p := filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			return err
		}
	}
	if err := copyFile(filepath.Join("systemd", "vmware-tools"), filepath.Join(root, "/usr/lib/sk-vmware/vmware-tools"), 0o755); err != nil {
		return err
	}
	return run("chroot", root, "systemctl", "enable", "--quiet", "open-vm-tools.service")
}

// The stand-in, run on this host against a scratch root, follows Tools'
// rule over the shipped drop-in: a traditional spec is handed over (and
// Tools reports only deploying and running), the drop-in's former true
// keeps it for Tools' own customization, a spec of the cloud-init kind is
// handed over whatever the key says, and without cloud-init nothing is.
// What the guest boots rely on, checked without a boot.
func TestVMwareToolsStandIn(t *testing.T) {
	for _, tool := range []string{"sh", "sed", "cp", "ls"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	dropIn, err := os.ReadFile(filepath.Join("..", "..", "packaging", "95-seedkeeper.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	formerDropIn := bytes.Replace(dropIn, []byte("\ndisable_vmware_customization: false\n"), []byte("\ndisable_vmware_customization: true\n"), 1)
	if bytes.Equal(formerDropIn, dropIn) {
		t.Fatal("the drop-in has no line disable_vmware_customization: false")
	}
	cases := []struct {
		name      string
		pkg       string
		dropIn    []byte
		cloudInit bool
		handed    bool
	}{
		{"traditional, the drop-in", imcTradName, dropIn, true, true},
		{"traditional, the former drop-in", imcTradName, formerDropIn, true, false},
		{"cloud-init kind, the former drop-in", imcCIName, formerDropIn, true, true},
		{"cloud-init kind, no cloud-init", imcCIName, dropIn, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			root, bin, lib, run := filepath.Join(base, "root"), filepath.Join(base, "bin"), filepath.Join(base, "lib"), filepath.Join(base, "run")
			files := map[string]string{
				"etc/cloud/cloud.cfg":                     "datasource_list: [NoCloud, None]\n",
				"etc/cloud/cloud.cfg.d/95-seedkeeper.cfg": string(c.dropIn),
				"etc/cloud/cloud.cfg.d/80-sk-test.cfg":    "manage_etc_hosts: false\n",
			}
			if c.cloudInit {
				files["usr/bin/cloud-init"] = "#!/bin/sh\n"
			}
			for f, body := range imcPackages()[c.pkg] {
				files["usr/lib/sk-vmware/imc/"+c.pkg+"/"+f] = body
			}
			for f, body := range files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			installRPCStub(t, bin, lib)
			cmdline := filepath.Join(base, "cmdline")
			if err := os.WriteFile(cmdline, []byte("root=LABEL=skroot sk.imc="+c.pkg+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", filepath.Join("systemd", "vmware-tools"))
			cmd.Env = []string{"SK_ROOT=" + root, "SK_CMDLINE=" + cmdline, "SK_VMWARE_RUN=" + run, "SK_VMWARE_LIB=" + lib, "SK_DELAY=0", "SK_PATH=" + bin}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the stand-in: %v\n%s", err, out)
			}
			spec := filepath.Join(root, "var/run/vmware-imc/cust.cfg")
			_, serr := os.Stat(spec)
			_, terr := os.Stat(filepath.Join(run, "tools-customized"))
			if got := serr == nil; got != c.handed || (terr == nil) == c.handed {
				t.Errorf("spec handed over: %v, Tools' own customization: %v; want handed over %v", serr == nil, terr == nil, c.handed)
			}
			if c.handed {
				want := []string{"cust.cfg"}
				for f := range imcPackages()[c.pkg] {
					if f != "cust.cfg" {
						want = append(want, filepath.Base(f))
					}
				}
				ents, err := os.ReadDir(filepath.Dir(spec))
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, e := range ents {
					got = append(got, e.Name())
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("handed over %v; want %v", got, want)
				}
			}
			b, err := os.ReadFile(filepath.Join(run, "calls"))
			if err != nil {
				t.Fatal(err)
			}
			calls, err := parseRPCCalls(string(b))
			if err != nil {
				t.Fatal(err)
			}
			var rpcs []string
			for _, c := range calls {
				rpcs = append(rpcs, c.rpc)
			}
			want := []string{"deployPkg.update.state 3", "deployPkg.update.state 4 0 " + imcLog}
			if !c.handed {
				want = append(want, "deployPkg.update.state 5 0 "+imcLog)
			}
			if !slices.Equal(rpcs, want) {
				t.Errorf("Tools reported %q; want %q", rpcs, want)
			}
		})
	}
}

// imcReportRPCs are the customization reports seedkeeper-boot sent:
// deployPkg.update.state and guestinfo.gc.status, in order.
func imcReportRPCs(calls []rpcCall, unit string) []string {
	var out []string
	for _, c := range calls {
		if c.unit == unit && (strings.HasPrefix(c.rpc, "deployPkg.") || strings.HasPrefix(c.rpc, "info-set guestinfo.gc.status ")) {
			out = append(out, c.rpc)
		}
	}
	return out
}

// checkIMCBoot is what every boot that was handed a spec shows: Tools
// handed it over and ran nothing of its own, before seedkeeper-boot,
// which started after Tools; seedkeeper read it, sent reports (want, in
// order) and kept the marker; no script ran; the instance, the
// hostname, the NIC's address and the resolver are the spec's.
func checkIMCBoot(t *testing.T, r *sdReport, wantReports []string, marker, instance, host, addr, dns string) {
	t.Helper()
	checkSeedkeeperUnit(t, r)
	calls, err := parseRPCCalls(r.get(t, "vmware-calls"))
	if err != nil {
		t.Fatalf("%s: the stub's record: %v", r.name, err)
	}
	toolsLog := r.get(t, "vmware-tools.log")
	if !strings.Contains(toolsLog, "Executing cloud-init workflow.") {
		t.Errorf("%s: VMware Tools did not hand the spec over:\n%s", r.name, toolsLog)
	}
	run := strings.Fields(r.get(t, "vmware-run"))
	for _, f := range []string{"tools-customized", "script-ran"} {
		if slices.Contains(run, f) {
			t.Errorf("%s: /run/sk-vmware has %s: %s", r.name, f, map[string]string{"tools-customized": "VMware Tools ran its own customization", "script-ran": "a customization script ran"}[f])
		}
	}
	if got := imcReportRPCs(calls, "open-vm-tools.service"); !slices.Equal(got, []string{"deployPkg.update.state 3", "deployPkg.update.state 4 0 " + imcLog}) {
		t.Errorf("%s: Tools reported %q", r.name, got)
	}
	if got := imcReportRPCs(calls, "seedkeeper-boot.service"); !slices.Equal(got, wantReports) {
		t.Errorf("%s: seedkeeper-boot reported %q\nwant %q\nrecord:\n%s\njournal:\n%s", r.name, got, wantReports, r.get(t, "vmware-calls"), r.get(t, "journal-seedkeeper"))
	}
	for _, c := range calls {
		if strings.HasPrefix(c.rpc, "deployPkg.") && c.unit != "open-vm-tools.service" && c.unit != "seedkeeper-boot.service" {
			t.Errorf("%s: %s reported %q", r.name, c.unit, c.rpc)
		}
	}
	// Ordered after Tools: started once Tools had.
	tools := parseUnits("[open-vm-tools]\n"+r.get(t, "vmware-tools-unit"), "open-vm-tools")
	if !slices.Contains(strings.Fields(r.unit(t, "seedkeeper-boot")["After"]), "open-vm-tools.service") {
		t.Errorf("%s: seedkeeper-boot is not ordered after open-vm-tools.service: After=%s", r.name, r.unit(t, "seedkeeper-boot")["After"])
	}
	if ts, bs := tools["ExecMainStartTimestampMonotonic"], r.mono(t, "seedkeeper-boot", "ExecMainStartTimestampMonotonic"); tools["ConditionResult"] != "yes" || ts == "" || ts == "0" {
		t.Errorf("%s: the Tools stand-in did not run: %v", r.name, tools)
	} else if us, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Duration(us)*time.Microsecond > bs {
		t.Errorf("%s: Tools started at %sµs, seedkeeper-boot at %v: not after it", r.name, ts, bs)
	}

	if got := r.get(t, "vmware-imc-marker"); got != marker {
		t.Errorf("%s: the marker kept is %q, want %q", r.name, got, marker)
	}
	if id := r.instanceID(t); id != instance {
		t.Errorf("%s: cloud-init's instance is %q, want the spec's %q", r.name, id, instance)
	}
	if h := r.get(t, "hostname"); h != host {
		t.Errorf("%s: hostname %q, want the spec's %q", r.name, h, host)
	}
	if got := r.addrs(t, "addr.json", nicVMware.MAC); !slices.Equal(got, []string{addr + "/24"}) {
		t.Errorf("%s: the NIC has %v, want the spec's [%s/24]\nnetwork files:\n%s\njournal:\n%s", r.name, got, addr, r.get(t, "netfiles"), r.get(t, "journal-seedkeeper"))
	}
	checkResolver(t, r, dns)
	var st struct {
		Source, Transport string
		VMware            *struct{ Customization []string }
	}
	if err := json.Unmarshal([]byte(r.get(t, "status.json")), &st); err != nil {
		t.Fatalf("%s: status.json: %v", r.name, err)
	}
	if st.Source != datasource.SourceVMware || st.Transport != "imc" || st.VMware == nil {
		t.Fatalf("%s: status.json: source %q via %q, vmware %v", r.name, st.Source, st.Transport, st.VMware)
	}
	if t.Failed() {
		t.Logf("%s: seedkeeper status:\n%s\nTools' log:\n%s", r.name, r.get(t, "seedkeeper-status"), toolsLog)
	} else {
		t.Logf("%s: customization in the status:\n%s", r.name, strings.Join(st.VMware.Customization, "\n"))
	}
}

// checkRootPassword asserts that the spec's root password was set (root
// has a hash now) and is said nowhere: in no journal, status, record of
// the stub's or line of cloud-init's log the report keeps.
func checkRootPassword(t *testing.T, r *sdReport, password string) {
	t.Helper()
	if !strings.Contains(r.get(t, "shadow-hashes"), "root:$") {
		t.Errorf("%s: root has no password hash:\n%s", r.name, r.get(t, "shadow-hashes"))
	}
	for _, f := range []string{"journal", "journal-seedkeeper", "seedkeeper-status", "status.json", "vmware-calls", "cloud-init-cache", "vmware-tools.log"} {
		if strings.Contains(r.get(t, f), password) {
			t.Errorf("%s: the spec's password is in the report's %s", r.name, f)
		}
	}
}

// checkIMCCloudInitFirstBoot is the first boot of a clone customized with
// the spec of the cloud-init kind: every check of checkIMCBoot on its
// instance, hostname, address and resolver, seedkeeper-boot's reports of
// a customization that went through (begun, then done: nothing to
// disable), the user-data's key in authorized_keys, and its root
// password set and said nowhere.
func checkIMCCloudInitFirstBoot(t *testing.T, r *sdReport) {
	t.Helper()
	const msg = "journalctl -u seedkeeper-boot"
	checkIMCBoot(t, r, []string{
		"deployPkg.update.state 4 0 " + msg,
		"info-set guestinfo.gc.status Started",
		"deployPkg.update.state 5 0 " + msg,
		"info-set guestinfo.gc.status Successful",
	}, imcCIMarker, imcCIInstance, imcCIHost, imcCIAddr, imcCIDNS)
	if keys := r.get(t, "authorized-keys"); !strings.Contains(keys, imcCIUserKey) {
		t.Errorf("%s: the spec's user-data key is not in authorized_keys:\n%s", r.name, keys)
	}
	checkRootPassword(t, r, imcCIPassword)
}

// TestIntegrationSystemdVMwareIMC boots the VMware guest once, as a
// vSphere clone with a traditional Linux customization spec, as most are
// made: guestinfo empty, the spec handed over by Tools (the drop-in says
// false) after seedkeeper-boot began waiting for it. The spec names a
// customization script, which nothing runs: vCenter is told "script
// disabled" and the rest is applied; its root password is set and
// reaches no log. One boot, in make test.
func TestIntegrationSystemdVMwareIMC(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	img := needSystemdVariant(t, relBookworm, "networkd", "vmware")
	d := newSDDisk(t, img)
	r := d.boot(t, sdBoot{Name: "imc-traditional", UUID: vmwareUUID, NICs: []sdNIC{nicVMware}, SMBIOS: []string{vmwareSMBIOS}, Append: []string{"sk.imc=" + imcTradName}})
	const msg = "journalctl -u seedkeeper-boot"
	checkIMCBoot(t, r, []string{
		"deployPkg.update.state 4 0 " + msg,
		"info-set guestinfo.gc.status Started",
		"deployPkg.update.state 4 6 " + msg + "@script disabled",
		"info-set guestinfo.gc.status Custom script is disabled",
	}, imcTradMarker, imcTradInstance, imcTradHost, imcTradAddr, imcTradDNS)

	// Tools handed the script over too, and nothing ran it.
	if dir := strings.Fields(r.get(t, "vmware-imc-dir")); !slices.Contains(dir, "script01.bat") || !slices.Contains(dir, "cust.cfg") {
		t.Errorf("%s: /run/vmware-imc has %v; want the spec and the script Tools handed over", r.name, dir)
	}
	checkRootPassword(t, r, imcTradPassword)
	if st := r.get(t, "seedkeeper-status"); !strings.Contains(st, imcTradHost+"."+imcTradDomain) {
		t.Logf("%s: seedkeeper status does not name %s.%s:\n%s", r.name, imcTradHost, imcTradDomain, st)
	}
}

// TestIntegrationSystemdVMwareIMCCloudInit boots one disk twice: first as
// a clone customized with a spec of the cloud-init kind (meta-data with
// its own instance ID and network, user-data), which seedkeeper applies
// and reports done; then again with no spec (Tools is given none after
// the customized boot): the kept spec is read again, its network set,
// nothing reported, the instance and the marker kept. Two boots, in make
// e2e.
func TestIntegrationSystemdVMwareIMCCloudInit(t *testing.T) {
	testenv.Integration(t)
	if !fullMatrix() {
		t.Skip("the cloud-init kind of VMware customization runs in make e2e (SEEDKEEPER_VM_MATRIX=full)")
	}
	t.Parallel()
	img := needSystemdVariant(t, relBookworm, "networkd", "vmware")
	d := newSDDisk(t, img)
	b := sdBoot{Name: "imc-cloudinit", UUID: vmwareUUID, NICs: []sdNIC{nicVMware}, SMBIOS: []string{vmwareSMBIOS}, Append: []string{"sk.imc=" + imcCIName}}
	r1 := d.boot(t, b)
	checkIMCCloudInitFirstBoot(t, r1)

	b.Name, b.Append = "imc-again", nil
	r2 := d.boot(t, b)
	if k := r2.get(t, "kind"); k != "normal" {
		t.Errorf("%s: reported by the hang timer (%s), not after cloud-final", r2.name, k)
	}
	calls, err := parseRPCCalls(r2.get(t, "vmware-calls"))
	if err != nil {
		t.Fatalf("%s: the stub's record: %v", r2.name, err)
	}
	for _, c := range calls {
		if strings.HasPrefix(c.rpc, "deployPkg.") || strings.HasPrefix(c.rpc, "info-set guestinfo.gc.status") {
			t.Errorf("%s: %s reported %q with no spec handed over", r2.name, c.unit, c.rpc)
		}
	}
	if id := r2.instanceID(t); id != imcCIInstance {
		t.Errorf("%s: cloud-init's instance is %q, want the customized %q kept", r2.name, id, imcCIInstance)
	}
	if got := r2.get(t, "vmware-imc-marker"); got != imcCIMarker {
		t.Errorf("%s: the marker is %q, want %q kept", r2.name, got, imcCIMarker)
	}
	if h := r2.get(t, "hostname"); h != imcCIHost {
		t.Errorf("%s: hostname %q, want %q kept", r2.name, h, imcCIHost)
	}
	f1, f2 := r1.fileStats(t), r2.fileStats(t)
	if m := "/var/lib/seedkeeper/vmware-imc-marker"; f1[m] == "" || f1[m] != f2[m] {
		t.Errorf("%s: the marker file was %q after the customized boot and is %q now: written again", r2.name, f1[m], f2[m])
	}
	// The spec kept at the customized boot is read again: its address is set.
	if got := r2.addrs(t, "addr.json", nicVMware.MAC); !slices.Equal(got, []string{imcCIAddr + "/24"}) {
		t.Errorf("%s: the NIC has %v, want the kept spec's [%s/24]\nseedkeeper status:\n%s\njournal:\n%s", r2.name, got, imcCIAddr, r2.get(t, "seedkeeper-status"), r2.get(t, "journal-seedkeeper"))
	}
	if st := r2.get(t, "seedkeeper-status"); !strings.Contains(st, "/var/lib/seedkeeper/vmware-imc-spec.json") {
		t.Errorf("%s: the status does not say the kept spec was read:\n%s", r2.name, st)
	}
}

// TestIntegrationSystemdVMwareForky boots the VMware guest once on
// forky's networkd image, as a vSphere clone customized with the spec of
// the cloud-init kind (Tools hands it over as in
// TestIntegrationSystemdVMwareIMCCloudInit's first boot): cloud-init 26.2,
// whose VMware datasource knows network events of its own (boot,
// boot-new-instance, hotplug) and would render the spec's network,
// advertise them in guestinfo and apply them. It shows every check of
// that first boot (the spec's instance, hostname, address and resolver,
// the reports to vCenter, the password said nowhere), and that the two
// never both configure the NIC (checkForkyVMwareNetwork). One boot, in
// make test: the only one of the cloud-init kind there.
func TestIntegrationSystemdVMwareForky(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	img := needSystemdVariant(t, relForky, "networkd", "vmware")
	d := newSDDisk(t, img)
	r := d.boot(t, sdBoot{Name: "vmware-forky-imc", UUID: vmwareUUID, NICs: []sdNIC{nicVMware}, SMBIOS: []string{vmwareSMBIOS},
		Append: []string{"sk.imc=" + imcCIName}})
	checkForkyVMwareNetwork(t, r)
	checkIMCCloudInitFirstBoot(t, r)
}

// TestIntegrationSystemdVMwareForkyGuestinfo boots the guestinfo guest of
// TestIntegrationSystemdVMware on forky's networkd image, with the checks
// of both that boot and checkForkyVMwareNetwork. One boot, in make e2e
// (SEEDKEEPER_VM_MATRIX=full): make test loses nothing without it, as
// Debian 12's guestinfo boot runs the same seedkeeper code through the
// same stub, and what forky changes is cloud-init, whose network and
// events TestIntegrationSystemdVMwareForky shows left to seedkeeper on a
// customized boot, on the same image.
func TestIntegrationSystemdVMwareForkyGuestinfo(t *testing.T) {
	testenv.Integration(t)
	if !fullMatrix() {
		t.Skip("the guestinfo boot on forky runs in make e2e (SEEDKEEPER_VM_MATRIX=full); make test boots guestinfo on Debian 12 and forky's cloud-init 26.2 with a spec")
	}
	t.Parallel()
	img := needSystemdVariant(t, relForky, "networkd", "vmware")
	d := newSDDisk(t, img)
	r := d.boot(t, sdBoot{Name: "vmware-forky", UUID: vmwareUUID, NICs: []sdNIC{nicVMware}, SMBIOS: []string{vmwareSMBIOS},
		Append: vmwareCmdline(vmwareGuestinfo(t))})
	checkForkyVMwareNetwork(t, r)
	checkSeedkeeperUnit(t, r)
	checkVMwareGuest(t, r)
}

// checkForkyVMwareNetwork is what a VMware boot on cloud-init 26.2 shows
// whatever seedkeeper read: seedkeeper-boot done before cloud-init's
// first units started, and the NIC configured by seedkeeper alone:
// cloud-init ran NoCloud from seedkeeper's seed with its network
// configuration disabled, its renderers wrote no file, networkd
// configured the NIC from seedkeeper's file alone (from the first
// journal line on), and seedkeeper-boot advertised the network events
// while every guestinfo write came from seedkeeper's units, none from
// cloud-init.
func checkForkyVMwareNetwork(t *testing.T, r *sdReport) {
	t.Helper()
	if v := r.get(t, "cloud-init-version"); !strings.Contains(v, " 26.") {
		t.Fatalf("%s: cloud-init is %q, not 26.x: the case is not exercised", r.name, v)
	}
	checkCloudInitOrder(t, r, relForky)

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
	for _, rpc := range []string{"info-set guestinfo.cloudinit.updates.supported network=boot;boot-new-instance;hotplug",
		"info-set guestinfo.cloudinit.updates.enabled network=boot;boot-new-instance;hotplug"} {
		if _, ok := findRPC(calls, rpc, "seedkeeper-boot.service"); !ok {
			t.Errorf("%s: no %q from seedkeeper-boot:\n%s", r.name, rpc, r.get(t, "vmware-calls"))
		}
	}
	for _, c := range calls {
		if strings.HasPrefix(c.rpc, "info-set guestinfo.cloudinit.") && c.unit != "seedkeeper-boot.service" {
			t.Errorf("%s: %s advertised network events: %q", r.name, c.unit, c.rpc)
		} else if strings.HasPrefix(c.rpc, "info-set ") && c.unit != "seedkeeper-boot.service" && c.unit != "seedkeeper-watch.service" {
			t.Errorf("%s: %s set guestinfo: %q", r.name, c.unit, c.rpc)
		}
	}
	if t.Failed() {
		t.Logf("%s: network files:\n%s\nnetworkctl:\n%s", r.name, netfiles, r.get(t, "networkctl"))
	}
}
