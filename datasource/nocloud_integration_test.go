package datasource

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/nocloudline"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

const cloudInitPython = "/usr/lib/python3/dist-packages/cloudinit/__init__.py"

func needSeedTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (packages genisoimage, cloud-image-utils, dosfstools, mtools): run `sudo make test`, which installs them", tool)
		}
	}
}

func needCloudInit(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(cloudInitPython); err != nil {
		t.Skip("needs Debian's cloud-init package under /usr/bin/python3: run `sudo make test`, which installs it")
	}
}

func runTool(t *testing.T, argv ...string) []byte {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

// TestIntegrationNoCloudProxmoxDisk builds a seed the way Proxmox VE does
// (docs/cloud-init.md, "Proxmox VE": the four files, genisoimage -quiet
// -iso-level 3 -J -R -V cidata, instance-id = SHA-1(user-data ‖
// network-config)), attaches it as /dev/sr0 under a scratch root next to a
// cidata disk that is not a seed, and reads it through the label scan.
func TestIntegrationNoCloudProxmoxDisk(t *testing.T) {
	testenv.Integration(t)
	needSeedTools(t, "genisoimage", "cloud-localds")
	r := newNCRoot(t)
	src := filepath.Join(t.TempDir(), "pve")
	user := fixture(t, "proxmox/user-data")
	network := []byte("version: 1\nconfig:\n    - type: physical\n      name: eth0\n      mac_address: 'bc:24:11:00:00:01'\n      subnets:\n      - type: dhcp4\n    - type: nameserver\n")
	sum := sha1.Sum(append(slices.Clone(user), network...))
	id := hex.EncodeToString(sum[:])
	for name, b := range map[string][]byte{
		"user-data": user, "network-config": network, "vendor-data": {},
		"meta-data": []byte("instance-id: " + id + "\n"),
	} {
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.write("/sys/class/block/sr0/size", []byte("8\n"))
	r.write("/sys/class/block/vdb/size", []byte("8\n"))
	if err := os.MkdirAll(filepath.Join(r.dir, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	runTool(t, "genisoimage", "-quiet", "-iso-level", "3", "-J", "-R", "-V", "cidata", "-o", filepath.Join(r.dir, "dev/sr0"), src)
	// vdb sorts first but holds meta-data only: cloud-init skips it.
	onlyMeta := filepath.Join(t.TempDir(), "meta-only")
	if err := os.MkdirAll(onlyMeta, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(onlyMeta, "meta-data"), []byte("instance-id: wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, "genisoimage", "-quiet", "-J", "-R", "-V", "cidata", "-o", filepath.Join(r.dir, "dev/vdb"), onlyMeta)

	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != id || md.Origin.Transport != "iso9660:/dev/sr0" {
		t.Errorf("ID %q from %q, want %q from iso9660:/dev/sr0", md.InstanceID, md.Origin.Transport, id)
	}
	if string(md.NetworkConfigRaw) != string(network) || md.Network == nil || md.Network.Interfaces[0].MAC != "bc:24:11:00:00:01" {
		t.Errorf("network %q %+v", md.NetworkConfigRaw, md.Network)
	}
	if md.VendorData == nil || len(md.VendorData) != 0 {
		t.Errorf("VendorData = %q, want present and empty", md.VendorData)
	}
}

// TestIntegrationNoCloudMatchesCloudInit reads one seed directory with
// Debian's cloud-init 22.4.2 and with readNoCloud and compares what both
// report.
func TestIntegrationNoCloudMatchesCloudInit(t *testing.T) {
	testenv.Integration(t)
	needCloudInit(t)
	seed, _ := filepath.Abs(filepath.Join(ncFixtures, "seed"))
	script := `
import json, shutil, sys
from cloudinit import distros, helpers
from cloudinit.sources.DataSourceNoCloud import DataSourceNoCloud
tmp, seed = sys.argv[1], sys.argv[2]
paths = helpers.Paths({"cloud_dir": tmp, "run_dir": tmp + "/run"})
shutil.copytree(seed, paths.seed_dir + "/nocloud")
ds = DataSourceNoCloud({"datasource": {"NoCloud": {"fs_label": None}}},
                       distros.fetch("debian")("debian", {}, paths), paths)
ok = ds.get_data()
ud = ds.get_userdata_raw()
print(json.dumps({"ok": ok, "iid": ds.get_instance_id(),
                  "host": ds.metadata.get("local-hostname"),
                  "keys": ds.get_public_ssh_keys(),
                  "ud": ud.decode() if isinstance(ud, bytes) else ud,
                  "net": ds.network_config}))
`
	out, err := exec.Command("/usr/bin/python3", "-c", script, t.TempDir(), seed).Output()
	if err != nil {
		t.Fatalf("cloud-init: %v", err)
	}
	var ci struct {
		OK   bool     `json:"ok"`
		IID  string   `json:"iid"`
		Host string   `json:"host"`
		Keys []string `json:"keys"`
		UD   string   `json:"ud"`
		Net  any      `json:"net"`
	}
	if err := json.Unmarshal(out, &ci); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	r := newNCRoot(t)
	o := r.opts()
	o.NoCloud.SeedPath = seed
	md, err := readNoCloud(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !ci.OK || md.InstanceID != ci.IID || md.Hostname != ci.Host || !slices.Equal(md.PublicKeys, ci.Keys) || string(md.UserData) != ci.UD {
		t.Errorf("cloud-init: %+v\nours: id %q host %q keys %q ud %q", ci, md.InstanceID, md.Hostname, md.PublicKeys, md.UserData)
	}
	if ci.Net == nil || md.Network == nil {
		t.Errorf("network: cloud-init %v, ours %+v", ci.Net, md.Network)
	}
}

// TestIntegrationNoCloudLineMatchesCloudInit runs cloud-init's own
// load_cmdline_data on the same lines as ParseNoCloudLine. cloud-init
// 22.4.2 does not yet infer dsmode from the seedfrom scheme (later versions
// do, and so do we), so dsmode is compared only without a seedfrom.
func TestIntegrationNoCloudLineMatchesCloudInit(t *testing.T) {
	testenv.Integration(t)
	needCloudInit(t)
	lines := []string{
		"root=/dev/vda1 ro ds=nocloud",
		"ds=nocloud-net",
		"ds=nocloud;s=https://10.42.42.42/configs/;i=iid-01;h=myhost",
		"quiet ds=nocloud-net;s=http://10.0.0.1:8000/__dmi.chassis-serial-number__/ console=ttyS0",
		"ds=nocloud;s=/srv/seed/;dsmode=net",
		"ds=nocloud;flag;k=v=w;;",
		"ds=nocloud;i=first ds=nocloud-net;i=second",
		"ds=nocloud-net;i=a ds=nocloud;i=b",
		"ds=nocloudx", "xds=nocloud", "ds=nocloud-netx;i=a", "ds=NoCloud", "",
		"ds=nocloud;h=a\tb", "ds=nocloud;i=é;h=ü",
	}
	script := `
import json, sys
from cloudinit.sources.DataSourceNoCloud import load_cmdline_data
out = []
for line in json.loads(sys.argv[1]):
    fill = {}
    found = load_cmdline_data(fill, line)
    out.append({"found": found, "md": fill})
print(json.dumps(out))
`
	arg, _ := json.Marshal(lines)
	out, err := exec.Command("/usr/bin/python3", "-c", script, string(arg)).Output()
	if err != nil {
		t.Fatalf("cloud-init: %v", err)
	}
	var ci []struct {
		Found bool           `json:"found"`
		MD    map[string]any `json:"md"`
	}
	if err := json.Unmarshal(out, &ci); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i, line := range lines {
		md, found := nocloudline.Parse(line)
		if found != ci[i].Found {
			t.Errorf("%q: found %v, cloud-init %v", line, found, ci[i].Found)
			continue
		}
		if !found {
			continue
		}
		if _, ok := md["seedfrom"]; ok {
			delete(md, "dsmode")
			delete(ci[i].MD, "dsmode")
		}
		if !reflect.DeepEqual(md, ci[i].MD) {
			t.Errorf("%q: %v, cloud-init %v", line, md, ci[i].MD)
		}
	}
}
