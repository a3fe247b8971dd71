package agent_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testseed"
)

// The seed of testdata/nocloud/seed, and the meta-data seedkeeper writes
// for it: the decided ID, hostname and keys, every value double-quoted.
const (
	fixtureSeed     = "../testdata/nocloud/seed"
	fixtureMetaData = `instance-id: "iid-fixture-01"
local-hostname: "fixture-host"
public-keys:
  - "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFixtureKeyOne fixture@one"
`
)

// machineRoot is a scratch root of a KVM guest whose DMI product_uuid is
// uuid, with the files given.
func machineRoot(t *testing.T, uuid string, files map[string]string) string {
	t.Helper()
	all := map[string]string{"sys/class/dmi/id/product_uuid": uuid + "\n"}
	for k, v := range files {
		all[k] = v
	}
	return kvmRoot(t, all)
}

const (
	uuidVM    = "0e9f5e21-6c3b-4d7a-9c1e-2b7a6d3f4e51"
	uuidClone = "7d1a0c44-5b6e-4f2a-8e3d-1c9b0a7f6e5d"
)

// boot runs the boot flow in process, planning the network only, and
// fails the test unless it went well.
func boot(t *testing.T, root string) *agent.Status {
	t.Helper()
	st, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	return st
}

// attachProxmox makes Proxmox's cidata ISO, for a host with these
// resolvers, root's /dev/sr0; it returns the ID in its meta-data.
func attachProxmox(t *testing.T, root string, hostResolvers ...string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "cidata.iso")
	id := testseed.ProxmoxISO(t, img, hostResolvers...)
	testseed.Attach(t, root, "sr0", img)
	return id
}

// attachFixture makes the gzipped image testdata/nocloud/NAME.gz root's
// /dev/sr0.
func attachFixture(t *testing.T, root, name string) {
	t.Helper()
	img := filepath.Join(t.TempDir(), name)
	testseed.Gunzip(t, filepath.Join("..", "testdata", "nocloud", name+".gz"), img)
	testseed.Attach(t, root, "sr0", img)
}

func seedFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "var/lib/cloud/seed/nocloud", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metaDataID is the instance-id of the meta-data handed to cloud-init.
func metaDataID(t *testing.T, root string) string {
	t.Helper()
	for _, l := range strings.Split(seedFile(t, root, "meta-data"), "\n") {
		if v, ok := strings.CutPrefix(l, "instance-id: "); ok {
			return strings.Trim(v, `"`)
		}
	}
	t.Fatalf("meta-data has no instance-id:\n%s", seedFile(t, root, "meta-data"))
	return ""
}

// mtime is a seed file's modification time, to tell a rewrite.
func mtime(t *testing.T, root, name string) time.Time {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(root, "var/lib/cloud/seed/nocloud", name))
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copySeed(t *testing.T, dst string) {
	t.Helper()
	ents, err := os.ReadDir(fixtureSeed)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(fixtureSeed, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, e.Name()), string(b))
	}
}

// Proxmox resolver-hash ID change (docs/cloud-init.md#proxmox-ve): a VM
// started on a host with other resolvers gets a new SHA-1 instance ID; it
// must stay the same instance for cloud-init (rule 1), and a seed file
// that did not change is not rewritten.
func TestBootProxmoxResolverChangeKeepsID(t *testing.T) {
	root := machineRoot(t, uuidVM, nil)
	first := attachProxmox(t, root, "192.0.2.53", "192.0.2.54")
	boot(t, root)
	if got := metaDataID(t, root); got != first {
		t.Fatalf("first boot handed cloud-init %q, want the reported %q", got, first)
	}
	userData := mtime(t, root, "user-data")

	moved := attachProxmox(t, root, "198.51.100.53")
	if moved == first {
		t.Fatal("the regenerated seed has the same ID: the test proves nothing")
	}
	st := boot(t, root)
	if got := metaDataID(t, root); got != first {
		t.Errorf("after the resolver change cloud-init gets %q, want the pinned %q", got, first)
	}
	if d := st.Identity; d == nil || d.ReportedID != moved || d.ReportedKind != "derived" || d.RuleName != "keep" || d.Rule != 1 ||
		!strings.Contains(d.Explanation, "derived from config, as Proxmox makes it") {
		t.Errorf("identity decision after the resolver change: %+v", d)
	}
	if !mtime(t, root, "user-data").Equal(userData) {
		t.Error("user-data was rewritten although it did not change")
	}
}

