package main

import (
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

	write("203.0.113.1")
	code, out, errs = runNetCapture(append([]string{"apply"}, base...)...)
	if code != exitPartial ||
		!strings.Contains(out, "FAILED eth0 (bc:24:11:aa:bb:01): add route default via 203.0.113.1: network is unreachable\n") ||
		!strings.Contains(out, "done   eth0 (bc:24:11:aa:bb:01): remove route default via 192.0.2.1") ||
		!strings.Contains(errs, "network applied partially: 1 of 2 operations failed") {
		t.Errorf("apply with unreachable gateway = %d\nstdout %s\nstderr %s", code, out, errs)
	}
}
