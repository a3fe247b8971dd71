package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/paths"
)

func TestCheckFreshImageBehaves(t *testing.T) {
	r := check(t, freshImage(t))
	for _, it := range r.Items {
		want := OK
		if it.ID == "sealed" {
			want = Note
		}
		if it.Verdict != want {
			t.Errorf("%s: %s (%s; %s)", it.ID, it.Verdict, it.Found, it.Clone)
		}
	}
	if r.Count(Finding) != 0 || r.Summary() != "a clone of this image will behave at first boot" {
		t.Errorf("summary: %s", r.Summary())
	}
}

func TestCheckBootedTemplate(t *testing.T) {
	m := bootedTemplate(t)
	r := check(t, m)
	expectItem(t, r, "cloud-init-state", Finding, templateID, "rule 4", templateMID, "seedkeeper image seal --root "+m.dir)
	expectItem(t, r, "seedkeeper-state", Finding, "pin "+templateID)
	expectItem(t, r, "machine-id", Finding, "filled", DBusMachineIDPath+" is a filled file")
	expectItem(t, r, "ssh-host-keys", Finding, "4 host key file(s) in /etc/ssh")
	expectItem(t, r, "seed-dir", Note, "seedkeeper's seed from an earlier boot")
	expectItem(t, r, "units", OK)
	expectItem(t, r, "drop-in", OK, "datasource_list [NoCloud, None] (from "+DropIn+")")
	if r.Count(Finding) != 4 || !strings.Contains(r.Summary(), "4 finding(s)") {
		t.Errorf("summary: %s", r.Summary())
	}
}

// A template that kept a VMware customization spec: a finding, whether
// or not a pin is there (a clone without a spec of its own would take
// this machine's network), and the seal removes it.
func TestCheckKeptVMwareSpec(t *testing.T) {
	m := freshImage(t)
	m.write(paths.VMwareIMCSpec, "{}\n")
	r := check(t, m)
	expectItem(t, r, "seedkeeper-state", Finding, paths.VMwareIMCSpec, "this machine's customization again", "seedkeeper image seal")
}

