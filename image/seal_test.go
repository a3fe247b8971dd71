package image

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

var sealTime = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func planSeal(t *testing.T, m img, opts SealOptions) *Plan {
	t.Helper()
	opts.Now = sealTime
	p, err := PlanSeal(m.dir, opts)
	if err != nil {
		t.Fatalf("PlanSeal: %v", err)
	}
	return p
}

func actionPaths(acts []Action, ops ...Op) []string {
	var out []string
	for _, a := range acts {
		if slices.Contains(ops, a.Op) {
			out = append(out, a.Path)
		}
	}
	slices.Sort(out)
	return out
}

// under returns the paths in all that are p or below it.
func under(all []string, ps ...string) []string {
	var out []string
	for _, x := range all {
		for _, p := range ps {
			if x == p || strings.HasPrefix(x, p+"/") {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// The whole seal of a booted template: the plan is exactly what changes,
// and afterwards check finds nothing.
func TestSealBootedTemplate(t *testing.T) {
	m := bootedTemplate(t)
	p := planSeal(t, m, SealOptions{})
	wantRemoved := []string{
		"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_ed25519_key.pub",
		"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_rsa_key.pub",
		"/var/lib/cloud/data", "/var/lib/cloud/instance", "/var/lib/cloud/instances",
		"/var/lib/cloud/scripts", "/var/lib/cloud/seed/nocloud",
		DBusMachineIDPath, identity.StatePath, agent.ReceiptPath, agent.StatusPath,
		"/var/log/cloud-init-output.log", "/var/log/cloud-init.log",
	}
	slices.Sort(wantRemoved)
	if got := actionPaths(p.Actions, Remove, RemoveTree); !slices.Equal(got, wantRemoved) {
		t.Errorf("planned removals\n%q\nwant\n%q", got, wantRemoved)
	}
	if got := actionPaths(p.Actions, Empty); !slices.Equal(got, []string{MachineIDPath}) {
		t.Errorf("planned emptied files: %q", got)
	}
	if got := actionPaths(p.Actions, Write); !slices.Equal(got, []string{identity.SealedPath}) {
		t.Errorf("planned writes: %q", got)
	}
	for _, a := range p.Actions {
		if a.Why == "" {
			t.Errorf("%s %s: no reason", a.Op, a.Path)
		}
	}

	before := m.paths()
	if err := p.Apply(); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	after := m.paths()
	var gone []string
	for _, x := range before {
		if !slices.Contains(after, x) {
			gone = append(gone, x)
		}
	}
	if want := under(before, wantRemoved...); !slices.Equal(gone, want) {
		t.Errorf("removed\n%q\nwant exactly the plan's\n%q", gone, want)
	}
	if added := slices.DeleteFunc(slices.Clone(after), func(x string) bool { return slices.Contains(before, x) }); !slices.Equal(added, []string{identity.SealedPath}) {
		t.Errorf("added %q, want only the sealed marker", added)
	}
	if m.read(MachineIDPath) != "" {
		t.Error("/etc/machine-id not emptied")
	}
	for _, kept := range []string{"/var/lib/cloud/seed", "/etc/ssh/sshd_config", "/var/log/syslog", MachineIDPath} {
		if !m.exists(kept) {
			t.Errorf("%s removed", kept)
		}
	}
	if s := identity.ReadSeal(m.root()); s == nil || !s.SealedAt.Equal(sealTime) {
		t.Errorf("sealed marker: %+v", s)
	}

	r := check(t, m)
	if r.Count(Finding) != 0 || r.Count(Error) != 0 {
		for _, it := range r.Items {
			t.Logf("%s: %s: %s", it.ID, it.Verdict, it.Found)
		}
		t.Errorf("after the seal: %s", r.Summary())
	}

	// A second seal changes nothing but the marker.
	if got := planSeal(t, m, SealOptions{}).Changes(); len(got) != 1 || got[0].Op != Write {
		t.Errorf("second seal plans %+v", got)
	}
}

func TestSealKeepsSSHHostKeysAndPersonsSeed(t *testing.T) {
	m := bootedTemplate(t)
	m.remove("/var/lib/cloud/seed/nocloud/.seedkeeper") // a person's seed now
	m.write("/var/lib/seedkeeper/imported-seed/meta-data", "instance-id: a\n")
	p := planSeal(t, m, SealOptions{KeepSSHHostKeys: true})
	kept := actionPaths(p.Actions, Keep)
	want := []string{"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_ed25519_key.pub", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_rsa_key.pub", "/var/lib/cloud/seed/nocloud", "/var/lib/seedkeeper/imported-seed"}
	if !slices.Equal(kept, want) {
		t.Errorf("kept %q\nwant %q", kept, want)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	for _, k := range want {
		if !m.exists(k) {
			t.Errorf("%s removed", k)
		}
	}
	if !m.exists("/var/lib/cloud/seed/nocloud/meta-data") {
		t.Error("the person's seed was emptied")
	}
	expectItem(t, check(t, m), "ssh-host-keys", Note, "generates new ones")
}

// A symlinked machine-id: the file it links to (inside the root) is
// emptied, the link stays; D-Bus's link is kept.
func TestSealSymlinkedMachineID(t *testing.T) {
	m := bootedTemplate(t)
	m.remove(MachineIDPath)
	m.link(DBusMachineIDPath, MachineIDPath)
	p := planSeal(t, m, SealOptions{})
	if got := actionPaths(p.Actions, Empty); !slices.Equal(got, []string{DBusMachineIDPath}) {
		t.Errorf("emptied %q", got)
	}
	if got := actionPaths(p.Actions, Remove); slices.Contains(got, DBusMachineIDPath) || slices.Contains(got, MachineIDPath) {
		t.Errorf("plans to remove a machine ID: %q", got)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(m.dir, MachineIDPath)); err != nil || l != DBusMachineIDPath {
		t.Errorf("the link changed: %q, %v", l, err)
	}
	if m.read(DBusMachineIDPath) != "" {
		t.Error("the linked machine ID was not emptied")
	}

	m = bootedTemplate(t)
	m.remove(DBusMachineIDPath)
	m.link("/etc/machine-id", DBusMachineIDPath)
	p = planSeal(t, m, SealOptions{})
	if got := actionPaths(p.Actions, Keep); !slices.Contains(got, DBusMachineIDPath) {
		t.Errorf("D-Bus's link not kept: %q", got)
	}
	if err := p.Apply(); err != nil || !m.exists(DBusMachineIDPath) {
		t.Errorf("D-Bus's link: %v", err)
	}
}

// A link whose absolute target is read inside the image: sealing a
// mounted image never touches the host's files of the same name.
func TestSealAbsoluteLinksStayInRoot(t *testing.T) {
	host := t.TempDir()
	hostFile := filepath.Join(host, "machine-id")
	os.WriteFile(hostFile, []byte("host\n"), 0o644)

	m := bootedTemplate(t)
	m.remove(MachineIDPath)
	m.link(hostFile, MachineIDPath) // absolute: means <root>/<host path> in the image
	m.write(hostFile, "image\n")
	m.remove("/var/lib/cloud")
	m.write("/srv/cloud/data/instance-id", "x\n")
	m.link("/srv/cloud", "/var/lib/cloud")
	p := planSeal(t, m, SealOptions{})
	if got := actionPaths(p.Actions, Empty); !slices.Equal(got, []string{hostFile}) {
		t.Errorf("emptied %q", got)
	}
	if got := actionPaths(p.Actions, RemoveTree); !slices.Contains(got, "/srv/cloud/data") {
		t.Errorf("cloud-init's state behind the link not planned: %q", got)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(hostFile); string(b) != "host\n" {
		t.Errorf("the host's file changed: %q", b)
	}
	if m.read(hostFile) != "" || m.exists("/srv/cloud/data") {
		t.Error("the image's files behind the links were not sealed")
	}
}

// A link that climbs out of the root, relative or absolute, stays inside
// it, as in a chroot: seal never reaches the host's files through it.
func TestSealLinkOutOfRootStaysInside(t *testing.T) {
	outside := t.TempDir()
	for _, c := range []struct{ name, link string }{
		{"state dir", "/var/lib/cloud"},
		{"machine-id", MachineIDPath},
		{"ssh dir", SSHDir},
		{"log", "/var/log/cloud-init.log"},
		{"pin", identity.StatePath},
	} {
		for _, abs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/abs=%v", c.name, abs), func(t *testing.T) {
				m := bootedTemplate(t)
				os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644)
				os.WriteFile(filepath.Join(outside, "ssh_host_rsa_key"), []byte("x"), 0o644)
				m.remove(c.link)
				target := outside
				if !abs {
					target, _ = filepath.Rel(filepath.Dir(filepath.Join(m.dir, c.link)), outside)
				}
				m.link(target, c.link)
				p := planSeal(t, m, SealOptions{})
				for _, a := range p.Changes() {
					if a.Path != c.link && strings.HasPrefix(a.Path, c.link+"/") {
						t.Errorf("planned %s %s behind the link", a.Op, a.Path)
					}
				}
				if err := p.Apply(); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"keep", "ssh_host_rsa_key"} {
					if _, err := os.Stat(filepath.Join(outside, f)); err != nil {
						t.Errorf("outside the root: %v", err)
					}
				}
			})
		}
	}
}

// The marker's directory as a link: seal refuses and changes nothing.
func TestSealRefusesLinkedStateDir(t *testing.T) {
	m := bootedTemplate(t)
	m.remove("/var/lib/seedkeeper")
	m.link(t.TempDir(), "/var/lib/seedkeeper")
	before := m.paths()
	_, err := PlanSeal(m.dir, SealOptions{})
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), identity.SealedPath) {
		t.Errorf("PlanSeal: %v", err)
	}
	if after := m.paths(); !slices.Equal(before, after) {
		t.Error("the image changed")
	}
}

