package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/seedkeeper/seedkeeper/internal/nstest"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// inNewNetns runs the rest of the test on a locked thread inside a new
// named network namespace, deleted (and the thread returned) at cleanup.
func inNewNetns(t *testing.T) *netlink.Handle {
	n := nstest.New(t, "sknet")
	n.Enter(t)
	return n.Netlink
}

func TestIntegrationNetPlanApply(t *testing.T) {
	testenv.Integration(t)
	nh := inNewNetns(t)
	mac, _ := net.ParseMAC("bc:24:11:aa:bb:01")
	peer, _ := net.ParseMAC("bc:24:11:00:00:01")
	if err := nh.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "ens4", HardwareAddr: mac}, PeerName: "p4", PeerHardwareAddr: peer}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "network-config")
	write := func(gw string) {
		os.WriteFile(cfgPath, []byte(`version: 2
ethernets:
  lan:
    match: {macaddress: "BC:24:11:AA:BB:01"}
    set-name: eth0
    addresses: [192.0.2.10/24]
    gateway4: `+gw+`
`), 0o644)
	}
	write("192.0.2.1")
	root := filepath.Join(dir, "root")
	base := []string{"--config", cfgPath, "--drivers", "veth", "--root", root}

	code, out, errs := runNetCapture(append([]string{"plan"}, base...)...)
	if code != 0 || !strings.Contains(out, "ens4 (bc:24:11:aa:bb:01): rename ens4 -> eth0\n") {
		t.Fatalf("plan = %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(root, receiptPath)); !os.IsNotExist(err) {
		t.Errorf("plan wrote the receipt (%v)", err)
	}

	// On VMware with no --drivers, the metadata's network-drivers decide,
	// as at boot: veth is allowed, so the NIC is owned.
	vmRoot := filepath.Join(dir, "vmware")
	os.MkdirAll(filepath.Join(vmRoot, "sys/class/dmi/id"), 0o755)
	os.WriteFile(filepath.Join(vmRoot, "sys/class/dmi/id/product_name"), []byte("VMware Virtual Platform\n"), 0o444)
	t.Setenv("VMX_GUESTINFO", "1")
	t.Setenv("VMX_GUESTINFO_METADATA", "instance-id: i-1\nnetwork-drivers: [veth]\n")
	code, out, errs = runNetCapture("plan", "--config", cfgPath, "--root", vmRoot)
	if code != 0 || !strings.Contains(out, "ens4 (bc:24:11:aa:bb:01): rename ens4 -> eth0\n") ||
		!strings.Contains(errs, "driver allowlist veth (from metadata network-drivers)") {
		t.Errorf("plan on VMware with network-drivers [veth] = %d\n%s%s", code, out, errs)
	}
	// Without it, the VMware defaults, which do not have veth.
	t.Setenv("VMX_GUESTINFO", "")
	t.Setenv("PATH", t.TempDir())
	code, out, errs = runNetCapture("plan", "--config", cfgPath, "--root", vmRoot)
	if code != 0 || !strings.Contains(out, `driver "veth" is not allowed`) || !strings.Contains(errs, "(from default for vmware)") {
		t.Errorf("plan on VMware with the default allowlist = %d\n%s%s", code, out, errs)
	}

	code, out, errs = runNetCapture(append([]string{"apply"}, base...)...)
	if code != 0 || !strings.Contains(out, "done   eth0 (bc:24:11:aa:bb:01): add route default via 192.0.2.1\n") {
		t.Fatalf("apply = %d\n%s%s", code, out, errs)
	}
	if _, err := nh.LinkByName("eth0"); err != nil {
		t.Errorf("eth0 after apply: %v", err)
	}
	receipt, err := os.ReadFile(filepath.Join(root, receiptPath))
	if err != nil || !strings.Contains(string(receipt), `"192.0.2.10/24"`) {
		t.Errorf("receipt = %s (%v)", receipt, err)
	}

	code, out, _ = runNetCapture(append([]string{"apply"}, base...)...)
	if code != 0 || out != "no changes\n" {
		t.Errorf("second apply = %d %q, want 0 \"no changes\"", code, out)
	}

	// The default driver list does not allow veth: nothing is owned.
	code, out, _ = runNetCapture("plan", "--config", cfgPath, "--root", root)
	if code != 0 || !strings.Contains(out, `eth0 (bc:24:11:aa:bb:01): driver "veth" is not allowed`) {
		t.Errorf("plan with default drivers = %d %q", code, out)
	}

	// A link-local gateway is taken as on the link, never made on-link
	// (a gateway outside every address is: netcfg.Config.Plan); without
	// an address in 169.254.0.0/16 the kernel cannot reach it.
	write("169.254.0.1")
	code, out, errs = runNetCapture(append([]string{"apply"}, base...)...)
	if code != exitPartial ||
		!strings.Contains(out, "FAILED eth0 (bc:24:11:aa:bb:01): add route default via 169.254.0.1: network is unreachable\n") ||
		!strings.Contains(out, "done   eth0 (bc:24:11:aa:bb:01): remove route default via 192.0.2.1") ||
		!strings.Contains(errs, "network applied partially: 1 of 2 operations failed") {
		t.Errorf("apply with unreachable gateway = %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// The plan is a precondition: apply --expect applies only the plan that
// was read, and refuses (exit 5, nothing changed) when a link changed
// between the two.
func TestIntegrationNetApplyExpectRefusesAChangedPlan(t *testing.T) {
	testenv.Integration(t)
	nh := inNewNetns(t)
	mac, _ := net.ParseMAC("bc:24:11:aa:bb:05")
	peer, _ := net.ParseMAC("bc:24:11:00:00:05")
	if err := nh.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "ens5", HardwareAddr: mac}, PeerName: "p5", PeerHardwareAddr: peer}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "network-config")
	os.WriteFile(cfgPath, []byte("version: 2\nethernets:\n  lan:\n    match: {macaddress: \"bc:24:11:aa:bb:05\"}\n    set-name: eth5\n    addresses: [192.0.2.50/24]\n"), 0o644)
	base := []string{"--config", cfgPath, "--drivers", "veth", "--root", filepath.Join(dir, "root")}

	code, out, errs := runNetCapture(append([]string{"plan", "--json"}, base...)...)
	var plan struct {
		SchemaVersion int `json:"schema_version"`
		Digest        string
		Ops           []struct{ Op string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || plan.SchemaVersion != 1 || !validDigest(plan.Digest) || len(plan.Ops) == 0 {
		t.Fatalf("plan --json = %d\n%s%s", code, out, errs)
	}
	_, text, _ := runNetCapture(append([]string{"plan"}, base...)...)
	if !strings.HasSuffix(text, "Plan digest: "+plan.Digest+"\n") {
		t.Errorf("the text plan does not end with the same digest:\n%s", text)
	}

	// Between the plan and the apply, someone renames the NIC.
	l, _ := nh.LinkByName("ens5")
	if err := nh.LinkSetName(l, "other5"); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runNetCapture(append([]string{"apply", "--expect", plan.Digest}, base...)...)
	if code != exitPlanChanged || out != "" || !strings.Contains(errs, "the plan is no longer the one that was read") ||
		!strings.Contains(errs, "rename other5 -> eth5") {
		t.Fatalf("apply --expect after a change = %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if addrs, _ := nh.AddrList(l, netlink.FAMILY_V4); len(addrs) != 0 {
		t.Errorf("a refused apply added %v", addrs)
	}
	if _, err := os.Stat(filepath.Join(dir, "root", receiptPath)); !os.IsNotExist(err) {
		t.Errorf("a refused apply wrote the receipt (%v)", err)
	}

	// Planned and read again: the apply goes ahead.
	_, out, _ = runNetCapture(append([]string{"plan", "--json"}, base...)...)
	json.Unmarshal([]byte(out), &plan)
	code, out, errs = runNetCapture(append([]string{"apply", "--expect", plan.Digest}, base...)...)
	if code != 0 || !strings.Contains(out, "done   eth5 (bc:24:11:aa:bb:05): add address 192.0.2.50/24") {
		t.Errorf("apply --expect the current digest = %d\n%s%s", code, out, errs)
	}
	if code, _, _ := runNetCapture(append([]string{"apply", "--expect", "sha256:1"}, base...)...); code != exitUsage {
		t.Errorf("a malformed --expect: exit %d, want %d", code, exitUsage)
	}
}
