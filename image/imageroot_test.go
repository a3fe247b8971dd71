package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/nohang"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/seed"
)

// The image root is someone else's file system: every path check and seal
// read or remove may hold a link to the host, a FIFO, a device, a
// directory where a file belongs, or a bind mount. None may hang, read
// the host, or remove anything outside the image.

// hostSecret is what the host's file holds; no report may show it.
const hostSecret = "HOST-SECRET-5f1c8a2e"

// touchedPaths are the system paths check or seal read, list or remove
// (files; directories are reached through them).
var touchedPaths = []string{
	CloudCfg, CloudCfgD + "/50-extra.cfg", DropIn, config.DefaultPath,
	identity.CloudInitIDPath, identity.CloudInitInstanceLink, paths.CloudDir + "/instances/" + templateID + "/datasource",
	identity.StatePath, identity.SealedPath, paths.Status, paths.Receipt,
	MachineIDPath, DBusMachineIDPath, SSHDir + "/ssh_host_rsa_key",
	"/lib/systemd/system/seedkeeper-boot.service", "/etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service",
	"/lib/systemd/system/cloud-init-local.service",
	"/etc/network/interfaces", "/etc/network/interfaces.d/" + "50-seedkeeper",
	seed.Dir + "/" + seed.MarkerName, seed.Dir + "/meta-data",
	paths.CloudInitLog, "/var/log/cloud-init-output.log",
}

// plant puts a hostile object of kind at sys in m, pointing at the host
// file secret where it is a link.
type plant func(t *testing.T, m img, sys, secret string)

var plants = map[string]plant{
	"absolute link to the host": func(t *testing.T, m img, sys, secret string) { m.link(secret, sys) },
	"relative link climbing out": func(t *testing.T, m img, sys, secret string) {
		m.link(strings.Repeat("../", 12)+strings.TrimPrefix(secret, "/"), sys)
	},
	"link to a host directory": func(t *testing.T, m img, sys, secret string) { m.link(filepath.Dir(secret), sys) },
	"FIFO": func(t *testing.T, m img, sys, secret string) {
		os.MkdirAll(filepath.Dir(filepath.Join(m.dir, sys)), 0o755)
		if err := syscall.Mkfifo(filepath.Join(m.dir, sys), 0o644); err != nil {
			t.Fatal(err)
		}
	},
	"directory": func(t *testing.T, m img, sys, secret string) { m.write(sys+"/inside", "x") },
}