// Apply acts on the plan's paths only: a file that appears after the plan
// stays, and a link put in the way since is not followed.
func TestSealApplyOnlyThePlan(t *testing.T) {
	m := bootedTemplate(t)
	p := planSeal(t, m, SealOptions{})
	m.write("/etc/ssh/ssh_host_ecdsa_key", "new\n")
	m.remove("/var/lib/cloud/scripts")
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "identity.json"), []byte("{}"), 0o644)
	m.remove("/var/lib/seedkeeper")
	m.link(elsewhere, "/var/lib/seedkeeper")
	err := p.Apply()
	if err == nil || !strings.Contains(err.Error(), "a symbolic link appeared on the way") {
		t.Errorf("Apply: %v", err)
	}
	if !m.exists("/etc/ssh/ssh_host_ecdsa_key") {
		t.Error("a key that was not in the plan was removed")
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "identity.json")); err != nil {
		t.Errorf("followed a link put in the way: %v", err)
	}
	if m.exists("/var/lib/cloud/instances") || m.read(MachineIDPath) != "" {
		t.Error("the other steps did not go on")
	}
}

// The logs "cloud-init clean --logs" removes: def_log_file and the files
// of output.all, but not those of output.init/config/final (cloud-init
// 22.4's get_config_logfiles reads only "all").
func TestSealCloudInitLogsFromConfig(t *testing.T) {
	m := bootedTemplate(t)
	m.write(CloudCfgD+"/06_logging.cfg", "def_log_file: /var/log/ci/main.log\noutput:\n  all: ['>> /var/log/ci/out.log', '| tee -a /var/log/ci/err.log']\n  init: '> /var/log/ci/init.log'\n")
	for _, l := range []string{"/var/log/ci/main.log", "/var/log/ci/out.log", "/var/log/ci/err.log", "/var/log/ci/init.log"} {
		m.write(l, "x")
	}
	got := actionPaths(planSeal(t, m, SealOptions{}).Actions, Remove)
	for _, want := range []string{"/var/log/ci/main.log", "/var/log/ci/out.log", "/var/log/ci/err.log"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not planned: %q", want, got)
		}
	}
	for _, kept := range []string{"/var/log/cloud-init.log", "/var/log/cloud-init-output.log", "/var/log/ci/init.log"} {
		if slices.Contains(got, kept) {
			t.Errorf("%s planned, but cloud-init clean --logs keeps it", kept)
		}
	}
}

