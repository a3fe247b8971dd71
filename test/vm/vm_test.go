package vm

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// Paths in the guest.
const (
	seedMeta     = "/var/lib/cloud/seed/nocloud/meta-data"
	statusFile   = "/var/lib/seedkeeper/status.json"
	identityFile = "/var/lib/seedkeeper/identity.json"
)

// The MACs of the NICs in mdatatest.Default's sdc:nics, and the
// addresses it gives them.
const (
	net0MAC  = "90:b8:d0:4a:1b:01"
	net0Addr = "203.0.113.10/24"
	net1MAC  = "90:b8:d0:4a:1b:02"
	net1Addr = "10.88.0.10/24"
)

func newUUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// smartosStore is the sample VM with a fresh sdc:uuid and hostname.
func smartosStore(t *testing.T) (st *mdatatest.Store, uuid, hostname string) {
	st = mdatatest.Default()
	uuid = newUUID(t)
	hostname = "vm-" + uuid[:8]
	st.SetString("sdc:uuid", uuid)
	st.SetString("sdc:hostname", hostname)
	st.SetString("hostname", hostname)
	return st, uuid, hostname
}

// metaData parses the seed's meta-data.
func metaData(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var md map[string]any
	if err := yaml.Unmarshal(b, &md); err != nil {
		t.Fatalf("the seed's meta-data is not YAML: %v\n%s", err, b)
	}
	return md
}

// status is the part of status.json the tests check.
type status struct {
	Outcome   string `json:"outcome"`
	Error     string `json:"error"`
	Source    string `json:"source"`
	Transport string `json:"transport"`
	Network   *struct {
		Action string   `json:"action"`
		Failed []string `json:"failed"`
	} `json:"network"`
}

func bootStatus(t *testing.T, b []byte) status {
	t.Helper()
	var st status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status.json: %v\n%s", err, b)
	}
	return st
}

// noGuestErrors fails the test for every "SKVM error" line.
func noGuestErrors(t *testing.T, m *machine) {
	t.Helper()
	for _, e := range m.guestErrors() {
		t.Errorf("guest: %s", e)
	}
}

// checkBoot checks that seedkeeper boot ran to success and wrote the seed
// with instance-id id, and returns its status.
func checkBoot(t *testing.T, m *machine, id string) status {
	t.Helper()
	if code := m.exit("boot"); code != 0 {
		t.Errorf("seedkeeper boot: exit status %d, want 0", code)
	}
	md := metaData(t, m.file(seedMeta))
	if got := md["instance-id"]; got != id {
		t.Errorf("the seed's instance-id is %v, want %s", got, id)
	}
	st := bootStatus(t, m.file(statusFile))
	if st.Outcome != "ok" {
		t.Errorf("status.json: outcome %q (%s), want ok", st.Outcome, st.Error)
	}
	return st
}

// TestIntegrationVMSmartOSBoot boots a SmartOS-flavoured VM: seedkeeper
// boot reads the simulated host over the real ttyS1, hands cloud-init
// sdc:uuid as the instance ID, and applies the primary NIC's address;
// mdata-get in the guest reads what the host serves.
func TestIntegrationVMSmartOSBoot(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	g := needGuest(t)
	st, uuid, hostname := smartosStore(t)
	h := mdatatest.NewHost(st)
	t.Cleanup(func() { h.Close() })

	m := startVM(t, g, vmConfig{
		host: h,
		uuid: uuid,
		nics: []string{net0MAC, net1MAC},
		script: `
run boot /sbin/seedkeeper boot
file ` + seedMeta + `
file ` + statusFile + `
run mdata-get /usr/sbin/mdata-get sdc:hostname
wait-addr ` + net0MAC + ` ` + net0Addr + ` 10
wait-addr ` + net1MAC + ` ` + net1Addr + ` 10
links
`,
	})
	m.waitDone()

	s := checkBoot(t, m, uuid)
	if s.Source != "smartos" || s.Transport != "serial:/dev/ttyS1" {
		t.Errorf("status.json: source %q transport %q, want smartos over serial:/dev/ttyS1", s.Source, s.Transport)
	}
	if code := m.exit("mdata-get"); code != 0 {
		t.Errorf("mdata-get sdc:hostname: exit status %d", code)
	}
	if got, want := string(m.stdout("mdata-get")), hostname+"\n"; got != want {
		t.Errorf("mdata-get sdc:hostname printed %q, the host has %q", got, want)
	}
	for _, a := range [][2]string{{net0MAC, net0Addr}, {net1MAC, net1Addr}} {
		if _, ok := m.con.find("addr " + a[0] + " " + a[1] + " "); !ok {
			t.Errorf("%s was not applied to the NIC %s", a[1], a[0])
		}
	}
	if n := h.Stats().Requests["GET"]; n == 0 {
		t.Errorf("the host served no GET")
	}
	noGuestErrors(t, m)
}

