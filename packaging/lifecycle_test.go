package packaging

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// The Debian chroot the whole-package tests install into: minbase
// bookworm with Debian's cloud-init (22.4.2), ifupdown and systemd (for
// deb-systemd-helper, systemctl and systemd-detect-virt), made by
// mmdebstrap from this machine's apt sources and cached, like test/vm's
// root filesystems, under /var/cache/seedkeeper-test/chroot/ by the hash of
// its inputs.
var chrootPackages = []string{"cloud-init", "ifupdown", "systemd", "init-system-helpers"}

// chrootHook is mmdebstrap's customize hook: an image as a golden image is
// left (no cloud-init state), an interfaces file that sources
// interfaces.d, as Debian's installer writes it.
const chrootHook = `rm -rf "$1/var/lib/cloud" "$1/var/cache/apt/archives"/*.deb "$1/var/lib/apt/lists"/* "$1/usr/share/man"/* "$1/usr/share/locale"/*
printf 'source /etc/network/interfaces.d/*\n\nauto lo\niface lo inet loopback\n' >"$1/etc/network/interfaces"
mkdir -p "$1/etc/network/interfaces.d"`

const envChrootCache = "SEEDKEEPER_CHROOT_CACHE"

var (
	chrootOnce sync.Once
	chrootPath string
	chrootSkip string
	chrootErr  error
)

// chrootTar returns the cached chroot tar, building it when no tar for the
// current inputs exists: once per test binary, as the tests that call it
// run in parallel.
func chrootTar(t *testing.T) string {
	t.Helper()
	needRoot(t, "mmdebstrap --mode=root and chroot")
	needTool(t, "mmdebstrap", "mmdebstrap")
	needTool(t, "chroot", "coreutils")
	chrootOnce.Do(func() { chrootPath, chrootSkip, chrootErr = buildChrootTar() })
	if chrootSkip != "" {
		t.Skip(chrootSkip)
	}
	if chrootErr != nil {
		t.Fatal(chrootErr)
	}
	return chrootPath
}

// buildChrootTar returns the path of the cached tar, or why the tests
// cannot have one (skip), or the error that stopped its build.
func buildChrootTar() (path, skip string, err error) {
	var apt string
	for _, p := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		if st, err := os.Stat(p); err == nil && st.Size() > 0 {
			apt = p
			break
		}
	}
	if apt == "" {
		return "", "no apt sources on this machine for mmdebstrap", nil
	}
	sources, _ := os.ReadFile(apt)
	ver, _ := exec.Command("mmdebstrap", "--version").Output()
	h := sha256.New()
	for _, part := range []string{chrootHook, string(sources), string(ver), strings.Join(chrootPackages, ",")} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	cache := os.Getenv(envChrootCache)
	if cache == "" {
		cache = "/var/cache/seedkeeper-test/chroot"
	}
	out := filepath.Join(cache, "bookworm-cloud-init-"+hex.EncodeToString(h.Sum(nil))[:16]+".tar")
	if st, err := os.Stat(out); err == nil && st.Size() > 0 {
		return out, "", nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", err
	}
	tmp := out + ".tmp"
	cmd := exec.Command("mmdebstrap", "--mode=root", "--variant=minbase", "--format=tar", "--quiet",
		"--include="+strings.Join(chrootPackages, ","), "--customize-hook="+chrootHook, "bookworm", tmp, apt)
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", "", fmt.Errorf("mmdebstrap: %v\n%s", err, b)
	}
	old, _ := filepath.Glob(filepath.Join(cache, "bookworm-cloud-init-*.tar"))
	for _, p := range old {
		os.Remove(p)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", "", err
	}
	return out, "", nil
}

// newChroot unpacks the cached chroot into a fresh directory.
func newChroot(t *testing.T) string {
	t.Helper()
	tarball := chrootTar(t)
	root := t.TempDir()
	run(t, nil, "tar", "-x", "-C", root, "-f", tarball)
	return root
}