func TestSealNotADirectory(t *testing.T) {
	if _, err := PlanSeal(filepath.Join(t.TempDir(), "none"), SealOptions{}); err == nil {
		t.Error("PlanSeal on a missing root succeeded")
	}
}

// The running system's rendered files: only seedkeeper's, in the
// directories it renders to (under another root /run is not the image's,
// and PlanSeal does not look there at all).
func TestSealRunFiles(t *testing.T) {
	m := freshImage(t)
	h := netcfg.Header + "\n"
	m.write("/run/systemd/network/05-seedkeeper-eth0.network", h+"[Match]\n")
	m.write("/run/systemd/network/05-seedkeeper-eth2.network", "[Match]\n")   // not ours: no header
	m.write("/run/systemd/network/10-seedkeeper-eth3.network", h+"[Match]\n") // ours, from before "05-"
	m.write("/run/systemd/network/10-seedkeeper-eth4.network", "[Match]\n")   // not ours: no header
	m.write("/run/systemd/network/10-netplan-eth1.network", h+"[Match]\n")
	m.write("/run/NetworkManager/system-connections/seedkeeper-eth0.nmconnection", h+"[connection]\n")
	m.write("/run/NetworkManager/conf.d/50-seedkeeper.conf", h+"[main]\n")
	m.write("/run/NetworkManager/conf.d/00-server.conf", h+"[main]\n")
	b := planner{p: &Plan{}, root: m.root(), live: true}
	b.stackFiles()
	want := []string{"/run/NetworkManager/conf.d/50-seedkeeper.conf", "/run/NetworkManager/system-connections/seedkeeper-eth0.nmconnection", "/run/systemd/network/05-seedkeeper-eth0.network", "/run/systemd/network/10-seedkeeper-eth3.network"}
	if got := actionPaths(b.p.Actions, Remove); !slices.Equal(got, want) || b.err != nil {
		t.Errorf("planned %q (%v), want %q", got, b.err, want)
	}
	if got := actionPaths(planSeal(t, m, SealOptions{}).Actions, Remove); len(under(got, "/run")) != 0 {
		t.Errorf("sealing a root (not the running system) plans %q under /run", got)
	}
}