// The derived-ID template case (docs/design.md, "Identity rules", rule 3):
// cloud-init ran, no pin.
func TestCheckCloudInitStateWithoutPin(t *testing.T) {
	m := bootedTemplate(t)
	m.remove(identity.StatePath)
	r := check(t, m)
	expectItem(t, r, "cloud-init-state", Finding, "instance ID "+templateID, "derived ID", "adopts cloud-init's "+templateID+" on its first run (rule 3)")

	identity.MarkSealed(m.root(), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r = check(t, m)
	expectItem(t, r, "cloud-init-state", Note, "sealed")
	expectItem(t, r, "sealed", OK, "sealed at 2026-01-02T03:04:05Z", "rule 6")
}

func TestCheckUnits(t *testing.T) {
	m := freshImage(t)
	m.remove("/etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service")
	expectItem(t, check(t, m), "units", Finding, "seedkeeper-watch.service installed but not enabled", "systemctl --root="+m.dir+" enable seedkeeper-watch.service", "hotplug daemon does not run")

	m.remove("/etc/systemd/system/sysinit.target.wants")
	expectItem(t, check(t, m), "units", Finding, "enable seedkeeper-boot.service seedkeeper-watch.service", "seedkeeper does not run at boot")

	// systemd takes a .wants link by its name, wherever it points (the
	// unit is found in /lib): boot starts it, and systemctl says enabled.
	m.link("/usr/lib/systemd/system/seedkeeper-boot.service", "/etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service")
	expectItem(t, check(t, m), "units", Finding, "seedkeeper-boot.service installed and enabled", "seedkeeper-watch.service installed but not enabled")
	// A regular file where the link should be adds no dependency.
	m.remove("/etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service")
	m.write("/etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service", packagingFile(t, "seedkeeper-boot.service"))
	expectItem(t, check(t, m), "units", Finding, "seedkeeper-boot.service and seedkeeper-watch.service installed but not enabled")

	// Masked wins over a .wants link left in place.
	m = freshImage(t)
	m.link("/dev/null", "/etc/systemd/system/seedkeeper-watch.service")
	expectItem(t, check(t, m), "units", Finding, "seedkeeper-watch.service masked", "unmask seedkeeper-watch.service")

	m = freshImage(t)
	m.link("/dev/null", "/etc/systemd/system/seedkeeper-boot.service")
	expectItem(t, check(t, m), "units", Finding, "seedkeeper-boot.service masked", "unmask seedkeeper-boot.service")

	m = freshImage(t)
	m.remove("/lib/systemd/system")
	expectItem(t, check(t, m), "units", Finding, "seedkeeper-boot.service and seedkeeper-watch.service not installed", "install the seedkeeper package")

	m = freshImage(t)
	m.remove("/lib/systemd/system/cloud-init-local.service")
	expectItem(t, check(t, m), "units", Finding, "cloud-init is not installed", "nothing reads the seed")
}

func TestCheckDropInOverridden(t *testing.T) {
	cases := []struct {
		name, file, data string
		v                Verdict
		want             []string
	}{
		{"later datasource_list", "99-installer.cfg", "datasource_list: [ Azure ]\n", Finding,
			[]string{"datasource_list is set last by /etc/cloud/cloud.cfg.d/99-installer.cfg", "another datasource"}},
		// "_" sorts after "-": 95_local.cfg is read after 95-seedkeeper.cfg.
		{"underscore sorts after dash", "95_local.cfg", "datasource_list: [NoCloud, ConfigDrive]\n", Finding,
			[]string{"/etc/cloud/cloud.cfg.d/95_local.cfg"}},
		{"earlier file loses", "91-dib-cloud-init-datasources.cfg", "datasource_list: [ConfigDrive]\nnetwork: {config: {version: 1}}\n", OK, nil},
		// Mappings merge: a later network key without config leaves
		// "config: disabled" in force.
		{"network mapping merges", "99-net.cfg", "network:\n  renderers: [networkd]\n", OK, []string{"network.config: disabled (from " + DropIn + ")"}},
		{"network config replaced", "99-net.cfg", "network:\n  config:\n    version: 2\n", Finding,
			[]string{"network.config is set last by /etc/cloud/cloud.cfg.d/99-net.cfg", "fights seedkeeper"}},
		{"network null", "99-net.cfg", "network: null\n", Finding, []string{"99-net.cfg"}},
		{"fs_label back on", "99-label.cfg", "datasource:\n  NoCloud:\n    fs_label: cidata\n", Finding,
			[]string{"fs_label is set last by /etc/cloud/cloud.cfg.d/99-label.cfg", "disk labelled cidata"}},
		// Another seedfrom replaces the drop-in's: cloud-init reads that
		// seed (an http one over the network), not seedkeeper's.
		{"seedfrom replaced", "99-seed.cfg", "datasource:\n  NoCloud:\n    seedfrom: http://10.0.2.2:8000/\n", Finding,
			[]string{"datasource.NoCloud.seedfrom is set last by /etc/cloud/cloud.cfg.d/99-seed.cfg", "not from the seed seedkeeper wrote"}},
		{"bad yaml is skipped", "99-broken.cfg", "datasource_list: [Azure\nsecret-value: x: y\n", Note,
			[]string{"cloud-init skips /etc/cloud/cloud.cfg.d/99-broken.cfg: not valid YAML: line"}},
		{"not a mapping", "99-list.cfg", "- Azure\n", Note, []string{"99-list.cfg: line 1: the top level is not a mapping"}},
		{"own merge rules", "99-merge.cfg", "merge_how: 'dict(recurse_array)+list(append)'\n", Note, []string{"merge rules of their own in /etc/cloud/cloud.cfg.d/99-merge.cfg"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := freshImage(t)
			m.write(CloudCfgD+"/"+c.file, c.data)
			it := expectItem(t, check(t, m), "drop-in", c.v, c.want...)
			if strings.Contains(it.Found, "secret-value") {
				t.Errorf("the report quotes the file: %s", it.Found)
			}
			if c.v == Finding && !strings.Contains(it.Fix, CloudCfgD+"/"+c.file) {
				t.Errorf("fix does not name the file: %s", it.Fix)
			}
		})
	}

	m := freshImage(t)
	m.remove(DropIn)
	expectItem(t, check(t, m), "drop-in", Finding, DropIn+" is missing", "is set last by /etc/cloud/cloud.cfg.d/90_dpkg.cfg", "force-confmiss")

	// A drop-in reached through a link inside the image counts.
	m = freshImage(t)
	m.write("/usr/share/seedkeeper/95-seedkeeper.cfg", m.read(DropIn))
	m.remove(DropIn)
	m.link("/usr/share/seedkeeper/95-seedkeeper.cfg", DropIn)
	expectItem(t, check(t, m), "drop-in", OK)

	// network.owner: cloud-init with the network lines still in place.
	m = freshImage(t)
	m.write("/etc/seedkeeper/config.yaml", "network:\n  owner: cloud-init\n")
	expectItem(t, check(t, m), "drop-in", Finding, "while network.owner is cloud-init", "nothing configures the network")
	expectItem(t, check(t, m), "network-stack", OK, "leaves the network to cloud-init")
}

func TestCheckMachineID(t *testing.T) {
	m := freshImage(t)
	m.write(MachineIDPath, "uninitialized\n")
	expectItem(t, check(t, m), "machine-id", OK, "empty")
	m.remove(MachineIDPath)
	expectItem(t, check(t, m), "machine-id", Note, "missing")

	// A symlinked machine-id is read through the link, inside the root.
	m.write(DBusMachineIDPath, "5f1c8a2e3b4d4e6f8a9b0c1d2e3f4a5b\n")
	m.link(DBusMachineIDPath, MachineIDPath)
	expectItem(t, check(t, m), "machine-id", Finding, "is a link to "+DBusMachineIDPath, "filled")

	// A link out of the root stays inside it, as in a chroot: climbing
	// to the host's /etc/machine-id lands on the link itself (a loop), and
	// an absolute link to a host file names that path inside the image.
	m.remove(MachineIDPath)
	m.link("../../../../../../../../../../etc/machine-id", MachineIDPath)
	expectItem(t, check(t, m), "machine-id", Error, "too many levels of symbolic links")
	host := filepath.Join(t.TempDir(), "machine-id")
	os.WriteFile(host, []byte("0123456789abcdef0123456789abcdef\n"), 0o644)
	m.remove(MachineIDPath)
	m.remove(DBusMachineIDPath)
	m.link(host, MachineIDPath)
	expectItem(t, check(t, m), "machine-id", Note, "missing")

	m = freshImage(t)
	m.link(MachineIDPath, DBusMachineIDPath)
	expectItem(t, check(t, m), "machine-id", OK, DBusMachineIDPath+" is a link")
}

func TestCheckSSHHostKeys(t *testing.T) {
	m := freshImage(t)
	m.write("/etc/ssh/ssh_host_ed25519_key", "k")
	expectItem(t, check(t, m), "ssh-host-keys", Note, "deletes them and generates new ones")
	m.write(CloudCfgD+"/99-keys.cfg", "ssh_deletekeys: false\n")
	expectItem(t, check(t, m), "ssh-host-keys", Finding, "ssh_deletekeys is false in /etc/cloud/cloud.cfg.d/99-keys.cfg")

	m = freshImage(t)
	m.remove("/lib/systemd/system/cloud-init-local.service")
	expectItem(t, check(t, m), "ssh-host-keys", Finding, "it does not start", "ssh-keygen -A")
	m.write("/usr/lib/systemd/system/sshd-keygen@.service", "[Unit]\n")
	expectItem(t, check(t, m), "ssh-host-keys", OK, "sshd-keygen")
	m.remove("/usr/sbin/sshd")
	expectItem(t, check(t, m), "ssh-host-keys", OK, "no SSH server")
}

func TestCheckNetworkStack(t *testing.T) {
	m := freshImage(t)
	expectItem(t, check(t, m), "network-stack", OK, "systemd-networkd enabled", "renders them for systemd-networkd")

	// An enabled unit counts only with its program installed, as at boot.
	m.link("/lib/systemd/system/NetworkManager.service", "/etc/systemd/system/multi-user.target.wants/NetworkManager.service")
	expectItem(t, check(t, m), "network-stack", OK, "systemd-networkd enabled", "NetworkManager.service is enabled but /usr/sbin/NetworkManager is not installed", "renders them for systemd-networkd")
	m.write("/usr/sbin/NetworkManager", "")
	expectItem(t, check(t, m), "network-stack", Note, "NetworkManager and systemd-networkd enabled", "renders owned NICs for NetworkManager; systemd-networkd runs too")

	// Masked, its .wants link left: it does not start, and boot renders
	// for networkd (the whole-process test in cmd asks boot and status).
	m.link("/dev/null", "/etc/systemd/system/NetworkManager.service")
	expectItem(t, check(t, m), "network-stack", OK, "systemd-networkd enabled", "NetworkManager.service is masked", "renders them for systemd-networkd")
	m.remove("/etc/systemd/system/NetworkManager.service")

	m.remove("/etc/systemd/system/multi-user.target.wants/systemd-networkd.service")
	expectItem(t, check(t, m), "network-stack", OK, "NetworkManager enabled", "renders them for NetworkManager")

	m.remove("/etc/systemd/system/multi-user.target.wants/NetworkManager.service")
	expectItem(t, check(t, m), "network-stack", Finding, "no network service is enabled", "nothing runs DHCP", "enable systemd-networkd.service")

	// ifupdown: rendered only into a directory interfaces sources.
	m.write("/lib/systemd/system/networking.service", "[Install]\nWantedBy=multi-user.target\n")
	m.link("/lib/systemd/system/networking.service", "/etc/systemd/system/multi-user.target.wants/networking.service")
	m.write("/sbin/ifup", "")
	m.write("/etc/network/interfaces", "auto lo\niface lo inet loopback\n")
	expectItem(t, check(t, m), "network-stack", Finding, "ifupdown enabled", "sources no directory", "nowhere to write ifupdown stanzas", "source /etc/network/interfaces.d/*")
	m.write("/etc/network/interfaces", "auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n")
	expectItem(t, check(t, m), "network-stack", OK, "ifupdown stanzas go in /etc/network/interfaces.d", "renders them for ifupdown")
	// A sourced directory boot refuses: boot's network step fails.
	m.write("/etc/network/interfaces", "source ../../var/tmp/*\n")
	expectItem(t, check(t, m), "network-stack", Finding, "/etc/network/interfaces line 1", "network step fails")
}

func TestCheckAllowlist(t *testing.T) {
	m := freshImage(t)
	expectItem(t, check(t, m), "allowlist", OK, "platform's default", "virtio_net", "vmxnet3")
	m.write("/etc/seedkeeper/config.yaml", "hotplug:\n  drivers: [virtio_net, e1000]\n")
	expectItem(t, check(t, m), "allowlist", OK, "e1000,virtio_net (from config hotplug.drivers)")
	m.write("/etc/seedkeeper/config.yaml", "hotplug:\n  drivers: [\"virtio net\"]\n")
	expectItem(t, check(t, m), "allowlist", Finding, "allows no driver")
	m.write("/etc/seedkeeper/config.yaml", "hotplug:\n  drivrs: [virtio_net]\n")
	expectItem(t, check(t, m), "allowlist", Finding, "default settings", "fix /etc/seedkeeper/config.yaml")
}

func TestCheckSeedDir(t *testing.T) {
	m := freshImage(t)
	m.write("/var/lib/cloud/seed/nocloud/meta-data", "instance-id: appliance\n")
	m.write("/var/lib/cloud/seed/nocloud/user-data", "#cloud-config\n")
	expectItem(t, check(t, m), "seed-dir", Note, "a seed a person put there (meta-data, user-data)", "image seal keeps it")
	// cloud-init-state ignores the seed directory, as cloud-init clean.
	expectItem(t, check(t, m), "cloud-init-state", OK)
	m.write("/var/lib/seedkeeper/imported-seed/meta-data", "instance-id: appliance\n")
	expectItem(t, check(t, m), "seed-dir", Note, "imported by an earlier boot")
}

func TestCheckReportJSON(t *testing.T) {
	r := check(t, bootedTemplate(t))
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.Items) != len(Checks) {
		t.Fatalf("JSON: %v, %d items", err, len(back.Items))
	}
	for _, it := range back.Items {
		for _, k := range []string{"id", "title", "verdict", "found", "clone"} {
			if s, _ := it[k].(string); s == "" {
				t.Errorf("item %v: %s is empty", it["id"], k)
			}
		}
	}
}

