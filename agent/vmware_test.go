package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/syncbuf"
)

// vmwareGuest is a VMware guest's root and its VMX, served by the stub
// tools, which are the only ones in $PATH.
type vmwareGuest struct {
	root, vmx, log string
}

func newVMwareGuest(t *testing.T, config string) *vmwareGuest {
	t.Helper()
	g := &vmwareGuest{vmx: filepath.Join(t.TempDir(), "vmx")}
	g.log = filepath.Join(g.vmx, "..", "calls.log")
	bin := filepath.Join(t.TempDir(), "bin")
	for _, d := range []string{g.vmx, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"vmware-rpctool", "vmtoolsd", "guestinfo-stub.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "vmware", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("GUESTINFO_DIR", g.vmx)
	t.Setenv("GUESTINFO_LOG", g.log)
	t.Setenv("VMX_GUESTINFO", "")
	g.root = kvmRoot(t, map[string]string{
		"sys/class/dmi/id/product_name": "VMware7,1\n",
		"sys/class/dmi/id/sys_vendor":   "VMware, Inc.\n",
		"etc/seedkeeper/config.yaml":    "hotplug:\n  drivers: [veth]\n" + config,
	})
	return g
}

func (g *vmwareGuest) set(t *testing.T, key, val string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(g.vmx, "guestinfo."+key), []byte(val), 0o644); err != nil {
		t.Fatal(err)
	}
}

// get is what the VMX holds for key; "" when nothing.
func (g *vmwareGuest) get(key string) string {
	b, _ := os.ReadFile(filepath.Join(g.vmx, "guestinfo."+key))
	return string(b)
}

// sets are the info-set calls the tools got, as "TOOL|ARG|...".
func (g *vmwareGuest) sets(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(g.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, "|info-set ") {
			out = append(out, l)
		}
	}
	return out
}

const vmwareMAC = "02:5e:00:00:07:01"

func vmwareMetadata(wait string) string {
	return `instance-id: i-vmware-1
local-hostname: vm1
` + wait + `network:
  version: 2
  ethernets:
    lan:
      match: {macaddress: "` + vmwareMAC + `"}
      addresses: [192.0.2.71/24, "2001:db8:7::71/64"]
      routes:
        - {to: default, via: 192.0.2.1}
        - {to: "::/0", via: "2001:db8:7::1"}
`
}

// localSets are the info-set calls of guestinfo.local-ipv4 and -ipv6.
func (g *vmwareGuest) localSets(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range g.sets(t) {
		if strings.Contains(l, "info-set guestinfo.local-ipv") {
			out = append(out, l)
		}
	}
	return out
}

// A boot that only plans the network (--root without --network apply)
// neither waits nor publishes, and says why; the traces of VMware Tools'
// guest customization are findings in the status.
func TestBootVMwarePlannedAndCustomization(t *testing.T) {
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", vmwareMetadata("wait-on-network: {ipv4: true}\n"))
	for name, data := range map[string]string{
		"run/vmware-imc/.vmware-imgcust-dAbc123/cust.cfg": "[NETWORK]\n",
		"var/log/vmware-imc/toolsDeployPkg.log":           "[2026-11-30T09:12:01.301Z] [    info] Executing traditional GOSC workflow.\n",
	} {
		p := filepath.Join(g.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := &syncbuf.Buffer{}
	st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", agent.NewLogger(log)), agent.BootOptions{})
	if err != nil {
		t.Fatalf("Boot: %v\n%s", err, log)
	}
	v := st.VMware
	if v == nil {
		t.Fatalf("no vmware status\n%s", log)
	}
	const why = "the network was not applied on this machine (not applied: --network plan, or --root without --network apply)"
	if v.Wait != "wait-on-network asks for ipv4: not waited for: "+why {
		t.Errorf("wait = %q", v.Wait)
	}
	if !slices.Equal(v.Notes, []string{"guestinfo.local-ipv4 and guestinfo.local-ipv6 not published: " + why}) {
		t.Errorf("notes = %q", v.Notes)
	}
	if got := g.sets(t); len(got) != 0 {
		t.Errorf("info-set calls %q, want none", got)
	}
	if len(v.Customization) != 2 ||
		!strings.HasPrefix(v.Customization[0], "a VMware customization spec (cust.cfg) is waiting under /run/vmware-imc and is not applied: seedkeeper reads a spec only as /var/run/vmware-imc/cust.cfg, and only when guestinfo holds no metadata") ||
		!strings.HasPrefix(v.Customization[1], "VMware Tools ran a guest customization itself here (/var/log/vmware-imc/toolsDeployPkg.log, last written ") ||
		!strings.HasSuffix(v.Customization[1], "set [deployPkg] enable-customization = false in /etc/vmware-tools/tools.conf to refuse them") {
		t.Errorf("customization = %q", v.Customization)
	}
}

// The envvar transport has no tool to write with: nothing is published,
// as cloud-init publishes nothing then either; a KVM guest gets no VMware
// status at all.
func TestBootVMwareEnvvarAndOtherSources(t *testing.T) {
	g := newVMwareGuest(t, "")
	t.Setenv("VMX_GUESTINFO", "1")
	t.Setenv("VMX_GUESTINFO_METADATA", "instance-id: i-env\n")
	// A boot that changes the machine (with --network off nothing would
	// be published anyway, and the test could not fail).
	st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatal(err)
	}
	if st.Transport != "envvar" || st.VMware == nil || st.VMware.Customization != nil {
		t.Fatalf("transport %q, vmware %+v", st.Transport, st.VMware)
	}
	if got := g.sets(t); len(got) != 0 {
		t.Errorf("info-set calls %q, want none", got)
	}
	wantNotes := []string{"guestinfo.local-ipv4 and guestinfo.local-ipv6 not published: the network was not applied on this machine (the metadata has no network configuration; leaving the network alone)"}
	if len(st.VMware.Published) != 0 || !slices.Equal(st.VMware.Notes, wantNotes) {
		t.Errorf("published %q, notes %q; want nothing tried", st.VMware.Published, st.VMware.Notes)
	}

	t.Setenv("VMX_GUESTINFO", "")
	root := kvmRoot(t, nil)
	copySeed(t, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	st, err = agent.Boot(context.Background(), agent.LoadEnv(root, "", nil), agent.BootOptions{})
	if err != nil || st.VMware != nil {
		t.Errorf("NoCloud boot: %v, vmware status %+v", err, st.VMware)
	}
}

// The network events are advertised as cloud-init's activate() does,
// from events.network, even when the metadata has no network; with
// network.owner cloud-init seedkeeper applies no event and advertises
// nothing.
func TestBootVMwareAdvertisesUpdates(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   []string
	}{
		{"events: {network: [hotplug]}\n", []string{
			"vmware-rpctool|info-set guestinfo.cloudinit.updates.supported network=boot;boot-new-instance;hotplug",
			"vmware-rpctool|info-set guestinfo.cloudinit.updates.enabled network=boot-new-instance;hotplug",
		}},
		{"events: {network: []}\n", []string{
			"vmware-rpctool|info-set guestinfo.cloudinit.updates.supported network=boot;boot-new-instance;hotplug",
			"vmware-rpctool|info-set guestinfo.cloudinit.updates.enabled network=boot-new-instance",
		}},
		{"network: {owner: cloud-init}\n", nil},
	} {
		g := newVMwareGuest(t, tc.config)
		g.set(t, "metadata", "instance-id: i-adv\n")
		st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{Network: agent.NetworkApply})
		if err != nil {
			t.Fatalf("%q: Boot: %v", tc.config, err)
		}
		if got := g.sets(t); !slices.Equal(got, tc.want) {
			t.Errorf("%q: info-set calls %q, want %q", tc.config, got, tc.want)
		}
		if got := g.get("cloudinit.updates.enabled"); len(tc.want) > 0 && "vmware-rpctool|info-set guestinfo.cloudinit.updates.enabled "+got != tc.want[1] {
			t.Errorf("%q: the VMX holds %q", tc.config, got)
		}
		if st.ConfigError != "" {
			t.Errorf("config error %s", st.ConfigError)
		}
	}
}