// ifupdown's stanzas are in the image itself (/etc/network/interfaces.d):
// seal removes seedkeeper's file under any root, never a file of that
// name someone else wrote, and nothing when interfaces sources no dir.
func TestSealIfupdownStanzas(t *testing.T) {
	const stanzas = "/etc/network/interfaces.d/" + "50-seedkeeper"
	m := freshImage(t)
	m.write("/etc/network/interfaces", "auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n")
	m.write(stanzas, netcfg.Header+"\nauto eth0\n")
	m.write("/etc/network/interfaces.d/eth1", "auto eth1\n")
	if got := under(actionPaths(planSeal(t, m, SealOptions{}).Actions, Remove), "/etc/network"); !slices.Equal(got, []string{stanzas}) {
		t.Errorf("planned removals under /etc/network %q, want %q", got, []string{stanzas})
	}
	m.write(stanzas, "auto eth0\n")
	if got := under(actionPaths(planSeal(t, m, SealOptions{}).Actions, Remove), "/etc/network"); len(got) != 0 {
		t.Errorf("a stanza file without seedkeeper's header: planned %q", got)
	}
	m.write(stanzas, netcfg.Header+"\nauto eth0\n")
	m.write("/etc/network/interfaces", "auto lo\niface lo inet loopback\n")
	if got := under(actionPaths(planSeal(t, m, SealOptions{}).Actions, Remove), "/etc/network"); len(got) != 0 {
		t.Errorf("interfaces sources no directory: planned %q", got)
	}
}

// The seal removes seedkeeper's record of the metadata, a record that
// could not be read and was kept aside, the marker of the last VMware
// customization and the copy of its spec: all are this machine's.
func TestSealRemovesChangesRecord(t *testing.T) {
	m := bootedTemplate(t)
	m.write(paths.Changes, "{}\n")
	m.write(paths.ChangesBad, "{not json")
	m.write(paths.VMwareIMCMarker, "1700000001\n")
	m.write(paths.VMwareIMCSpec, "{}\n")
	p := planSeal(t, m, SealOptions{})
	got := actionPaths(p.Actions, Remove, RemoveTree)
	for _, want := range []string{paths.Changes, paths.ChangesBad, paths.VMwareIMCMarker, paths.VMwareIMCSpec} {
		if !slices.Contains(got, want) {
			t.Errorf("planned removals %q lack %s", got, want)
		}
	}
}

// Apply removes a network file of seedkeeper's only while it holds what
// the plan read: a stanza file edited after the plan (its header kept)
// is left, and the step's error says it changed; the other steps go on.
func TestSealApplyKeepsANetworkFileEditedAfterThePlan(t *testing.T) {
	const stanzas = "/etc/network/interfaces.d/" + "50-seedkeeper"
	m := freshImage(t)
	m.write("/etc/network/interfaces", "auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n")
	m.write(stanzas, netcfg.Header+"\nauto eth0\n")
	m.write(paths.Changes, "{}\n")
	p := planSeal(t, m, SealOptions{})
	if got := actionPaths(p.Actions, Remove); !slices.Contains(got, stanzas) || !slices.Contains(got, paths.Changes) {
		t.Fatalf("planned removals %q; the test proves nothing", got)
	}
	const edited = netcfg.Header + "\nauto eth0\n# the admin's line\n"
	m.write(stanzas, edited)
	err := p.Apply()
	if err == nil || !strings.Contains(err.Error(), stanzas+": changed since the plan was made") {
		t.Errorf("Apply: %v; want the edited stanza file named as changed", err)
	}
	if b, _ := os.ReadFile(m.root().Path(stanzas)); string(b) != edited {
		t.Errorf("%s = %q after Apply; want the admin's edit kept", stanzas, b)
	}
	if _, err := os.Lstat(m.root().Path(paths.Changes)); err == nil {
		t.Errorf("%s was not removed: the other steps did not go on", paths.Changes)
	}
}
