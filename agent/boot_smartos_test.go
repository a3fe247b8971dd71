package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// smartosStore is the sample VM with every extra cloud-init's SmartOS
// datasource hands on: an operator script without "#!" and legacy
// user-data.
func smartosStore() *mdatatest.Store {
	st := mdatatest.Default()
	st.SetString("sdc:operator-script", "echo operator ran\n")
	st.SetString("user-data", "legacy user-data\n")
	return st
}

// smartosUnix serves st on a unix socket, as the host agent does for a
// zone, and returns the transport that names it.
func smartosUnix(t *testing.T, st *mdatatest.Store) string {
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
	return "unix:" + sock
}

// smartosBoot boots a root whose DMI says SmartOS, with the mdata
// transport forced to transport, planning the network only.
func smartosBoot(t *testing.T, transport string) (string, *agent.Status, error) {
	t.Helper()
	root := kvmRoot(t, map[string]string{"sys/class/dmi/id/product_name": "SmartDC HVM\n", "sys/class/dmi/id/sys_vendor": "Joyent\n"})
	if err := os.Remove(filepath.Join(root, "sys/class/dmi/id/product_uuid")); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Mdata.Transport = transport
	st, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root), Config: cfg}, agent.BootOptions{Network: agent.NetworkPlan})
	return root, st, err
}

// checkSmartOSSeed checks what a SmartOS boot hands cloud-init: the seed
// from the sample VM's keys, the per-boot scripts (operator first, given
// "#!/bin/bash" when it has none) and the legacy user-data, with their
// modes.
func checkSmartOSSeed(t *testing.T, root string, st *agent.Status, transport string) {
	t.Helper()
	meta := seedFile(t, root, "meta-data")
	if metaDataID(t, root) != mdatatest.SampleUUID || !strings.Contains(meta, "local-hostname: \"web01\"\n") ||
		!strings.Contains(meta, "admin@example.com\"\n") || !strings.Contains(meta, "deploy@example.com\"\n") {
		t.Errorf("meta-data =\n%s", meta)
	}
	want, _ := mdatatest.Default().Get("cloud-init:user-data")
	if got := seedFile(t, root, "user-data"); got != string(want) {
		t.Errorf("user-data = %q, want cloud-init:user-data %q", got, want)
	}
	userScript, _ := mdatatest.Default().Get("user-script")
	for path, w := range map[string]struct {
		data string
		mode os.FileMode
	}{
		"var/lib/cloud/scripts/per-boot/00-seedkeeper-operator-script": {"#!/bin/bash\necho operator ran\n", 0o700},
		"var/lib/cloud/scripts/per-boot/01-seedkeeper-user-script":     {string(userScript), 0o700},
		"var/db/mdata-user-data":                                       {"legacy user-data\n", 0o400},
	} {
		b, err := os.ReadFile(filepath.Join(root, path))
		fi, serr := os.Lstat(filepath.Join(root, path))
		if err != nil || serr != nil || string(b) != w.data || fi.Mode().Perm() != w.mode {
			t.Errorf("%s: %q (%v), want %q %v", path, b, fi, w.data, w.mode)
		}
	}
	if st.Source != "smartos" || st.Transport != transport || st.Identity == nil || st.Identity.InstanceID != mdatatest.SampleUUID || st.Identity.RuleName != "first-run" {
		t.Errorf("status: source %q transport %q (want %q) identity %+v", st.Source, st.Transport, transport, st.Identity)
	}
}

func TestBootSmartOS(t *testing.T) {
	transport := smartosUnix(t, smartosStore())
	root, st, err := smartosBoot(t, transport)
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	checkSmartOSSeed(t, root, st, transport)
}

// The same over the serial line: a pty with the simulated host on the
// other side.
func TestIntegrationBootSmartOSSerial(t *testing.T) {
	testenv.Integration(t)
	h := mdatatest.NewHost(smartosStore())
	t.Cleanup(func() { h.Close() })
	p, err := h.StartPTY()
	if err != nil {
		t.Skipf("needs a pty (/dev/ptmx): %v", err)
	}
	transport := "serial:" + p.Path()
	root, st, err := smartosBoot(t, transport)
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	checkSmartOSSeed(t, root, st, transport)
}