// TestIntegrationVMHostLate is LP #1667735: the host agent is not there
// while the guest first asks (what the guest sends is dropped), then comes
// up; seedkeeper boot keeps trying and completes with the right ID.
func TestIntegrationVMHostLate(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	g := needGuest(t)
	st, uuid, _ := smartosStore(t)
	h := mdatatest.NewHost(st)
	t.Cleanup(func() { h.Close() })
	h.Down()

	m := startVM(t, g, vmConfig{
		host: h,
		uuid: uuid,
		script: `
run boot /sbin/seedkeeper boot
file ` + seedMeta + `
file ` + statusFile + `
`,
	})
	// Stay down until the guest has tried more than once.
	if err := h.Wait(m.running(), func(s mdatatest.Stats) bool { return s.Discarded >= 2 }); err != nil {
		t.Fatalf("the guest never tried the host while it was down: %v", err)
	}
	if _, ok := m.con.find("exit boot "); ok {
		t.Fatalf("seedkeeper boot ended while the host was down")
	}
	t.Logf("host down for %v; bringing it up", time.Since(m.started).Round(time.Millisecond))
	h.Up()
	m.waitDone()

	checkBoot(t, m, uuid)
	if s := h.Stats(); s.Served == 0 {
		t.Errorf("the host served nothing after coming up: %+v", s)
	}
	noGuestErrors(t, m)
}