// A clone (a new VM with a copy of the disk: a new product_uuid) is a new
// instance, so that it gets its own SSH host keys (rule 4); the original
// keeps its ID.
func TestBootProxmoxCloneGetsNewID(t *testing.T) {
	root := machineRoot(t, uuidVM, nil)
	id := attachProxmox(t, root, "192.0.2.53")
	boot(t, root)

	clone := machineRoot(t, uuidClone, nil)
	if err := os.CopyFS(filepath.Join(clone, "var"), os.DirFS(filepath.Join(root, "var"))); err != nil {
		t.Fatal(err)
	}
	if got := attachProxmox(t, clone, "192.0.2.53"); got != id {
		t.Fatalf("same config, different ID %q vs %q", got, id)
	}
	st := boot(t, clone)
	got := metaDataID(t, clone)
	if got == id {
		t.Errorf("the clone was handed the original's ID %q", id)
	}
	if st.Identity == nil || st.Identity.RuleName != "new-machine" || st.Identity.InstanceID != got {
		t.Errorf("clone's decision: %+v", st.Identity)
	}
	boot(t, root)
	if metaDataID(t, root) != id {
		t.Errorf("the original's ID changed to %q", metaDataID(t, root))
	}
}

// Installing seedkeeper into a VM that already ran cloud-init changes
// nothing: cloud-init's current ID is kept (rule 3), also after a
// resolver change.
func TestBootProxmoxExistingVMKeepsCloudInitID(t *testing.T) {
	_, _, oldMeta := testseed.Proxmox("192.0.2.53")
	cloudID := strings.TrimSpace(strings.TrimPrefix(oldMeta, "instance-id: "))
	root := machineRoot(t, uuidVM, map[string]string{"var/lib/cloud/data/instance-id": cloudID + "\n"})

	if reported := attachProxmox(t, root, "198.51.100.53", "198.51.100.54"); reported == cloudID {
		t.Fatal("test seeds have the same ID")
	}
	st := boot(t, root)
	if got := metaDataID(t, root); got != cloudID {
		t.Errorf("first seedkeeper boot hands cloud-init %q, want its current %q", got, cloudID)
	}
	if st.Identity == nil || st.Identity.RuleName != "adopt-cloud-init" {
		t.Errorf("decision: %+v", st.Identity)
	}
	attachProxmox(t, root, "203.0.113.53")
	boot(t, root)
	if got := metaDataID(t, root); got != cloudID {
		t.Errorf("after another resolver change cloud-init gets %q, want %q", got, cloudID)
	}
}

// A seed a person put into the seed directory is imported once and read
// from the copy afterwards; what is in the seed directory is seedkeeper's
// output and is never read back, even when someone edits it.
func TestBootSeedDirImportedNotReadBack(t *testing.T) {
	root := machineRoot(t, uuidVM, nil)
	seed := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	copySeed(t, seed)
	boot(t, root)

	writeFile(t, filepath.Join(seed, "meta-data"), "instance-id: hand-edited\nlocal-hostname: other\n")
	writeFile(t, filepath.Join(seed, "user-data"), "#cloud-config\nhostname: other\n")
	st := boot(t, root)
	if st.Transport != "dir:/var/lib/seedkeeper/imported-seed" {
		t.Errorf("second boot read %q, want the imported copy", st.Transport)
	}
	if got := seedFile(t, root, "meta-data"); got != fixtureMetaData {
		t.Errorf("meta-data after a hand edit =\n%s", got)
	}
	want, _ := os.ReadFile(filepath.Join(fixtureSeed, "user-data"))
	if seedFile(t, root, "user-data") != string(want) {
		t.Error("the hand-edited user-data was kept")
	}
	if st.Seed == nil || len(st.Seed.Warnings) != 2 || !strings.Contains(st.Seed.Warnings[0], "changed by hand") {
		t.Errorf("seed warnings: %+v", st.Seed)
	}
}

// When the seed comes from a cidata disk, the seed directory (seedkeeper's
// output) is no source: a changed disk is picked up, a removed one means
// no source at all, and the seed is left as it is.
func TestBootCidataDiskSeedDirNotASource(t *testing.T) {
	root := machineRoot(t, uuidVM, nil)
	attachFixture(t, root, "cloud-localds.iso")
	st := boot(t, root)
	if st.Transport != "iso9660:/dev/sr0" || metaDataID(t, root) != "iid-fixture-01" {
		t.Fatalf("first boot read %q and handed %q", st.Transport, metaDataID(t, root))
	}

	// The disk now holds another seed (Proxmox's, whose ID is derived).
	attachFixture(t, root, "proxmox.iso")
	st = boot(t, root)
	want, _ := os.ReadFile("../testdata/nocloud/proxmox/user-data")
	if got := seedFile(t, root, "user-data"); got != string(want) {
		t.Errorf("user-data after the disk changed =\n%s\nwant the disk's\n%s", got, want)
	}
	if st.Transport != "iso9660:/dev/sr0" || st.Identity == nil || st.Identity.RuleName != "keep" || metaDataID(t, root) != "iid-fixture-01" {
		t.Errorf("second boot: transport %q, identity %+v", st.Transport, st.Identity)
	}

	// Without the disk there is no source, although the seed directory
	// holds a complete seed.
	if err := os.Remove(filepath.Join(root, "dev/sr0")); err != nil {
		t.Fatal(err)
	}
	before := mtime(t, root, "user-data")
	st, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{Network: agent.NetworkPlan})
	if !errors.Is(err, datasource.ErrNoSource) || st.Outcome != "no-source" {
		t.Fatalf("boot without the disk: outcome %q, err %v; want no-source", st.Outcome, err)
	}
	if !mtime(t, root, "user-data").Equal(before) {
		t.Error("a boot without a source changed the seed")
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/cloud/seed/nocloud/meta-data")); errors.Is(err, fs.ErrNotExist) {
		t.Error("a boot without a source removed the seed")
	}
}

