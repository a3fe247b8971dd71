package seed

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// readSeedPy makes Debian's cloud-init (22.4.2) read NoCloud seed
// directories the way it does at boot (machine-notes.md) and prints, for
// each cloud dir given, what it found as one JSON object.
const readSeedPy = `
import base64, json, logging, sys
logging.disable(logging.CRITICAL)
from cloudinit import distros, helpers
from cloudinit.net import network_state
from cloudinit.sources.DataSourceNoCloud import DataSourceNoCloud

def b64(v):
    if v is None:
        return None
    if isinstance(v, str):
        v = v.encode()
    return base64.b64encode(v).decode()

out = []
for cloud_dir in sys.argv[1:]:
    paths = helpers.Paths({"cloud_dir": cloud_dir, "run_dir": cloud_dir + "/run"})
    distro = distros.fetch("debian")("debian", {}, paths)
    ds = DataSourceNoCloud({"datasource": {"NoCloud": {"fs_label": None}}}, distro, paths)
    r = {"found": bool(ds.get_data())}
    if r["found"]:
        r["instance_id"] = ds.get_instance_id()
        r["hostname"] = ds.metadata.get("local-hostname")
        r["keys"] = ds.get_public_ssh_keys()
        r["user_data"] = b64(ds.get_userdata_raw())
        r["vendor_data"] = b64(ds.get_vendordata_raw())
        nc = ds.network_config
        r["network_config"] = nc
        if nc is not None:
            try:
                network_state.parse_net_config_data(nc, skip_broken=False)
                r["network_ok"] = True
            except Exception as e:
                r["network_error"] = "%s: %s" % (type(e).__name__, e)
    out.append(r)
print(json.dumps(out))
`

// needCloudInit skips the test unless Debian's cloud-init is installed
// for /usr/bin/python3.
func needCloudInit(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/lib/python3/dist-packages/cloudinit/sources/DataSourceNoCloud.py"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs Debian's cloud-init under /usr/bin/python3 (%s is missing): run `sudo make test` (scripts/test-deps.sh installs it) or `apt-get install cloud-init`", p)
		}
	}
}

type ciResult struct {
	Found         bool           `json:"found"`
	InstanceID    any            `json:"instance_id"`
	Hostname      any            `json:"hostname"`
	Keys          []string       `json:"keys"`
	UserData      []byte         `json:"user_data"`
	VendorData    []byte         `json:"vendor_data"`
	NetworkConfig map[string]any `json:"network_config"`
	NetworkOK     bool           `json:"network_ok"`
	NetworkError  string         `json:"network_error"`
}

// TestIntegrationCloudInitReadsSeed is the conformance test: the real
// cloud-init's NoCloud datasource reads the seeds Write makes and reports
// our instance ID, hostname, keys, user-data, vendor-data and network
// config, and network_state accepts every network-config we write
// (including one given to us wrapped in "network:").
func TestIntegrationCloudInitReadsSeed(t *testing.T) {
	testenv.Integration(t)
	needCloudInit(t)
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "seed", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type tc struct {
		name    string
		seed    Seed
		network bool
	}
	base := Seed{
		InstanceID: "7546db88024ce241dfedc87840dcb2324dc66569",
		Hostname:   "web1",
		PublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx web@admin", "ssh-rsa AAAAB3NzaC1yc2E second"},
		UserData:   []byte("#cloud-config\nhostname: web1\npassword: hunter2\n"),
		VendorData: []byte("#cloud-config\nruncmd: [true]\n"),
	}
	cases := []tc{{name: "no network-config", seed: base}}
	for _, f := range []string{"network-v1.yaml", "network-v1-wrapped.yaml", "network-v2.yaml"} {
		s := base
		s.NetworkConfig = fixture(f)
		cases = append(cases, tc{name: f, seed: s, network: true})
	}
	empty := base
	empty.UserData, empty.VendorData, empty.PublicKeys, empty.Hostname = nil, nil, nil, ""
	cases = append(cases, tc{name: "empty user-data", seed: empty})
	for _, id := range trickyIDs {
		if datasource.CheckInstanceID(id) != nil {
			continue // refused before cloud-init sees it
		}
		s := base
		s.InstanceID, s.Hostname = id, id
		cases = append(cases, tc{name: "id " + id, seed: s})
	}

	var dirs []string
	for _, c := range cases {
		root := sysroot.Root(t.TempDir())
		if _, err := Write(string(root), c.seed); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		dirs = append(dirs, root.Path("/var/lib/cloud"))
	}
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", readSeedPy}, dirs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init: %v\n%s", err, stderr.Bytes())
	}
	var got []ciResult
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("cloud-init output: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	for i, c := range cases {
		r := got[i]
		if !r.Found {
			t.Errorf("%s: cloud-init found no seed", c.name)
			continue
		}
		if r.InstanceID != c.seed.InstanceID {
			t.Errorf("%s: instance ID %#v, want %q", c.name, r.InstanceID, c.seed.InstanceID)
		}
		if c.seed.Hostname != "" && r.Hostname != c.seed.Hostname {
			t.Errorf("%s: hostname %#v, want %q", c.name, r.Hostname, c.seed.Hostname)
		}
		if len(r.Keys) != len(c.seed.PublicKeys) {
			t.Errorf("%s: keys %q", c.name, r.Keys)
		}
		if !bytes.Equal(r.UserData, c.seed.UserData) || !bytes.Equal(r.VendorData, c.seed.VendorData) {
			t.Errorf("%s: user-data %q vendor-data %q", c.name, r.UserData, r.VendorData)
		}
		switch {
		case !c.network && r.NetworkConfig != nil:
			t.Errorf("%s: cloud-init found a network config: %v", c.name, r.NetworkConfig)
		case c.network && (r.NetworkConfig == nil || !r.NetworkOK):
			t.Errorf("%s: network config %v not accepted: %s", c.name, r.NetworkConfig, r.NetworkError)
		case c.network && r.NetworkConfig["version"] == nil:
			t.Errorf("%s: network config has no version (still wrapped?): %v", c.name, r.NetworkConfig)
		}
	}
	if t.Failed() {
		t.Logf("cloud-init stderr:\n%s", stderr.Bytes())
	}
}

// The wrapped config really is what cloud-init 22.4 rejects: the reason
// Write unwraps (machine-notes.md).
func TestIntegrationCloudInitRejectsWrappedNetworkConfig(t *testing.T) {
	testenv.Integration(t)
	needCloudInit(t)
	root := sysroot.Root(t.TempDir())
	s := Seed{InstanceID: "i-1", UserData: []byte("#cloud-config\n")}
	s.NetworkConfig = []byte("version: 1\nconfig: []\n")
	if _, err := Write(string(root), s); err != nil {
		t.Fatal(err)
	}
	wrapped, _ := os.ReadFile(filepath.Join("..", "testdata", "seed", "network-v1-wrapped.yaml"))
	os.WriteFile(root.Path(sd(NetworkConfigFile)), wrapped, 0o600) // bypass the unwrapping
	out, err := exec.Command("/usr/bin/python3", "-c", readSeedPy, root.Path("/var/lib/cloud")).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []ciResult
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !got[0].Found {
		t.Fatal("cloud-init found no seed")
	}
	if got[0].NetworkOK {
		t.Skip("this cloud-init accepts a wrapped network-config (newer than 22.4); unwrapping is still harmless")
	}
	if !strings.Contains(got[0].NetworkError, "No valid network_state") {
		t.Errorf("wrapped network-config: error %q, want cloud-init's \"No valid network_state\"", got[0].NetworkError)
	}
}