func TestCheckRootNotADirectory(t *testing.T) {
	m := img{t: t, dir: t.TempDir()}
	m.write("/file", "")
	if _, err := Check(m.dir + "/file"); err == nil {
		t.Error("Check on a file succeeded")
	}
}

// Scripts of a person's own under /var/lib/cloud are no instance state,
// but seal removes them, as cloud-init clean does: check says so.
func TestCheckCloudInitScriptsOnly(t *testing.T) {
	m := freshImage(t)
	m.write("/var/lib/cloud/scripts/per-boot/10-mine", "#!/bin/sh\n")
	expectItem(t, check(t, m), "cloud-init-state", Note, "no instance state, but /var/lib/cloud/scripts", "keep scripts of your own elsewhere")
}

func TestCheckSelectedItems(t *testing.T) {
	m := freshImage(t)
	m.write(CloudCfgD+"/99-x.cfg", "datasource_list: [Azure]\n")
	r, err := Check(m.dir, "drop-in")
	if err != nil || len(r.Items) != 1 || r.Items[0].ID != "drop-in" || r.Items[0].Verdict != Finding {
		t.Errorf("Check(drop-in) = %+v, %v", r, err)
	}
}

// A netplan image: image check names netplan's files and its catch-all
// (DHCP on every en* and eth* NIC, which would take the NICs seedkeeper
// owns but for the precedence of seedkeeper's files), as a note; a
// netplan whose generator is masked renders nothing and is not named.
func TestCheckNetworkStackNetplan(t *testing.T) {
	m := freshImage(t)
	m.write("/usr/lib/systemd/system-generators/netplan", "")
	m.write("/etc/netplan/90-default.yaml", "network:\n  version: 2\n  ethernets:\n    all-en: {match: {name: 'en*'}, dhcp4: true}\n    eth9: {dhcp4: true}\n")
	m.write("/etc/netplan/95-bad.yaml", "network: {\n")
	expectItem(t, check(t, m), "network-stack", Note, "systemd-networkd enabled",
		"netplan renders 2 file(s) at boot", "/etc/netplan/95-bad.yaml is not YAML netplan can read",
		"netplan catch-all: /etc/netplan/90-default.yaml entry all-en (match name en*, for networkd)",
		"gives those seedkeeper's configuration")
	if it := item(t, check(t, m), "network-stack"); strings.Contains(it.Found, "eth9") || !slices.Contains(it.Paths, "/etc/netplan/90-default.yaml") {
		t.Errorf("item %+v: names the entry of one NIC, or not the file", it)
	}
	m.write("/etc/netplan/90-default.yaml", "network:\n  version: 2\n  ethernets:\n    eth9: {dhcp4: true}\n")
	m.remove("/etc/netplan/95-bad.yaml")
	expectItem(t, check(t, m), "network-stack", OK, "netplan renders 1 file(s) at boot", "renders them for systemd-networkd")
	m.link("/dev/null", "/etc/systemd/system-generators/netplan")
	if it := item(t, check(t, m), "network-stack"); strings.Contains(it.Found, "netplan") {
		t.Errorf("a masked netplan is named: %+v", it)
	}
}

