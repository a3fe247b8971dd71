package image

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// img is a scratch image root.
type img struct {
	t   *testing.T
	dir string
}

func (m img) root() sysroot.Root { return sysroot.Root(m.dir) }

func (m img) write(sys, data string) {
	m.t.Helper()
	p := filepath.Join(m.dir, sys)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		m.t.Fatal(err)
	}
}

func (m img) link(target, sys string) {
	m.t.Helper()
	symlink(m.t, target, filepath.Join(m.dir, sys))
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func (m img) remove(sys string) {
	m.t.Helper()
	if err := os.RemoveAll(filepath.Join(m.dir, sys)); err != nil {
		m.t.Fatal(err)
	}
}

func (m img) exists(sys string) bool {
	_, err := os.Lstat(filepath.Join(m.dir, sys))
	return err == nil
}

func (m img) read(sys string) string {
	m.t.Helper()
	b, err := os.ReadFile(filepath.Join(m.dir, sys))
	if err != nil {
		m.t.Fatal(err)
	}
	return string(b)
}

// paths lists every file, link and directory under the root.
func (m img) paths() []string {
	m.t.Helper()
	var out []string
	filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != m.dir {
			out = append(out, "/"+filepath.ToSlash(must(filepath.Rel(m.dir, p))))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func packagingFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "packaging", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const networkdUnit = "[Unit]\nDescription=Network Configuration\n[Service]\nExecStart=/lib/systemd/systemd-networkd\n[Install]\nWantedBy=multi-user.target\n"

// freshImage is an image as a build leaves it before any boot: the
// package installed and its units enabled in a chroot, cloud-init and
// networkd installed, an empty machine-id, no host keys yet.
func freshImage(t *testing.T) img {
	m := img{t: t, dir: t.TempDir()}
	for _, u := range []string{"seedkeeper-boot.service", "seedkeeper-watch.service"} {
		m.write("/lib/systemd/system/"+u, packagingFile(t, u))
	}
	m.link("/lib/systemd/system/seedkeeper-boot.service", "/etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service")
	m.link("/lib/systemd/system/seedkeeper-watch.service", "/etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service")
	m.write("/lib/systemd/system/cloud-init-local.service", "[Unit]\nDescription=cloud-init local\n[Install]\nWantedBy=cloud-init.target\n")
	m.write("/lib/systemd/system/systemd-networkd.service", networkdUnit)
	m.link("/lib/systemd/system/systemd-networkd.service", "/etc/systemd/system/multi-user.target.wants/systemd-networkd.service")
	m.write("/lib/systemd/system/NetworkManager.service", "[Install]\nWantedBy=multi-user.target\n")
	m.write("/etc/cloud/cloud.cfg", "users: [default]\ncloud_init_modules: [ssh]\n")
	m.write("/etc/cloud/cloud.cfg.d/05_logging.cfg", "output: {all: '| tee -a /var/log/cloud-init-output.log'}\n")
	m.write("/etc/cloud/cloud.cfg.d/90_dpkg.cfg", "datasource_list: [ NoCloud, ConfigDrive, OpenStack, None ]\n")
	m.write(DropIn, packagingFile(t, "95-seedkeeper.cfg"))
	m.write("/etc/cloud/cloud.cfg.d/README", "not a .cfg file: datasource_list: [Azure]\n")
	m.write(MachineIDPath, "")
	m.write("/usr/sbin/sshd", "")
	return m
}

const (
	templateID  = "1f0e3a9c5d7b2e4f6a8c0b1d3e5f7a9b2c4d6e8f"
	templateMID = "0e9f5e21-6c3b-4d7a-9c1e-2b7a6d3f4e51"
)

// bootedTemplate is freshImage after one boot: cloud-init and seedkeeper
// ran, the machine has IDs and host keys.
func bootedTemplate(t *testing.T) img {
	m := freshImage(t)
	m.write(MachineIDPath, "5f1c8a2e3b4d4e6f8a9b0c1d2e3f4a5b\n")
	m.write(DBusMachineIDPath, "5f1c8a2e3b4d4e6f8a9b0c1d2e3f4a5b\n")
	for _, k := range []string{"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "ssh_host_rsa_key", "ssh_host_rsa_key.pub"} {
		m.write("/etc/ssh/"+k, "key\n")
	}
	m.write("/etc/ssh/sshd_config", "PermitRootLogin no\n")
	m.write("/var/lib/cloud/instances/"+templateID+"/sem/config_ssh", "")
	m.write("/var/lib/cloud/instances/"+templateID+"/user-data.txt", "#cloud-config\n")
	m.link("/var/lib/cloud/instances/"+templateID, "/var/lib/cloud/instance")
	m.write("/var/lib/cloud/data/instance-id", templateID+"\n")
	m.write("/var/lib/cloud/scripts/per-boot/01-seedkeeper-user-script", "#!/bin/sh\n")
	m.write("/var/lib/cloud/seed/nocloud/meta-data", "instance-id: \""+templateID+"\"\n")
	m.write("/var/lib/cloud/seed/nocloud/user-data", "#cloud-config\n")
	m.write("/var/lib/cloud/seed/nocloud/.seedkeeper", `{"version":1,"files":{}}`+"\n")
	m.write("/var/log/cloud-init.log", "log\n")
	m.write("/var/log/cloud-init-output.log", "log\n")
	m.write("/var/log/syslog", "not cloud-init's\n")
	m.write("/var/lib/seedkeeper/identity.json", `{"version":1,"instance_id":"`+templateID+`","machine_id":"`+templateMID+`","rule":6,"rule_name":"first-run"}`+"\n")
	m.write(agent.StatusPath, "{}\n")
	m.write(agent.ReceiptPath, "{}\n")
	return m
}

// item returns the item id of a report.
func item(t *testing.T, r *Report, id string) Item {
	t.Helper()
	for _, it := range r.Items {
		if it.ID == id {
			return it
		}
	}
	t.Fatalf("no item %q in the report", id)
	return Item{}
}

func check(t *testing.T, m img) *Report {
	t.Helper()
	r, err := Check(m.dir)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(r.Items) != len(Checks) {
		t.Fatalf("%d items, want %d", len(r.Items), len(Checks))
	}
	return r
}

// expectItem fails unless item id has verdict v and every want string
// appears in its Found, Clone or Fix.
func expectItem(t *testing.T, r *Report, id string, v Verdict, want ...string) Item {
	t.Helper()
	it := item(t, r, id)
	text := it.Found + "\n" + it.Clone + "\n" + it.Fix
	if it.Verdict != v {
		t.Errorf("%s: verdict %s, want %s\n%s", id, it.Verdict, v, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s: %q missing from\n%s", id, w, text)
		}
	}
	if it.Verdict == Finding && it.Fix == "" {
		t.Errorf("%s: a finding without a fix", id)
	}
	return it
}