// hostileImage is a booted template with an ifupdown config and the host
// file secret, outside the root.
func hostileImage(t *testing.T) (img, string) {
	m := bootedTemplate(t)
	m.write("/etc/network/interfaces", "source /etc/network/interfaces.d/*\n")
	m.write("/etc/network/interfaces.d/"+"50-seedkeeper", netcfg.Header+"\n")
	m.write(paths.CloudDir+"/instances/"+templateID+"/datasource", "DataSourceNoCloud: x\n")
	m.write(CloudCfgD+"/50-extra.cfg", "ssh_deletekeys: true\n")
	m.write(config.DefaultPath, "network:\n  owner: seedkeeper\n")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(hostSecret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return m, secret
}

// checkAndSeal runs check, then a whole seal, each under a guard, and
// fails if the host file was shown or changed.
func checkAndSeal(t *testing.T, m img, secret string) *Sealing {
	t.Helper()
	var rep *Report
	var err error
	nohang.Run(t, "Check", func() { rep, err = Check(m.dir) })
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if b, _ := json.Marshal(rep); strings.Contains(string(b), hostSecret) {
		t.Errorf("check shows the host's file:\n%s", b)
	}
	var s *Sealing
	nohang.Run(t, "Seal", func() { s, err = Seal(m.dir, SealOptions{Now: sealTime}) })
	if b, _ := json.Marshal(s); strings.Contains(string(b), hostSecret) || (err != nil && strings.Contains(err.Error(), hostSecret)) {
		t.Errorf("seal shows the host's file: %s %v", b, err)
	}
	if s != nil && s.Err != nil && strings.Contains(s.Err.Error(), hostSecret) {
		t.Errorf("seal's error shows the host's file: %v", s.Err)
	}
	if s == nil {
		// Refused as a whole: the error says so and names what.
		if err == nil || !strings.Contains(err.Error(), "sealing the image") || !strings.Contains(err.Error(), "/") {
			t.Errorf("Seal: nil plan, error %v", err)
		}
		t.Logf("seal refused: %v", err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != hostSecret+"\n" {
		t.Errorf("the host's file was touched: %q, %v", b, err)
	}
	return s
}

func TestHostileObjectAtEveryPath(t *testing.T) {
	for name, p := range plants {
		for _, sys := range touchedPaths {
			t.Run(name+sys, func(t *testing.T) {
				t.Parallel() // each case its own image and host file
				m, secret := hostileImage(t)
				m.remove(sys)
				p(t, m, sys, secret)
				checkAndSeal(t, m, secret)
				if name == "directory" && sys != seed.Dir+"/"+seed.MarkerName && !m.exists(sys+"/inside") && !strings.HasPrefix(sys, paths.CloudDir+"/") {
					t.Errorf("seal removed the directory at %s, where it removes files only", sys)
				}
			})
		}
	}
}

// def_log_file: / names the root: the plan skips it and says why, and
// never plans a tree removal of it (the whole image).
func TestSealLogIsTheRoot(t *testing.T) {
	for _, v := range []string{"/", "//", "/var/..", "/./"} {
		m := bootedTemplate(t)
		m.write(CloudCfgD+"/99-log.cfg", "def_log_file: "+v+"\n")
		p := planSeal(t, m, SealOptions{})
		var skipped bool
		for _, a := range p.Actions {
			if a.Path == "/" && a.Op != Skip {
				t.Fatalf("def_log_file %q: planned %s /", v, a.Op)
			}
			skipped = skipped || (a.Path == "/" && a.Op == Skip && strings.Contains(a.Why, "not removed"))
		}
		if !skipped {
			t.Errorf("def_log_file %q: / is not named as skipped: %v", v, p.Actions)
		}
		if err := p.Apply(); err != nil {
			t.Fatal(err)
		}
		if !m.exists("/etc/ssh/sshd_config") || !m.exists("/var/log/syslog") {
			t.Errorf("def_log_file %q: the image lost files it does not list", v)
		}
	}
}

// A log path that is a directory is not removed: cloud-init clean --logs
// only unlinks files. The plan names it as skipped, with why.
func TestSealLogDirectoryIsSkipped(t *testing.T) {
	m := bootedTemplate(t)
	m.write("/var/log/journal/x/system.journal", "journal")
	m.write(CloudCfgD+"/99-log.cfg", "def_log_file: /var/log/journal\noutput: {all: '>> /etc'}\n")
	p := planSeal(t, m, SealOptions{})
	for _, sys := range []string{"/var/log/journal", "/etc"} {
		var why string
		for _, a := range p.Actions {
			if a.Path == sys {
				if a.Op != Skip {
					t.Errorf("%s planned as %s", sys, a.Op)
				}
				why = a.Why
			}
		}
		if !strings.Contains(why, "a directory, not removed") || !strings.Contains(why, "never a directory") {
			t.Errorf("%s: why %q", sys, why)
		}
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	if m.read("/var/log/journal/x/system.journal") != "journal" || !m.exists("/etc/ssh/sshd_config") {
		t.Error("a log directory was removed")
	}
	if len(p.Changes()) == len(p.Actions) {
		t.Error("Changes lists skipped paths")
	}
}

// A file over the bound is an error that names the path and the bound,
// never a silent truncation.
func TestCheckFileOverTheBound(t *testing.T) {
	m := freshImage(t)
	m.write("/lib/systemd/system/seedkeeper-boot.service", "[Install]\nWantedBy=sysinit.target\n"+strings.Repeat("#", 2<<20))
	m.write(MachineIDPath, strings.Repeat("0", 2<<20))
	r := check(t, m)
	it := expectItem(t, r, "machine-id", Error, MachineIDPath, "over the size limit", "1048576")
	if strings.Contains(it.Found, "0000") {
		t.Errorf("the error quotes the file: %s", it.Found)
	}
}

// The state directory swapped for a link to the host between the plan and
// Apply: the sealed marker must not be written through it.
func TestSealApplyMarkerDirSwappedForLink(t *testing.T) {
	m := bootedTemplate(t)
	p, err := PlanSeal(m.dir, SealOptions{Now: sealTime})
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "seedkeeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	m.remove("/var/lib/seedkeeper")
	m.link(filepath.Join(outside, "seedkeeper"), "/var/lib/seedkeeper")
	if err := p.Apply(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Apply through a swapped state directory: %v; want a refusal naming the link", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(outside, "seedkeeper")); len(ents) != 0 {
		t.Errorf("the marker was written outside the image: %v", ents)
	}
	// A parent swapped likewise.
	m2 := bootedTemplate(t)
	p2, err := PlanSeal(m2.dir, SealOptions{Now: sealTime})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(m2.dir, "var/lib"), filepath.Join(m2.dir, "var/lib.old")); err != nil {
		t.Fatal(err)
	}
	m2.link(outside, "/var/lib")
	p2.Apply()
	if ents, _ := os.ReadDir(filepath.Join(outside, "seedkeeper")); len(ents) != 0 {
		t.Errorf("the marker was written outside the image through /var/lib: %v", ents)
	}
}