// A ds=nocloud line left by an image build (Packer, autoinstall) forces
// cloud-init's datasource, and its meta-data comes before seedkeeper's
// seed: a bare one is harmless, an http(s) seedfrom is replaced by the
// drop-in's seedfrom (a finding when that is lost), an i= is a finding
// (cloud-init's instance ID is that one). No value of the line is quoted.
func TestCheckNoCloudLine(t *testing.T) {
	m := freshImage(t)
	expectItem(t, check(t, m), "nocloud-line", OK, "no ds=nocloud", "seedkeeper's seed alone")

	m.write("/proc/cmdline", "root=/dev/vda1 ds=nocloud\n")
	expectItem(t, check(t, m), "nocloud-line", Note, "ds=nocloud in the kernel command line (/proc/cmdline)", "forced to NoCloud", "harmless")

	m.write("/proc/cmdline", "root=/dev/vda1 ds=nocloud;s=http://u:TOKEN1@10.0.2.2:8000/seed/?sig=TOKEN2\n")
	it := expectItem(t, check(t, m), "nocloud-line", Note, "ds=nocloud with seedfrom", "its seedfrom (an http(s) URL) is replaced by datasource.NoCloud.seedfrom from "+DropIn, "fetches nothing")
	if s := it.Found + it.Clone + it.Fix; strings.Contains(s, "TOKEN") || strings.Contains(s, "10.0.2.2") {
		t.Errorf("the seedfrom is quoted: %+v", it)
	}
	// A key cloud-init does not shorten is the line's own text: counted,
	// not named.
	m.write("/proc/cmdline", "root=/dev/vda1 ds=nocloud;\x1b[2JHOSTILE=1;s=ftp://seed.example/\n")
	it = expectItem(t, check(t, m), "nocloud-line", Note, "ds=nocloud with seedfrom, 1 other key(s)", "its seedfrom (an ftp(s) URL)", "takes the other key(s) from the kernel command line")
	if s := it.Found + it.Clone + it.Fix; strings.Contains(s, "HOSTILE") || strings.Contains(s, "\x1b") || strings.Contains(s, "seed.example") {
		t.Errorf("the kernel command line is quoted: %+v", it)
	}
	m.write("/proc/cmdline", "root=/dev/vda1 ds=nocloud;s=http://u:TOKEN1@10.0.2.2:8000/seed/?sig=TOKEN2\n")
	// Without the drop-in's seedfrom cloud-init fetches the seed again.
	m.write(DropIn, strings.Replace(packagingFile(t, "95-seedkeeper.cfg"), "seedfrom:", "x-seedfrom:", 1))
	expectItem(t, check(t, m), "nocloud-line", Finding, "fetches its seed from the seedfrom (an http(s) URL)", "reinstall the package's "+DropIn)
	m.write(DropIn, packagingFile(t, "95-seedkeeper.cfg"))

	m.write("/sys/class/dmi/id/product_serial", "ds=nocloud;i=iid-packer;h=builder\n")
	it = expectItem(t, check(t, m), "nocloud-line", Finding, "ds=nocloud with instance-id, local-hostname in the SMBIOS serial",
		"takes its instance ID from the i= of the SMBIOS serial", "takes local-hostname from the SMBIOS serial", "remove i= from the VM's SMBIOS serial")
	if strings.Contains(it.Found+it.Clone, "iid-packer") || strings.Contains(it.Found+it.Clone, "builder") {
		t.Errorf("the line's values are quoted: %+v", it)
	}
	m.remove("/sys/class/dmi/id/product_serial")
	m.remove("/proc/cmdline")

	// The boot loader's command line of an image at rest.
	m.write("/etc/default/grub", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX ds=nocloud-net;i=iid-packer\"\n")
	it = expectItem(t, check(t, m), "nocloud-line", Finding, "in the boot loader's kernel command line (/etc/default/grub)", "remove i= from GRUB_CMDLINE_LINUX in /etc/default/grub, then run update-grub")
	if !slices.Contains(it.Paths, "/etc/default/grub") {
		t.Errorf("paths %q", it.Paths)
	}
	// A hostname in the image's own boot loader line is every clone's:
	// a finding, where the VM's own serial's is the platform's (a note).
	m.write("/etc/default/grub", "GRUB_CMDLINE_LINUX=\"ds=nocloud;h=packer-build\"\n")
	it = expectItem(t, check(t, m), "nocloud-line", Finding, "ds=nocloud with local-hostname in the boot loader's kernel command line",
		"every clone boots with that line, so its local-hostname win(s)", "remove all but ds=nocloud from GRUB_CMDLINE_LINUX in /etc/default/grub")
	if strings.Contains(it.Found+it.Clone+it.Fix, "packer-build") {
		t.Errorf("the line's values are quoted: %+v", it)
	}
	m.remove("/etc/default/grub")
	m.write("/sys/class/dmi/id/product_serial", "ds=nocloud;h=vm7\n")
	expectItem(t, check(t, m), "nocloud-line", Note, "ds=nocloud with local-hostname in the SMBIOS serial", "takes local-hostname from the SMBIOS serial")
}

