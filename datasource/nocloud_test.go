package datasource

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const ncFixtures = "../testdata/nocloud"

// ncRoot is a scratch system root for NoCloud tests.
type ncRoot struct {
	t   *testing.T
	dir string
}

func newNCRoot(t *testing.T) *ncRoot { return &ncRoot{t: t, dir: t.TempDir()} }

func (r *ncRoot) root() sysroot.Root { return sysroot.Root(r.dir) }

// write puts content at the system path p under the root.
func (r *ncRoot) write(p string, content []byte) {
	r.t.Helper()
	full := filepath.Join(r.dir, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, content, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// seed writes a seed directory; a nil value leaves the file out.
func (r *ncRoot) seed(dir string, files map[string]string) {
	for name, content := range files {
		r.write(filepath.Join(dir, name), []byte(content))
	}
}

// device adds a block device named name whose content is img.
func (r *ncRoot) device(name string, img []byte) {
	r.write("/sys/class/block/"+name+"/size", []byte(fmt.Sprintf("%d\n", len(img)/512)))
	r.write("/dev/"+name, img)
}

func (r *ncRoot) opts() Options {
	return Options{Root: r.dir, Logger: testLogger(r.t)}
}

// foundNoCloud is detectNoCloud's answer.
func foundNoCloud(o Options) (bool, string) {
	d, err := detectNoCloud(context.Background(), o)
	if err != nil {
		panic(err) // only a cancelled context makes it fail
	}
	return d.Found, d.Reason
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ncFixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(name, ".gz") {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSubstDMI(t *testing.T) {
	r := newNCRoot(t)
	r.write("/sys/class/dmi/id/chassis_serial", []byte("CH-42\n"))
	r.write("/sys/class/dmi/id/product_uuid", []byte("ABC\n"))
	got, unknown := substDMI(r.root(), "http://h/__dmi.chassis-serial-number__/__dmi.system-uuid__/__dmi.board-serial__/__dmi.bios-vendor__/")
	if want := "http://h/CH-42/ABC/__dmi.board-serial__//"; got != want || !slices.Equal(unknown, []string{"board-serial"}) {
		t.Errorf("substDMI = %q, %q; want %q, [board-serial]", got, unknown, want)
	}
}

var seedFiles = map[string]string{
	"meta-data":      "instance-id: iid-dir\nlocal-hostname: dirhost\npublic-keys: ssh-ed25519 AAAA dir@key\n",
	"user-data":      "#cloud-config\nhostname: dirhost\n",
	"vendor-data":    "#cloud-config\n{}\n",
	"network-config": "version: 2\nethernets:\n  eth0:\n    match: {macaddress: '52:54:00:00:00:01'}\n    dhcp4: true\n",
}

func TestReadNoCloudSeedDir(t *testing.T) {
	r := newNCRoot(t)
	r.seed(noCloudSeedDir, seedFiles)
	r.write("/sys/class/dmi/id/product_uuid", []byte("4C4C4544-0042-3010-8036-B4C04F4B4E32\n"))
	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	if md.Source != SourceNoCloud || md.InstanceID != "iid-dir" || md.InstanceIDDefaulted || md.Hostname != "dirhost" {
		t.Errorf("source %q id %q (defaulted %v) host %q", md.Source, md.InstanceID, md.InstanceIDDefaulted, md.Hostname)
	}
	if md.MachineID != "4c4c4544-0042-3010-8036-b4c04f4b4e32" {
		t.Errorf("MachineID = %q", md.MachineID)
	}
	if !slices.Equal(md.PublicKeys, []string{"ssh-ed25519 AAAA dir@key"}) {
		t.Errorf("PublicKeys = %q", md.PublicKeys)
	}
	if string(md.UserData) != seedFiles["user-data"] || string(md.VendorData) != seedFiles["vendor-data"] || string(md.NetworkConfigRaw) != seedFiles["network-config"] {
		t.Errorf("data = %q %q %q", md.UserData, md.VendorData, md.NetworkConfigRaw)
	}
	if md.Network == nil || len(md.Network.Interfaces) != 1 || md.Network.Interfaces[0].MAC != "52:54:00:00:00:01" || !md.Network.Interfaces[0].DHCP4 {
		t.Errorf("Network = %+v", md.Network)
	}
	wantItems := []string{"/var/lib/cloud/seed/nocloud/meta-data", "/var/lib/cloud/seed/nocloud/user-data",
		"/var/lib/cloud/seed/nocloud/vendor-data", "/var/lib/cloud/seed/nocloud/network-config"}
	if md.Origin.Transport != "dir:/var/lib/cloud/seed/nocloud" || !slices.Equal(md.Origin.Items, wantItems) {
		t.Errorf("Origin = %+v", md.Origin)
	}
}

func TestReadNoCloudNothing(t *testing.T) {
	r := newNCRoot(t)
	// A seed directory with meta-data only is not a seed.
	r.seed(noCloudSeedDir, map[string]string{"meta-data": "instance-id: x\n"})
	r.write(cmdlinePath, []byte("root=/dev/vda1 ro ds=ec2\n"))
	_, err := readNoCloud(context.Background(), r.opts())
	if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "labelled cidata") {
		t.Fatalf("err = %v, want ErrNoSource with a reason", err)
	}
	if found, why := foundNoCloud(r.opts()); found || !strings.Contains(why, "no ds=nocloud") {
		t.Errorf("detectNoCloud = %v, %q", found, why)
	}
}

func TestReadNoCloudCmdlineOnly(t *testing.T) {
	// cloud-init claims the datasource on the token alone, with empty
	// user-data.
	r := newNCRoot(t)
	r.write(cmdlinePath, []byte("BOOT_IMAGE=/vmlinuz ds=nocloud;h=cmdhost\n"))
	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "nocloud" || !md.InstanceIDDefaulted || md.Hostname != "cmdhost" || md.UserData == nil || len(md.UserData) != 0 {
		t.Errorf("md = %+v", md)
	}
	if md.VendorData != nil || md.NetworkConfigRaw != nil || md.Network != nil {
		t.Errorf("vendor %q network %q %+v, want none", md.VendorData, md.NetworkConfigRaw, md.Network)
	}
	if md.Origin.Transport != "cmdline" || md.MetaData["dsmode"] != "local" {
		t.Errorf("Origin %+v, meta %v", md.Origin, md.MetaData)
	}
}

// TestReadNoCloudPrecedence checks NoCloud's precedence (docs/cloud-init.md,
// "NoCloud"): meta-data keys first-wins (DMI serial, cmdline, seed dir,
// disk), the files last-wins.
func TestReadNoCloudPrecedence(t *testing.T) {
	r := newNCRoot(t)
	r.write("/sys/class/dmi/id/product_serial", []byte("ds=nocloud;h=dmihost\n"))
	r.write(cmdlinePath, []byte("ro ds=nocloud;i=iid-cmdline;h=cmdhost\n"))
	r.seed(noCloudSeedDir, map[string]string{
		"meta-data":      "instance-id: iid-dir\nlocal-hostname: dirhost\nfrom-dir: true\n",
		"user-data":      "#cloud-config\n# dir\n",
		"vendor-data":    "#cloud-config\n# dir vendor\n",
		"network-config": "version: 1\nconfig:\n- type: physical\n  name: eth0\n  mac_address: '52:54:00:00:00:0a'\n",
	})
	// The nocloud-net directory is not read once nocloud was used.
	r.seed(noCloudNetSeedDir, map[string]string{"meta-data": "from-net-dir: yes\n", "user-data": "# net dir\n"})
	// The disk (cloud-localds -f vfat of testdata/nocloud/seed) has
	// user-data and meta-data only.
	r.device("vdb", fixture(t, "cloud-localds.vfat.gz"))

	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "iid-cmdline" {
		t.Errorf("InstanceID = %q; cmdline i= must beat the seed directory and the disk", md.InstanceID)
	}
	if md.Hostname != "dmihost" {
		t.Errorf("Hostname = %q; the SMBIOS serial comes first", md.Hostname)
	}
	if want := fixture(t, "seed/user-data"); !bytes.Equal(md.UserData, want) {
		t.Errorf("UserData = %q; the disk's must replace the directory's", md.UserData)
	}
	if string(md.VendorData) != "#cloud-config\n# dir vendor\n" {
		t.Errorf("VendorData = %q; the disk has none, so the directory's stays", md.VendorData)
	}
	if !strings.Contains(string(md.NetworkConfigRaw), "52:54:00:00:00:0a") {
		t.Errorf("NetworkConfigRaw = %q", md.NetworkConfigRaw)
	}
	if md.MetaData["from-dir"] != true || md.MetaData["from-net-dir"] != nil {
		t.Errorf("MetaData = %v", md.MetaData)
	}
	// The disk's public key is merged in: no earlier source had the key.
	if !slices.Equal(md.PublicKeys, []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFixtureKeyOne fixture@one"}) {
		t.Errorf("PublicKeys = %q", md.PublicKeys)
	}
	if want := "dmi,cmdline,dir:/var/lib/cloud/seed/nocloud,vfat:/dev/vdb"; md.Origin.Transport != want {
		t.Errorf("Transport = %q, want %q", md.Origin.Transport, want)
	}
	if want := "vfat:/dev/vdb:user-data"; !slices.Contains(md.Origin.Items, want) {
		t.Errorf("Items = %q, want %q among them", md.Origin.Items, want)
	}
}

func TestReadNoCloudEmptyNetworkConfigReplacesNothing(t *testing.T) {
	r := newNCRoot(t)
	r.seed(noCloudSeedDir, map[string]string{"meta-data": "seedfrom: /srv/later/\n", "user-data": "", "network-config": "version: 1\nconfig: []\n"})
	r.seed("/srv/later", map[string]string{"meta-data": "", "user-data": "", "network-config": " \n"})
	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	if string(md.NetworkConfigRaw) != "version: 1\nconfig: []\n" || md.Network == nil {
		t.Errorf("network %q %+v; a blank network-config must not replace the earlier one", md.NetworkConfigRaw, md.Network)
	}
}

func TestReadNoCloudLabelScan(t *testing.T) {
	r := newNCRoot(t)
	iso := fixture(t, "cloud-localds.iso.gz")
	r.device("sr0", iso)
	r.device("sda", make([]byte, 1<<16)) // no filesystem
	r.device("sda1", fixture(t, "fat16.img.gz"))
	r.device("vda", fixture(t, "proxmox.iso.gz"))
	r.device("fd0", iso) // floppies are never probed
	r.write("/sys/class/block/sr1/size", []byte("0\n"))
	r.write("/dev/sr1", iso) // an empty drive: size 0

	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	// Reverse order: vda, sr0, sda1, sda. The Proxmox disk wins.
	if md.Origin.Transport != "iso9660:/dev/vda" || md.InstanceID != proxmoxID(t) {
		t.Errorf("Transport %q, ID %q", md.Origin.Transport, md.InstanceID)
	}
	found, why := foundNoCloud(r.opts())
	if !found || why != "iso9660 filesystem labelled cidata on /dev/vda" {
		t.Errorf("detectNoCloud = %v, %q", found, why)
	}
}

func proxmoxID(t *testing.T) string {
	h := sha1.New()
	h.Write(fixture(t, "proxmox/user-data"))
	h.Write(fixture(t, "proxmox/network-config"))
	return hex.EncodeToString(h.Sum(nil))
}

// TestReadNoCloudProxmox reads a seed exactly as Proxmox VE writes it
// (docs/cloud-init.md, "Proxmox VE"): instance-id is SHA-1(user-data ‖
// network-config), the network config is version 1 with a nameserver entry.
func TestReadNoCloudProxmox(t *testing.T) {
	r := newNCRoot(t)
	o := r.opts()
	o.NoCloud.SeedPath = filepath.Join(r.dir, "proxmox.iso")
	if err := os.WriteFile(o.NoCloud.SeedPath, fixture(t, "proxmox.iso.gz"), 0o600); err != nil {
		t.Fatal(err)
	}
	md, err := readNoCloud(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(append(slices.Clone(md.UserData), md.NetworkConfigRaw...))
	if md.InstanceID != hex.EncodeToString(sum[:]) || md.InstanceID != proxmoxID(t) {
		t.Errorf("InstanceID %q is not SHA-1(user-data || network-config) = %x", md.InstanceID, sum)
	}
	if md.Hostname != "" || md.VendorData == nil || len(md.VendorData) != 0 {
		t.Errorf("Hostname %q VendorData %q: Proxmox puts neither in the seed", md.Hostname, md.VendorData)
	}
	n := md.Network
	if n == nil || len(n.Interfaces) != 2 {
		t.Fatalf("Network = %+v", n)
	}
	if n.Interfaces[0].Name != "eth0" || n.Interfaces[0].MAC != "bc:24:11:aa:bb:01" || len(n.Interfaces[0].Addresses) != 2 ||
		n.Interfaces[1].MAC != "bc:24:11:aa:bb:02" || !n.Interfaces[1].DHCP4 || !n.Interfaces[1].SLAAC {
		t.Errorf("Interfaces = %+v", n.Interfaces)
	}
	if fmt.Sprint(n.DNS.Nameservers) != "[192.0.2.53 192.0.2.54]" || !slices.Equal(n.DNS.Search, []string{"example.lan"}) {
		t.Errorf("DNS = %+v", n.DNS)
	}
	if md.Origin.Transport != "iso9660:"+o.NoCloud.SeedPath {
		t.Errorf("Transport = %q", md.Origin.Transport)
	}
}

func TestReadNoCloudSeedPathDir(t *testing.T) {
	r := newNCRoot(t)
	r.write(cmdlinePath, []byte("ds=nocloud;i=ignored\n"))
	o := r.opts()
	o.NoCloud.SeedPath = filepath.Join(ncFixtures, "seed") // relative to the working directory
	md, err := readNoCloud(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "iid-fixture-01" || md.Hostname != "fixture-host" || md.Network == nil {
		t.Errorf("md = %+v; only the seed path is read", md)
	}
	o.NoCloud.SeedPath = filepath.Join(r.dir, "missing")
	if _, err := readNoCloud(context.Background(), o); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing seed path: %v", err)
	}
	r.seed("/half", map[string]string{"meta-data": "{}"})
	o.NoCloud.SeedPath = filepath.Join(r.dir, "half")
	if _, err := readNoCloud(context.Background(), o); err == nil || !strings.Contains(err.Error(), "no user-data") {
		t.Errorf("seed without user-data: %v", err)
	}
}

func TestReadNoCloudSkipDirs(t *testing.T) {
	r := newNCRoot(t)
	r.seed(noCloudSeedDir, seedFiles)
	o := r.opts()
	o.NoCloud.SkipDirs = true
	if _, err := readNoCloud(context.Background(), o); !errors.Is(err, ErrNoSource) {
		t.Errorf("err = %v, want ErrNoSource", err)
	}
	if found, _ := foundNoCloud(o); found {
		t.Error("detectNoCloud found the skipped directory")
	}
	o.NoCloud.SkipDirs = false
	if found, why := foundNoCloud(o); !found || why != "seed directory /var/lib/cloud/seed/nocloud" {
		t.Errorf("detectNoCloud = %v, %q", found, why)
	}
	// SeedDirs replaces the defaults: seedkeeper passes an imported copy
	// instead of the directory it writes itself.
	r.seed("/var/lib/seedkeeper/imported", map[string]string{"meta-data": "instance-id: iid-imported\n", "user-data": ""})
	o.NoCloud.SeedDirs = []string{"/var/lib/seedkeeper/imported", noCloudNetSeedDir}
	md, err := readNoCloud(context.Background(), o)
	if err != nil || md.InstanceID != "iid-imported" || md.Origin.Transport != "dir:/var/lib/seedkeeper/imported" {
		t.Errorf("readNoCloud = %+v, %v", md, err)
	}
	o.NoCloud.SeedDirs = []string{}
	if found, _ := foundNoCloud(o); found {
		t.Error("detectNoCloud found a seed with no seed directories to look at")
	}
}

// warned checks that md carries exactly these warnings, then runs check.
func warned(check func(*testing.T, *Metadata), want ...string) func(*testing.T, *Metadata) {
	return func(t *testing.T, md *Metadata) {
		t.Helper()
		if !slices.Equal(md.Warnings, want) {
			t.Errorf("Warnings = %q\nwant %q", md.Warnings, want)
		}
		if check != nil {
			check(t, md)
		}
	}
}

func TestReadNoCloudMetaData(t *testing.T) {
	tests := []struct {
		name, meta string
		check      func(t *testing.T, md *Metadata)
		err        string
	}{
		{"empty", "", func(t *testing.T, md *Metadata) {
			if md.InstanceID != "nocloud" || !md.InstanceIDDefaulted {
				t.Errorf("ID %q defaulted %v", md.InstanceID, md.InstanceIDDefaulted)
			}
		}, ""},
		{"comments only", "# nothing\n", func(t *testing.T, md *Metadata) {
			if md.InstanceID != "nocloud" {
				t.Errorf("ID %q", md.InstanceID)
			}
		}, ""},
		{"empty instance-id", "instance-id: ''\n", func(t *testing.T, md *Metadata) {
			if md.InstanceID != "nocloud" || !md.InstanceIDDefaulted {
				t.Errorf("ID %q", md.InstanceID)
			}
		}, ""},
		{"numeric instance-id", "instance-id: 12345\n", func(t *testing.T, md *Metadata) {
			if md.InstanceID != "12345" || md.InstanceIDDefaulted {
				t.Errorf("ID %q", md.InstanceID)
			}
		}, ""},
		{"json with tabs", "{\n\t\"instance-id\": \"iid-json\",\n\t\"local-hostname\": \"jh\",\n\t\"public-keys\": {\"b\": \"k2\", \"a\": [\"k1\"]}\n}\n", func(t *testing.T, md *Metadata) {
			if md.InstanceID != "iid-json" || md.Hostname != "jh" || !slices.Equal(md.PublicKeys, []string{"k2", "k1"}) {
				t.Errorf("md %q %q %q", md.InstanceID, md.Hostname, md.PublicKeys)
			}
		}, ""},
		{"keys as lines", "public-keys: |\n  ssh-rsa AAA one\n\n  ssh-ed25519 BBB two\n", func(t *testing.T, md *Metadata) {
			if !slices.Equal(md.PublicKeys, []string{"ssh-rsa AAA one", "ssh-ed25519 BBB two"}) {
				t.Errorf("keys %q", md.PublicKeys)
			}
		}, ""},
		{"keys as a mapping, document order", "public-keys:\n  zeta: ssh-rsa Z\n  alpha: [ssh-rsa A1, '', ssh-rsa A2]\n", func(t *testing.T, md *Metadata) {
			if !slices.Equal(md.PublicKeys, []string{"ssh-rsa Z", "ssh-rsa A1", "ssh-rsa A2"}) {
				t.Errorf("keys %q", md.PublicKeys)
			}
		}, ""},
		{"network-drivers", "seedkeeper:network-drivers: [virtio_net, e1000]\n", func(t *testing.T, md *Metadata) {
			if !md.NetworkDriversSet || !slices.Equal(md.NetworkDrivers, []string{"virtio_net", "e1000"}) {
				t.Errorf("drivers %v %q", md.NetworkDriversSet, md.NetworkDrivers)
			}
		}, ""},
		{"bad network-drivers allow nothing", "seedkeeper:network-drivers: {a: b}\n", func(t *testing.T, md *Metadata) {
			if !md.NetworkDriversSet || md.NetworkDrivers != nil {
				t.Errorf("drivers %v %q", md.NetworkDriversSet, md.NetworkDrivers)
			}
		}, ""},
		{"a list", "- instance-id\n- x\n", nil, "/var/lib/cloud/seed/nocloud/meta-data: meta-data must be a mapping, not a list"},
		{"a string", "just text\n", nil, "meta-data must be a mapping, not a string of 9 bytes"},
		{"bad yaml", "a: [\n", nil, "/var/lib/cloud/seed/nocloud/meta-data: meta-data is not YAML or JSON"},
		{"duplicate key", "a: 1\na: 2\n", nil, "line 2: mapping key already defined at line 1"},
		// One bad field is dropped with a warning naming
		// it; the rest of the seed is used.
		{"instance-id a list", "instance-id: [a]\nlocal-hostname: h\n", warned(func(t *testing.T, md *Metadata) {
			if md.InstanceID != "nocloud" || !md.InstanceIDDefaulted || md.Hostname != "h" {
				t.Errorf("ID %q defaulted %v hostname %q", md.InstanceID, md.InstanceIDDefaulted, md.Hostname)
			}
		}, "meta-data instance-id: want a string, got a list; treating it as absent"), ""},
		{"public-keys a number", "public-keys: 3\n", warned(nil, "meta-data public-keys dropped: want a string, a list or a mapping, got a number"), ""},
		{"public-keys item a mapping", "public-keys: [{a: b}, ssh-rsa AAA]\n", warned(func(t *testing.T, md *Metadata) {
			if !slices.Equal(md.PublicKeys, []string{"ssh-rsa AAA"}) {
				t.Errorf("keys %q", md.PublicKeys)
			}
		}, "meta-data public-keys[0] dropped: want a key string, got a mapping"), ""},
		{"key with a TAB", "public-keys: [\"ssh-ed25519\\tAAAAC3 me@host\", \"ssh-rsa AAA\\rx\", ssh-rsa BBB]\n", warned(func(t *testing.T, md *Metadata) {
			if !slices.Equal(md.PublicKeys, []string{"ssh-ed25519 AAAAC3 me@host", "ssh-rsa BBB"}) {
				t.Errorf("keys %q", md.PublicKeys)
			}
		}, "meta-data public-keys[0]: a TAB between fields was replaced by a space", "meta-data public-keys[1] dropped: control character U+000D at byte 11"), ""},
		{"instance-id dot-dot", "instance-id: ..\n", warned(func(t *testing.T, md *Metadata) {
			if md.InstanceID != "nocloud" || !md.InstanceIDDefaulted {
				t.Errorf("ID %q", md.InstanceID)
			}
		}, "meta-data instance-id dropped: instance ID is \".\" or \"..\", not a directory name"), ""},
		{"instance-id with a slash", "instance-id: a/../../b\n", warned(func(t *testing.T, md *Metadata) {
			if md.InstanceID != "nocloud" {
				t.Errorf("ID %q", md.InstanceID)
			}
		}, "meta-data instance-id dropped: instance ID has a \"/\" at byte 1"), ""},
		{"hostname with a newline", "local-hostname: \"h\\nx\"\n", warned(func(t *testing.T, md *Metadata) {
			if md.Hostname != "" {
				t.Errorf("hostname %q", md.Hostname)
			}
		}, "meta-data local-hostname dropped: control character U+000A at byte 1"), ""},
		{"key that is a list", "[a]: b\ninstance-id: i-1\n", warned(func(t *testing.T, md *Metadata) {
			if md.InstanceID != "i-1" {
				t.Errorf("ID %q", md.InstanceID)
			}
		}, "/var/lib/cloud/seed/nocloud/meta-data: 1 meta-data keys that are not strings dropped"), ""},
		{"nested key that is not a string", "instance-id: i-1\nx: {1: a, true: b}\n", func(t *testing.T, md *Metadata) {
			// fetch --json once printed nothing for this.
			if _, err := json.Marshal(md.MetaData); err != nil {
				t.Errorf("meta-data cannot be JSON: %v", err)
			}
			if x, _ := md.MetaData["x"].(map[string]any); x["1"] != "a" || x["true"] != "b" {
				t.Errorf("x = %#v", md.MetaData["x"])
			}
		}, ""},
		{"dsmode disabled", "dsmode: disabled\n", nil, "dsmode is disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newNCRoot(t)
			r.seed(noCloudSeedDir, map[string]string{"meta-data": tt.meta, "user-data": "#cloud-config\n"})
			md, err := readNoCloud(context.Background(), r.opts())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if tt.name == "dsmode disabled" && !errors.Is(err, ErrNoSource) {
					t.Errorf("dsmode disabled: %v is not ErrNoSource", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, md)
		})
	}
}

func TestReadNoCloudNetworkConfig(t *testing.T) {
	for _, tt := range []struct{ name, doc, err string }{
		{"disabled", "network: {config: disabled}\n", ""},
		{"wrapped v1", "network:\n  version: 1\n  config:\n  - type: physical\n    name: eth0\n", ""},
		{"bad", "version: 7\n", "/var/lib/cloud/seed/nocloud/network-config dropped, leaving the network alone: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newNCRoot(t)
			r.seed(noCloudSeedDir, map[string]string{"meta-data": "", "user-data": "", "network-config": tt.doc})
			md, err := readNoCloud(context.Background(), r.opts())
			if tt.err != "" {
				// The seed is still read; the network
				// is left alone and the warning says why.
				if err != nil || md.Network != nil || md.NetworkConfigRaw != nil || len(md.Warnings) != 1 || !strings.HasPrefix(md.Warnings[0], tt.err) {
					t.Fatalf("err = %v, md %+v, want the warning %q", err, md, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(md.NetworkConfigRaw) != tt.doc {
				t.Errorf("NetworkConfigRaw = %q, want the bytes as read", md.NetworkConfigRaw)
			}
			if (md.Network == nil) != (tt.name == "disabled") {
				t.Errorf("Network = %+v", md.Network)
			}
		})
	}
}

// seedServer serves a seed; fail[path] is how many times that path answers
// 503 before it works. Paths not in files are 404.
func seedServer(t *testing.T, files map[string]string, fail map[string]int) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	left := map[string]*atomic.Int32{}
	for p, n := range fail {
		left[p] = &atomic.Int32{}
		left[p].Store(int32(n))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Add(1)
		if c, ok := left[req.URL.Path]; ok && c.Add(-1) >= 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		body, ok := files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestReadNoCloudSeedfromHTTP(t *testing.T) {
	srv, hits := seedServer(t, map[string]string{
		"/CH-42/meta-data":      "instance-id: iid-http\nlocal-hostname: httphost\n",
		"/CH-42/user-data":      "#cloud-config\n# from http\n",
		"/CH-42/network-config": "version: 1\nconfig: []\n",
	}, map[string]int{"/CH-42/meta-data": 2})
	r := newNCRoot(t)
	r.write("/sys/class/dmi/id/chassis_serial", []byte("CH-42\n"))
	r.write(cmdlinePath, []byte("ds=nocloud;s="+srv.URL+"/__dmi.chassis-serial-number__/;h=cmdhost\n"))
	r.seed(noCloudSeedDir, map[string]string{"meta-data": "", "user-data": "# dir\n", "vendor-data": "# dir vendor\n"})
	o := r.opts()
	o.NoCloud.HTTPClient = srv.Client()
	o.NoCloud.SeedfromBackoff = time.Millisecond
	md, err := readNoCloud(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "iid-http" || md.Hostname != "cmdhost" {
		t.Errorf("ID %q host %q: the seedfrom meta-data ranks below the command line", md.InstanceID, md.Hostname)
	}
	if string(md.UserData) != "#cloud-config\n# from http\n" || string(md.VendorData) != "# dir vendor\n" || string(md.NetworkConfigRaw) != "version: 1\nconfig: []\n" {
		t.Errorf("user %q vendor %q network %q", md.UserData, md.VendorData, md.NetworkConfigRaw)
	}
	if !strings.HasSuffix(md.Origin.Transport, ",seedfrom:"+srv.URL+"/CH-42/") {
		t.Errorf("Transport = %q", md.Origin.Transport)
	}
	// 2 failures + 4 files (vendor-data is a 404).
	if n := hits.Load(); n != 6 {
		t.Errorf("%d requests, want 6", n)
	}
}

func TestReadNoCloudSeedfromHTTPErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		fail  map[string]int
		hits  int32
		err   string
	}{
		{"always busy", nil, map[string]int{"/s/meta-data": 100}, 3, "503 Service Unavailable (after 3 tries)"},
		{"no user-data", map[string]string{"/s/meta-data": "{}"}, nil, 2, "/s/user-data: not found"},
		{"no meta-data", map[string]string{}, nil, 1, "/s/meta-data: not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := seedServer(t, tt.files, tt.fail)
			r := newNCRoot(t)
			r.write(cmdlinePath, []byte("ds=nocloud-net;s="+srv.URL+"/s/\n"))
			o := r.opts()
			o.NoCloud.HTTPClient = srv.Client()
			o.NoCloud.SeedfromBackoff = time.Millisecond
			_, err := readNoCloud(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if n := hits.Load(); n != tt.hits {
				t.Errorf("%d requests, want %d", n, tt.hits)
			}
		})
	}
}

func TestReadNoCloudSeedfromCancel(t *testing.T) {
	srv, _ := seedServer(t, nil, map[string]int{"/s/meta-data": 100})
	r := newNCRoot(t)
	r.write(cmdlinePath, []byte("ds=nocloud;s="+srv.URL+"/s/\n"))
	o := r.opts()
	o.NoCloud.HTTPClient = srv.Client()
	o.NoCloud.SeedfromBackoff = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	o.Logger = slog.New(cancelOnRetry{cancel})
	_, err := readNoCloud(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// cancelOnRetry is a log handler that cancels a context when the seedfrom
// fetch says it will retry.
type cancelOnRetry struct{ cancel context.CancelFunc }

func (h cancelOnRetry) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelOnRetry) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "retrying") {
		h.cancel()
	}
	return nil
}
func (h cancelOnRetry) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h cancelOnRetry) WithGroup(string) slog.Handler      { return h }

func TestReadNoCloudSeedfromLocal(t *testing.T) {
	for _, tt := range []struct{ name, seedfrom string }{
		{"path", "/srv/seed/"},
		{"path without slash", "/srv/seed"},
		{"file URL with %s", "file:///srv/seed/%s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newNCRoot(t)
			r.seed("/srv/seed", map[string]string{"meta-data": "instance-id: iid-local\n", "user-data": "# local\n", "vendor-data": "# v\n"})
			r.seed(noCloudSeedDir, map[string]string{"meta-data": "seedfrom: " + tt.seedfrom + "\n", "user-data": "# dir\n"})
			md, err := readNoCloud(context.Background(), r.opts())
			if err != nil {
				t.Fatal(err)
			}
			if md.InstanceID != "iid-local" || string(md.UserData) != "# local\n" || string(md.VendorData) != "# v\n" {
				t.Errorf("ID %q user %q vendor %q", md.InstanceID, md.UserData, md.VendorData)
			}
		})
	}
	r := newNCRoot(t)
	r.write(cmdlinePath, []byte("ds=nocloud;s=ftp://h/seed/\n"))
	if _, err := readNoCloud(context.Background(), r.opts()); err == nil || !strings.Contains(err.Error(), `unsupported scheme "ftp"`) {
		t.Errorf("ftp seedfrom: %v", err)
	}
}

func TestReadNoCloudCorruptDisk(t *testing.T) {
	// A corrupt labelled disk is skipped with a warning; the next one is
	// used.
	r := newNCRoot(t)
	bad := fixture(t, "cloud-localds.iso.gz")
	bad = bad[:50000] // cut the files off
	r.device("vdb", bad)
	r.device("vda", fixture(t, "cloud-localds.vfat.gz"))
	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	if md.Origin.Transport != "vfat:/dev/vda" {
		t.Errorf("Transport = %q", md.Origin.Transport)
	}
}

func FuzzNoCloudMetaData(f *testing.F) {
	for _, s := range []string{
		"instance-id: a\nlocal-hostname: b\npublic-keys: [k]\n",
		"{\"instance-id\": 1, \"public-keys\": {\"a\": [\"x\", 2]}}",
		"public-keys: |\n  a\n  b\n", "- x\n", "", "~", "a: &x [*x]\n", "? [a]\n: b\n",
		"instance-id: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		meta, err := parseNoCloudMeta(doc, "meta-data")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "meta-data: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		m := noCloudMerge{meta: map[string]any{}, nodes: map[string]*yaml.Node{}}
		m.add(noCloudSeed{transport: "fuzz"})
		m.addMeta(meta, "fuzz")
		m.hasUser = true
		md, err := m.metadata("", slog.New(slog.DiscardHandler))
		if err != nil {
			return
		}
		if err := checkUsable(md); err != nil {
			t.Fatalf("reader handed on a field a writer refuses: %v", err)
		}
	})
}

func BenchmarkReadNoCloud(b *testing.B) {
	for _, img := range []string{"cloud-localds.iso.gz", "cloud-localds.vfat.gz"} {
		p := filepath.Join(b.TempDir(), "seed.img")
		if err := os.WriteFile(p, fixture(b, img), 0o600); err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimSuffix(img, ".gz"), func(b *testing.B) {
			b.ReportAllocs()
			o := Options{Root: b.TempDir(), NoCloud: NoCloudOptions{SeedPath: p}}
			for b.Loop() {
				if _, err := readNoCloud(context.Background(), o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