// The info-set calls of a boot share one bound: a tool that hangs on the
// first holds boot back once, and the calls left are not made (before,
// each waited out a tool timeout of its own), with a note for each.
func TestBootVMwareSetsShareOneBound(t *testing.T) {
	agent.SetToolBudget(t, 500*time.Millisecond)
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", "instance-id: i-hang\n")
	for _, k := range []string{sourceduty.GuestinfoUpdatesSupported, sourceduty.GuestinfoUpdatesEnabled} {
		g.set(t, k+".hang-vmware-rpctool", "")
	}
	st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{Network: agent.NetworkApply})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vmware-rpctool|info-set guestinfo.cloudinit.updates.supported network=boot;boot-new-instance;hotplug"}
	if got := g.sets(t); !slices.Equal(got, want) {
		t.Errorf("info-set calls %q, want only %q", got, want)
	}
	if st.VMware == nil || len(st.VMware.Published) != 0 || len(st.VMware.Notes) != 3 ||
		!strings.HasPrefix(st.VMware.Notes[1], "publishing guestinfo.cloudinit.updates.supported failed: ") ||
		st.VMware.Notes[2] != "guestinfo.cloudinit.updates.enabled not published: not tried, the tool calls of this boot (info-set and reports to vCenter) ran out of their 500ms" {
		t.Errorf("vmware status %+v", st.VMware)
	}
	if st.Outcome != "ok" {
		t.Errorf("outcome %q, want ok", st.Outcome)
	}
}

// A boot that fails after reading the metadata (here the seed cannot be
// written) does not lose what was found of VMware Tools' customization:
// that is when it matters most.
func TestBootVMwareFailedKeepsCustomization(t *testing.T) {
	g := newVMwareGuest(t, "")
	g.set(t, "metadata", vmwareMetadata(""))
	for _, p := range []string{"var/log/vmware-imc", "var/lib/elsewhere"} {
		if err := os.MkdirAll(filepath.Join(g.root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(g.root, "var/log/vmware-imc/toolsDeployPkg.log"), []byte("[2026-11-30T09:12:01.301Z] [    info] Executing traditional GOSC workflow.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The state directory is a link: boot refuses to write through it.
	if err := os.RemoveAll(filepath.Join(g.root, "var/lib/seedkeeper")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(g.root, "var/lib/seedkeeper")); err != nil {
		t.Fatal(err)
	}
	st, err := agent.Boot(context.Background(), agent.LoadEnv(g.root, "", nil), agent.BootOptions{})
	if err == nil || st.Outcome != "error" {
		t.Fatalf("Boot: %v, outcome %q; want it to fail", err, st.Outcome)
	}
	if st.VMware == nil || len(st.VMware.Customization) != 1 ||
		!strings.HasPrefix(st.VMware.Customization[0], "VMware Tools ran a guest customization itself here (/var/log/vmware-imc/toolsDeployPkg.log") {
		t.Errorf("vmware status %+v", st.VMware)
	}
}