// cloud-init's own hotplug, turned on by its udev rule, hotplug.enabled,
// the system config or the user-data, is named with what it does beside
// seedkeeper (it finds no network-config in seedkeeper's seed and applies
// nothing); with network.owner: cloud-init it is cloud-init's to do.
func TestCheckCloudInitHotplug(t *testing.T) {
	m := freshImage(t)
	expectItem(t, check(t, m), "cloud-init-hotplug", OK, "hotplug is off")
	m.write("/var/lib/cloud/seed/nocloud/user-data", "#cloud-config\npassword: SECRET1\nupdates:\n  network:\n    when: [boot, hotplug]\n")
	it := expectItem(t, check(t, m), "cloud-init-hotplug", Note, "in the user-data of /var/lib/cloud/seed/nocloud", "holds no network-config", "writes no network file")
	if strings.Contains(it.Found+it.Clone, "SECRET1") {
		t.Errorf("the user-data is quoted: %+v", it)
	}
	m.remove("/var/lib/cloud/seed/nocloud/user-data")
	m.write("/etc/udev/rules.d/90-cloud-init-hook-hotplug.rules", "# cloud-init\n")
	m.write("/var/lib/cloud/hotplug.enabled", `{"scopes": ["network"]}`)
	m.write(CloudCfgD+"/99-hotplug.cfg", "updates:\n  network:\n    when: [hotplug]\n")
	expectItem(t, check(t, m), "cloud-init-hotplug", Note, "/etc/udev/rules.d/90-cloud-init-hook-hotplug.rules", "/var/lib/cloud/hotplug.enabled", "updates.network.when: [hotplug] in /etc/cloud/cloud.cfg.d/99-hotplug.cfg")
	m.write("/etc/seedkeeper/config.yaml", "network:\n  owner: cloud-init\n")
	expectItem(t, check(t, m), "cloud-init-hotplug", OK, "cloud-init owns the network")
}