// inChroot runs a command in root and returns stdout and stderr; it fails
// the test when the command fails.
func inChroot(t *testing.T, root string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command("chroot", append([]string{root}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chroot %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// personsSeed is a seed a person put in the seed directory before
// seedkeeper was installed; it must come back byte for byte.
var personsSeed = map[string]string{
	"meta-data":      "instance-id: iid-persons-own\nlocal-hostname: by-hand\n",
	"user-data":      "#cloud-config\n# the person's, with a CRLF\r\nruncmd: [true]\n",
	"network-config": "version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: dhcp}]\n",
}

// prepareMachine makes root look like a VM cloud-init ran on once: the
// person's seed, cloud-init's instance ID, a machine identity, and systemd
// "running" (its /run directory) with no /proc mounted: a chroot that sees
// a systemd, in which /proc/1/root cannot be read. The postinst must not
// take it for the running system.
func prepareMachine(t *testing.T, root string) {
	t.Helper()
	files := map[string]string{
		"var/lib/cloud/data/instance-id": "iid-persons-own\n",
		"sys/class/dmi/id/product_uuid":  "4c4c4544-0000-1000-8000-00000000b111\n",
		"sys/class/dmi/id/product_name":  "Standard PC (Q35 + ICH9, 2009)\n",
		"sys/class/dmi/id/sys_vendor":    "QEMU\n",
		"proc/cmdline":                   "console=ttyS0\n",
		"proc/1/cmdline":                 "/sbin/init\x00",
	}
	for n, c := range personsSeed {
		files["var/lib/cloud/seed/nocloud/"+n] = c
	}
	for p, c := range files {
		writeFileT(t, filepath.Join(root, p), c)
	}
	if err := os.MkdirAll(filepath.Join(root, "run/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// cloudInitJudge asks the chroot's own cloud-init what it sees: its
// merged configuration, and what its NoCloud datasource reads (no block
// devices: the labels it would search for are recorded).
const cloudInitJudge = `
import json, sys
from cloudinit import distros, helpers, stages, util
from cloudinit.sources import DataSourceNoCloud
stages.read_runtime_config = lambda: {}
cfg = stages.fetch_base_config()
paths = helpers.Paths({"cloud_dir": "/var/lib/cloud", "run_dir": "/run/cloud-init"})
ds = DataSourceNoCloud.DataSourceNoCloud(cfg, distros.fetch("debian")("debian", {}, paths), paths)
searched = []
def find_devs_with(criteria=None, **kw):
    searched.append(criteria)
    return []
DataSourceNoCloud.util.find_devs_with = find_devs_with
util.find_devs_with = find_devs_with
found = ds.get_data()
json.dump({
    "datasource_list": cfg.get("datasource_list"),
    "label_searched": searched,
    "network_disabled": (cfg.get("network") or {}).get("config") == "disabled",
    "found": found,
    "instance_id": ds.metadata.get("instance-id") if found else None,
    "userdata_raw": ds.userdata_raw.decode() if found and isinstance(ds.userdata_raw, bytes) else (ds.userdata_raw if found else None),
}, sys.stdout)
`

type judged struct {
	DatasourceList  []string `json:"datasource_list"`
	LabelSearched   []string `json:"label_searched"`
	NetworkDisabled bool     `json:"network_disabled"`
	Found           bool     `json:"found"`
	InstanceID      string   `json:"instance_id"`
	UserData        string   `json:"userdata_raw"`
}

func judge(t *testing.T, root string) judged {
	t.Helper()
	cmd := exec.Command("chroot", root, "python3", "-c", cloudInitJudge)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBUG_PROC_CMDLINE=console=ttyS0", "LC_ALL=C.UTF-8"}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("cloud-init in the chroot: %v\n%s", err, stderr)
	}
	var j judged
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("cloud-init judge printed %q: %v", out, err)
	}
	return j
}

// dsIdentify runs the chroot's ds-identify on its files (PATH_ROOT) and
// returns what it wrote for cloud-init, its log, and its exit code.
func dsIdentify(t *testing.T, root string) (string, string, int) {
	t.Helper()
	os.Remove(filepath.Join(root, "run/cloud-init/cloud.cfg"))
	logFile := filepath.Join(t.TempDir(), "ds-identify.log")
	cmd := exec.Command(filepath.Join(root, "usr/lib/cloud-init/ds-identify"), "--force")
	cmd.Env = append(os.Environ(), "PATH_ROOT="+root, "DI_LOG="+logFile)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		t.Fatalf("ds-identify: %v\n%s", err, out)
	}
	res, _ := os.ReadFile(filepath.Join(root, "run/cloud-init/cloud.cfg"))
	lg, _ := os.ReadFile(logFile)
	return strings.TrimSpace(string(res)), string(lg), cmd.ProcessState.ExitCode()
}

// cloudFiles returns every file under root's /var/lib/cloud, by path,
// with its content, leaving out cloud-init's own data directory.
func cloudFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	base := filepath.Join(root, "var/lib/cloud")
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel := strings.TrimPrefix(p, root)
		if strings.HasPrefix(rel, "/var/lib/cloud/data/") {
			return nil
		}
		b, _ := os.ReadFile(p)
		got[rel] = string(b)
		return nil
	})
	return got
}