// One bad field degrades that field: sdc:nics that is not JSON is dropped
// and named, the seed is written and the network is left alone.
func TestBootSmartOSBadNICs(t *testing.T) {
	store := smartosStore()
	store.SetString("sdc:nics", `[{"interface":"net0","mac":"90:b8:d0:4a:1b:01",`)
	root, st, err := smartosBoot(t, smartosUnix(t, store))
	if err != nil {
		t.Fatalf("Boot with bad sdc:nics JSON: %v", err)
	}
	if st.Outcome != "ok" || len(st.Dropped) != 1 || !strings.HasPrefix(st.Dropped[0], "sdc:nics dropped, leaving the network alone") {
		t.Errorf("status: outcome %q, dropped %q", st.Outcome, st.Dropped)
	}
	if st.Network == nil || st.Network.Action != "skipped" || !strings.Contains(st.Network.Reason, "no network configuration") {
		t.Errorf("network: %+v; want it left alone", st.Network)
	}
	if metaDataID(t, root) != mdatatest.SampleUUID {
		t.Errorf("the seed's ID is %q, want sdc:uuid", metaDataID(t, root))
	}
}

// cloud-init's SmartOS datasource tells the host that a zone came up by
// renaming /var/svc/provisioning once the metadata was read; boot does
// it, and a link there is not followed.
func TestBootSmartOSProvisioned(t *testing.T) {
	transport := smartosUnix(t, smartosStore())
	root := kvmRoot(t, map[string]string{
		"sys/class/dmi/id/product_name": "SmartDC HVM\n",
		"sys/class/dmi/id/sys_vendor":   "Joyent\n",
		"var/svc/provisioning":          "",
	})
	cfg := config.Default()
	cfg.Mdata.Transport = transport
	e := agent.Env{Root: sysroot.Root(root), Config: cfg}
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "var/svc/provision_success")); err != nil {
		t.Errorf("provision_success: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "var/svc/provisioning")); !os.IsNotExist(err) {
		t.Errorf("provisioning still there: %v", err)
	}
	if want := "renamed /var/svc/provisioning to /var/svc/provision_success: the host keeps the zone"; st.Provision != want {
		t.Errorf("status provision %q, want %q", st.Provision, want)
	}
	// The next boot has nothing to do.
	if st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan}); err != nil || st.Provision != "" {
		t.Errorf("second boot: %v, provision %q", err, st.Provision)
	}
	// A link is not renamed.
	os.Remove(filepath.Join(root, "var/svc/provision_success"))
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "var/svc/provisioning")); err != nil {
		t.Fatal(err)
	}
	st, err = agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil || !strings.Contains(st.Provision, "symbolic link: not renamed") {
		t.Errorf("boot with a link: %v, provision %q", err, st.Provision)
	}
	if fi, err := os.Lstat(filepath.Join(root, "var/svc/provisioning")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was touched: %v", err)
	}
}

// Under --root, a /var/svc that is a link (here to a directory of the
// root holding a provisioning file) is not followed: nothing is renamed,
// and the status says why.
func TestBootSmartOSProvisionedLinkOnTheWay(t *testing.T) {
	transport := smartosUnix(t, smartosStore())
	root := kvmRoot(t, map[string]string{
		"sys/class/dmi/id/product_name": "SmartDC HVM\n",
		"sys/class/dmi/id/sys_vendor":   "Joyent\n",
		"elsewhere/provisioning":        "",
	})
	if err := os.MkdirAll(filepath.Join(root, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../elsewhere", filepath.Join(root, "var/svc")); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Mdata.Transport = transport
	e := agent.Env{Root: sysroot.Root(root), Config: cfg}
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	if !strings.HasPrefix(st.Provision, "the zone's provisioning state not changed: /var/svc: ") || !strings.Contains(st.Provision, "not followed") {
		t.Errorf("status provision %q", st.Provision)
	}
	if _, err := os.Stat(filepath.Join(root, "elsewhere/provisioning")); err != nil {
		t.Errorf("the file behind the link was renamed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "elsewhere/provision_success")); !os.IsNotExist(err) {
		t.Errorf("provision_success behind the link: %v", err)
	}
}