// On an image that runs NetworkManager, a netplan catch-all rendered for
// networkd marks the NICs it matches NM_UNMANAGED: a finding.
func TestCheckNetworkStackNetplanKeepsNetworkManagerOff(t *testing.T) {
	m := freshImage(t)
	m.remove("/etc/systemd/system/multi-user.target.wants/systemd-networkd.service")
	m.write("/lib/systemd/system/NetworkManager.service", "[Install]\nWantedBy=multi-user.target\n")
	m.link("/lib/systemd/system/NetworkManager.service", "/etc/systemd/system/multi-user.target.wants/NetworkManager.service")
	m.write("/usr/sbin/NetworkManager", "")
	m.write("/usr/lib/systemd/system-generators/netplan", "")
	m.write("/etc/netplan/90-default.yaml", "network:\n  version: 2\n  ethernets:\n    all-en: {match: {name: 'en*'}, dhcp4: true}\n")
	expectItem(t, check(t, m), "network-stack", Finding, "NetworkManager enabled", "marks the NICs it matches unmanaged for NetworkManager", "set renderer: NetworkManager")
	m.write("/etc/netplan/90-default.yaml", "network:\n  version: 2\n  renderer: NetworkManager\n  ethernets:\n    all-en: {match: {name: 'en*'}, dhcp4: true}\n")
	expectItem(t, check(t, m), "network-stack", Note, "netplan catch-all", "for NetworkManager)", "gives those seedkeeper's configuration")
}

// systemd's unit directories over one lookup's budget in all: the units
// item is an error that names the bound, never a unit taken as missing
// or disabled.
func TestCheckUnitsOverTheLookupBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 65537 files: run without -short")
	}
	m := freshImage(t)
	dir := filepath.Join(m.dir, "etc/systemd/system")
	for i := range 65537 {
		if err := os.WriteFile(filepath.Join(dir, "u"+strconv.Itoa(i)+".service"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	expectItem(t, check(t, m), "units", Error, "could not be judged: the unit directories hold more than 65536 entries in all")
}