// TestIntegrationVMCidataCDROM attaches a cidata ISO made by cloud-localds
// as a CD-ROM: seedkeeper boot finds it by its label on /dev/sr0, reads it
// without mounting it, and applies its network-config.
func TestIntegrationVMCidataCDROM(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	g := needGuest(t)
	localds, err := exec.LookPath("cloud-localds")
	if err != nil {
		t.Skip("needs cloud-localds: run `sudo make test`, which installs cloud-image-utils")
	}
	dir := t.TempDir()
	id := "iid-vmtest-" + newUUID(t)[:8]
	const mac, addr = "52:54:00:5e:ed:01", "192.0.2.77/24"
	files := map[string]string{
		"meta-data":      "instance-id: " + id + "\nlocal-hostname: cdrom-vm\n",
		"user-data":      "#cloud-config\nruncmd:\n  - [echo, hello]\n",
		"network-config": "version: 2\nethernets:\n  id0:\n    match:\n      macaddress: \"" + mac + "\"\n    addresses: [" + addr + "]\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	iso := filepath.Join(dir, "seed.iso")
	cmd := exec.Command(localds, "-N", filepath.Join(dir, "network-config"), iso,
		filepath.Join(dir, "user-data"), filepath.Join(dir, "meta-data"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cloud-localds: %v\n%s", err, out)
	}

	m := startVM(t, g, vmConfig{
		cdrom: iso,
		nics:  []string{mac},
		script: `
wait-path /sys/class/block/sr0 60
run boot /sbin/seedkeeper boot
file ` + seedMeta + `
file ` + statusFile + `
file /proc/mounts
wait-addr ` + mac + ` ` + addr + ` 10
links
`,
	})
	m.waitDone()

	s := checkBoot(t, m, id)
	if s.Source != "nocloud" || s.Transport != "iso9660:/dev/sr0" {
		t.Errorf("status.json: source %q transport %q, want nocloud from iso9660:/dev/sr0", s.Source, s.Transport)
	}
	if mounts := string(m.file("/proc/mounts")); strings.Contains(mounts, "iso9660") || strings.Contains(mounts, "/dev/sr0") {
		t.Errorf("the seed disk was mounted:\n%s", mounts)
	}
	if _, ok := m.con.find("addr " + mac + " " + addr + " "); !ok {
		t.Errorf("the network-config's %s was not applied to the NIC %s", addr, mac)
	}
	noGuestErrors(t, m)
}

// TestIntegrationVMNICHotplug hot-adds a virtio-net NIC from the QEMU
// monitor while seedkeeper watch runs; the host side then adds the NIC to
// sdc:nics, and watch applies its address. The identity state and the
// seed stay byte for byte the same.
func TestIntegrationVMNICHotplug(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	g := needGuest(t)
	st, uuid, _ := smartosStore(t)
	h := mdatatest.NewHost(st)
	t.Cleanup(func() { h.Close() })
	const mac, addr = "90:b8:d0:4a:1b:03", "192.0.2.23/24"

	m := startVM(t, g, vmConfig{
		host:    h,
		uuid:    uuid,
		monitor: true,
		script: `
run boot /sbin/seedkeeper boot
file ` + seedMeta + `
file ` + statusFile + `
sha ` + identityFile + `
sha ` + seedMeta + `
bg watch /sbin/seedkeeper watch --drivers virtio_net
wait-addr ` + mac + ` ` + addr + ` 90
mark after
sha ` + identityFile + `
sha ` + seedMeta + `
links
stop watch
`,
	})
	m.waitMark("ready watch")
	checkBoot(t, m, uuid)

	for _, cmd := range []string{
		"netdev_add user,id=n1",
		"device_add virtio-net-pci,netdev=n1,id=nic1,mac=" + mac + ",romfile=",
	} {
		if out := m.monitor(cmd); out != "" {
			t.Fatalf("QEMU monitor %q: %s", cmd, out)
		}
	}
	// The host learns of the NIC after the guest has seen it, as when the
	// NIC is added with vmadm update: watch has to read the metadata again.
	addNIC(t, st, `{"interface":"net2","mac":"`+mac+`","vlan_id":0,"nic_tag":"external",`+
		`"ip":"192.0.2.23","netmask":"255.255.255.0","ips":["`+addr+`"],"mtu":1500,"model":"virtio"}`)
	m.waitDone()

	if _, ok := m.con.find("addr " + mac + " " + addr + " "); !ok {
		t.Fatalf("watch did not apply %s to the hot-added NIC %s", addr, mac)
	}
	for _, p := range []string{identityFile, seedMeta} {
		sums := m.con.all("sha256 " + p + " ")
		if len(sums) != 2 {
			t.Errorf("%s: want a sha256 before and after the hotplug, have %q (missing: %q)", p, sums, m.con.all("missing "+p))
			continue
		}
		if sums[0] != sums[1] {
			t.Errorf("%s changed across the hotplug: %q, then %q", p, sums[0], sums[1])
		}
	}
	if code := m.exit("watch"); code != 0 {
		t.Errorf("seedkeeper watch: exit status %d after SIGTERM, want 0", code)
	}
	noGuestErrors(t, m)
}

// addNIC appends a NIC (a JSON object) to the store's sdc:nics.
func addNIC(t *testing.T, st *mdatatest.Store, nic string) {
	t.Helper()
	b, _ := st.Get("sdc:nics")
	var nics []json.RawMessage
	if err := json.Unmarshal(b, &nics); err != nil {
		t.Fatalf("sdc:nics: %v", err)
	}
	nics = append(nics, json.RawMessage(nic))
	out, err := json.Marshal(nics)
	if err != nil {
		t.Fatal(err)
	}
	st.Set("sdc:nics", out)
}