// A configuration that cannot be used does not stop the seed (identity
// must not wait on a typo) but closes the hotplug gate, and the status
// says why, naming the file.
func TestBootBrokenConfig(t *testing.T) {
	for name, tc := range map[string]struct{ config, want string }{
		"yaml":        {"hotplug: {drivers: [e1000}\n", "did not find expected"},
		"unknown key": {"hotplug:\n  drivers: [e1000]\nhotplugs: {}\n", `:3:1: unknown key "hotplugs"`},
	} {
		t.Run(name, func(t *testing.T) {
			root := machineRoot(t, uuidVM, map[string]string{"etc/seedkeeper/config.yaml": tc.config})
			copySeed(t, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
			e := agent.LoadEnv(root, "", nil)
			if e.ConfigErr == nil {
				t.Fatal("LoadEnv took the broken file")
			}
			st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
			if err != nil {
				t.Fatalf("Boot: %v", err)
			}
			if got := seedFile(t, root, "meta-data"); got != fixtureMetaData {
				t.Errorf("meta-data =\n%s", got)
			}
			cfg := filepath.Join(root, "etc/seedkeeper/config.yaml")
			if !strings.Contains(st.ConfigError, cfg) || !strings.Contains(st.ConfigError, tc.want) {
				t.Errorf("config_error %q, want the file and %q", st.ConfigError, tc.want)
			}
			if st.Network == nil || !strings.HasPrefix(st.Network.Allowlist, "nothing (") || !strings.Contains(st.Network.Allowlist, tc.want) {
				t.Errorf("allowlist in force: %+v", st.Network)
			}
		})
	}
}

// A person's seed directory: the seed handed to cloud-init has the
// decided ID and the same user-data and vendor-data byte for byte, with
// their modes; the person's network-config is imported, not handed on,
// as seedkeeper owns the network; the pin records the machine. A second
// boot changes no file of the seed.
func TestBootNoCloudSeed(t *testing.T) {
	root := machineRoot(t, uuidVM, nil)
	copySeed(t, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	st := boot(t, root)
	if got := seedFile(t, root, "meta-data"); got != fixtureMetaData {
		t.Errorf("meta-data =\n%s\nwant\n%s", got, fixtureMetaData)
	}
	for name, mode := range map[string]os.FileMode{"meta-data": 0o644, "user-data": 0o600, "vendor-data": 0o600} {
		if name != "meta-data" {
			want, _ := os.ReadFile(filepath.Join(fixtureSeed, name))
			if got := seedFile(t, root, name); got != string(want) {
				t.Errorf("%s is not byte-identical to the seed's:\n%q\nwant\n%q", name, got, want)
			}
		}
		if fi, err := os.Lstat(filepath.Join(root, "var/lib/cloud/seed/nocloud", name)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", name, fi, err, mode)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/cloud/seed/nocloud/network-config")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("network-config in the seed while seedkeeper owns the network (%v)", err)
	}
	imported, _ := os.ReadFile(filepath.Join(root, "var/lib/seedkeeper/imported-seed/network-config"))
	if want, _ := os.ReadFile(filepath.Join(fixtureSeed, "network-config")); string(imported) != string(want) {
		t.Error("the person's network-config was not imported byte for byte")
	}
	pin, err := identity.Load(sysroot.Root(root))
	if err != nil || pin == nil || pin.InstanceID != "iid-fixture-01" || pin.MachineID != uuidVM || pin.RuleName != "first-run" {
		t.Errorf("the pin: %+v (%v)", pin, err)
	}
	if st.Outcome != "ok" || st.Source != "nocloud" || st.Identity == nil || st.Identity.RuleName != "first-run" ||
		st.Seed == nil || !slices.Contains(st.Seed.Removed, "/var/lib/cloud/seed/nocloud/network-config") ||
		st.Seed.Imported != "/var/lib/seedkeeper/imported-seed" {
		t.Errorf("status after the first boot: %+v", st)
	}

	before := map[string]time.Time{}
	for _, name := range []string{"meta-data", "user-data", "vendor-data", ".seedkeeper"} {
		before[name] = mtime(t, root, name)
	}
	st = boot(t, root)
	for name, b := range before {
		if a := mtime(t, root, name); !a.Equal(b) {
			t.Errorf("second boot rewrote %s", name)
		}
	}
	if st.Transport != "dir:/var/lib/seedkeeper/imported-seed" || st.Identity == nil || st.Identity.RuleName != "keep" ||
		st.Seed == nil || len(st.Seed.Written) != 0 || st.Network == nil || st.Network.Action != "planned" ||
		!strings.Contains(st.Network.Allowlist, "from default for qemu") {
		t.Errorf("status after the second boot: %+v", st)
	}
}