func personsFiles() map[string]string {
	want := map[string]string{}
	for n, c := range personsSeed {
		want["/var/lib/cloud/seed/nocloud/"+n] = c
	}
	return want
}

// hashState returns the SHA-256 of every file of seedkeeper's state and
// of its seed.
func hashState(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, d := range []string{"var/lib/seedkeeper", "var/lib/cloud/seed/nocloud", "etc/cloud/cloud.cfg.d", "etc/network/interfaces.d"} {
		filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				b, _ := os.ReadFile(p)
				s := sha256.Sum256(b)
				got[strings.TrimPrefix(p, root)] = hex.EncodeToString(s[:])
			}
			return nil
		})
	}
	return got
}

// ourStanza writes the ifupdown stanza seedkeeper's renderer makes for an
// owned NIC with a static address, where the chroot's ifupdown reads it:
// in a chroot no NIC is owned, so boot renders none itself.
func ourStanza(t *testing.T, root string) string {
	t.Helper()
	cfg, err := netcfg.Parse([]byte("version: 1\nconfig:\n  - type: physical\n    name: eth0\n    mac_address: \"52:54:00:12:34:56\"\n    subnets: [{type: static, address: 192.0.2.10/24}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sf, err := netcfg.Ifupdown.Render(netcfg.Detection{Stack: netcfg.Ifupdown, Dir: "/etc/network/interfaces.d"}, cfg, func(*netcfg.Interface) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sf.Dir, "50-seedkeeper")
	writeFileT(t, filepath.Join(root, p), string(sf.Files["50-seedkeeper"]))
	return p
}

// TestIntegrationDebLifecycle installs the real .deb with dpkg in a Debian
// chroot that cloud-init ran on once with a person's seed, boots
// seedkeeper there (seedkeeper boot --root), upgrades, removes, installs
// again and purges, and lets the chroot's cloud-init (NoCloud, and
// ds-identify) judge: after the removal it sees what it would see had
// seedkeeper never been installed.
func TestIntegrationDebLifecycle(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	root := newChroot(t)
	deb := onePackage(t, packages(t), "*.deb")
	run(t, nil, "cp", deb, filepath.Join(root, "tmp/seedkeeper.deb"))
	prepareMachine(t, root)
	before := judge(t, root)
	if !before.Found || before.InstanceID != "iid-persons-own" || before.NetworkDisabled || len(before.LabelSearched) == 0 {
		t.Fatalf("before the install cloud-init sees %+v; want the person's seed, its label search, its network", before)
	}

	inChroot(t, root, "dpkg", "-i", "/tmp/seedkeeper.deb")
	// A chroot that sees a systemd but cannot read /proc/1/root is not
	// the running system: nothing pinned (the build host's UUID, here the
	// chroot's, never lands in the image).
	if _, err := os.Stat(filepath.Join(root, "var/lib/seedkeeper/identity.json")); err == nil {
		t.Error("postinst pinned an instance ID in a chroot")
	}
	sk := filepath.Join(root, "usr/sbin/seedkeeper")
	if out, err := exec.Command(sk, "boot", "--root", root).CombinedOutput(); err != nil {
		t.Fatalf("seedkeeper boot --root: %v\n%s", err, out)
	}
	stanza := ourStanza(t, root)
	during := judge(t, root)
	if !slices.Equal(during.DatasourceList, []string{"NoCloud", "None"}) || len(during.LabelSearched) != 0 || !during.NetworkDisabled ||
		during.InstanceID != "iid-persons-own" {
		t.Errorf("with seedkeeper cloud-init sees %+v; want [NoCloud None], no label search, network disabled, the kept ID", during)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "var/lib/cloud/seed/nocloud/.seedkeeper")); len(b) == 0 {
		t.Fatal("boot wrote no seed marker; the test proves nothing")
	}

	// An upgrade (the same package again: prerm upgrade, postinst
	// configure with the old version) keeps every state file.
	state := hashState(t, root)
	inChroot(t, root, "dpkg", "-i", "/tmp/seedkeeper.deb")
	if got := hashState(t, root); !maps.Equal(got, state) {
		t.Errorf("the upgrade changed state files:\nbefore %v\nafter  %v", state, got)
	}

	_, stderr := inChroot(t, root, "dpkg", "-r", "seedkeeper")
	if got, want := cloudFiles(t, root), personsFiles(); !maps.Equal(got, want) {
		t.Errorf("after dpkg -r, /var/lib/cloud holds\n%q\nwant only the person's seed, byte for byte\n%q", got, want)
	}
	if _, err := os.Lstat(filepath.Join(root, stanza)); err == nil {
		t.Errorf("after dpkg -r, the ifupdown stanza %s is still there", stanza)
	}
	if strings.Contains(stderr, "seedkeeper uninstall: left") {
		t.Errorf("dpkg -r left files of seedkeeper's:\n%s", stderr)
	}
	after := judge(t, root)
	if !slices.Equal(after.DatasourceList, before.DatasourceList) || !slices.Equal(after.LabelSearched, before.LabelSearched) ||
		after.NetworkDisabled || after.InstanceID != before.InstanceID || after.UserData != personsSeed["user-data"] {
		t.Errorf("after dpkg -r cloud-init sees\n%+v\nwant what it saw before the install\n%+v", after, before)
	}
	res, lg, code := dsIdentify(t, root)
	if code != 0 || res != "datasource_list: [ NoCloud, None ]" || strings.Contains(lg, "single entry in datasource_list") {
		t.Errorf("after dpkg -r ds-identify exit %d, wrote %q; want NoCloud found by probing, not our single-entry list\n%s", code, res, lg)
	}

	// Installed again from the config-files state, then purged.
	inChroot(t, root, "dpkg", "-i", "/tmp/seedkeeper.deb")
	if _, err := os.Stat(filepath.Join(root, "etc/cloud/cloud.cfg.d", dropIn)); err != nil {
		t.Errorf("installed again, the drop-in is not back: %v", err)
	}
	inChroot(t, root, "dpkg", "-P", "seedkeeper")
	if got, want := cloudFiles(t, root), personsFiles(); !maps.Equal(got, want) {
		t.Errorf("after dpkg -P, /var/lib/cloud holds %q; want only the person's seed", got)
	}
	var left []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel := strings.TrimPrefix(p, root)
		if err == nil && strings.Contains(d.Name(), "seedkeeper") && !strings.HasPrefix(rel, "/var/lib/dpkg/") && !strings.HasPrefix(rel, "/tmp/") && !strings.HasPrefix(rel, "/var/log/") {
			left = append(left, rel)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("after dpkg -P, left behind: %v", left)
	}
	// Without the person's seed, ds-identify does what it does on a
	// machine that never had seedkeeper: finds nothing, disables
	// cloud-init (not our [NoCloud, None], which runs it as None).
	os.RemoveAll(filepath.Join(root, "var/lib/cloud/seed"))
	if res, lg, code := dsIdentify(t, root); code == 0 || strings.Contains(res, "NoCloud") {
		t.Errorf("after dpkg -P with no seed, ds-identify exit %d, wrote %q; want not found\n%s", code, res, lg)
	}
}

// TestIntegrationRPMLifecycle does the same with the .rpm and rpm --root
// in the same kind of chroot (rpm runs the scriptlets chrooted there):
// install, boot, upgrade, erase.
func TestIntegrationRPMLifecycle(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	needTool(t, "rpm", "rpm")
	root := newChroot(t)
	pkg := onePackage(t, packages(t), "*.rpm")
	prepareMachine(t, root)
	before := judge(t, root)
	rpm := func(args ...string) string {
		t.Helper()
		return run(t, nil, "rpm", append([]string{"--root=" + root}, args...)...)
	}
	rpm("--initdb")
	// --nodeps: the Debian chroot's packages are not in rpm's database.
	rpm("-i", "--nodeps", pkg)
	// Enabled by the package's preset.
	for _, l := range []string{"etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service", "etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service"} {
		if _, err := os.Lstat(filepath.Join(root, l)); err != nil {
			t.Errorf("after rpm -i: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/seedkeeper/identity.json")); err == nil {
		t.Error("the rpm's post-install scriptlet pinned an instance ID in a chroot")
	}
	if out, err := exec.Command(filepath.Join(root, "usr/sbin/seedkeeper"), "boot", "--root", root).CombinedOutput(); err != nil {
		t.Fatalf("seedkeeper boot --root: %v\n%s", err, out)
	}
	stanza := ourStanza(t, root)
	state := hashState(t, root)
	rpm("-U", "--nodeps", "--replacepkgs", pkg)
	if got := hashState(t, root); !maps.Equal(got, state) {
		t.Errorf("the upgrade changed state files:\nbefore %v\nafter  %v", state, got)
	}
	rpm("-e", "seedkeeper")
	if got, want := cloudFiles(t, root), personsFiles(); !maps.Equal(got, want) {
		t.Errorf("after rpm -e, /var/lib/cloud holds\n%q\nwant only the person's seed\n%q", got, want)
	}
	if _, err := os.Lstat(filepath.Join(root, stanza)); err == nil {
		t.Errorf("after rpm -e, %s is still there", stanza)
	}
	for _, l := range []string{"etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service", "etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service"} {
		if _, err := os.Lstat(filepath.Join(root, l)); err == nil {
			t.Errorf("after rpm -e, %s is still there", l)
		}
	}
	for _, u := range gatedUnits {
		if _, err := os.Lstat(filepath.Join(root, "usr/lib/systemd/system", u+".d")); err == nil {
			t.Errorf("after rpm -e, the drop-in directory of %s is still there", u)
		}
	}
	if after := judge(t, root); !slices.Equal(after.DatasourceList, before.DatasourceList) || after.NetworkDisabled ||
		len(after.LabelSearched) == 0 || after.InstanceID != before.InstanceID {
		t.Errorf("after rpm -e cloud-init sees\n%+v\nwant what it saw before\n%+v", after, before)
	}
	var left []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel := strings.TrimPrefix(p, root)
		if err == nil && strings.Contains(d.Name(), "seedkeeper") && !strings.HasPrefix(rel, "/var/lib/rpm") && !strings.HasPrefix(rel, "/usr/lib/sysimage/rpm") {
			left = append(left, rel)
		}
		return nil
	})
	if len(left) > 0 {
		var state []string
		if ents, err := os.ReadDir(filepath.Join(root, "var/lib/seedkeeper")); err == nil {
			for _, e := range ents {
				state = append(state, e.Name())
			}
		}
		t.Errorf("after rpm -e, left behind: %v (in /var/lib/seedkeeper: %v)", left, state)
	}
}
