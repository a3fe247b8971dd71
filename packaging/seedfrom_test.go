package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// probeNoCloud runs cloud-init's own NoCloud datasources
// (testdata/nocloud_probe.py) with the system config of dropIn, the seed
// directory seedkeeper writes and the kernel command line cmdline, and
// returns what each claims. It skips without cloud-init's Python modules;
// SEEDKEEPER_CLOUDINIT_PYTHONPATH names another cloud-init's (the 25.x of
// a trixie .deb extracted with dpkg-deb -x, its usr/lib/python3/dist-packages).
func probeNoCloud(t *testing.T, dropIn, cmdline string) map[string]map[string]any {
	t.Helper()
	testenv.SkipShort(t, "runs cloud-init's NoCloud datasource in Python")
	py := "/usr/bin/python3"
	env := os.Environ()
	if p := os.Getenv("SEEDKEEPER_CLOUDINIT_PYTHONPATH"); p != "" {
		env = append(env, "PYTHONPATH="+p)
	}
	check := exec.Command(py, "-c", "import cloudinit.sources.DataSourceNoCloud")
	check.Env = env
	if err := check.Run(); err != nil {
		t.Skipf("cloud-init's Python modules are not importable by %s (apt-get install cloud-init): %v", py, err)
	}
	seed := filepath.Join(t.TempDir(), "cloud/seed/nocloud")
	if err := os.MkdirAll(seed, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"meta-data": "instance-id: iid-seedkeeper\n", "user-data": "#cloud-config\nhostname: ours\n"} {
		if err := os.WriteFile(filepath.Join(seed, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(py, "testdata/nocloud_probe.py", dropIn, seed, cmdline)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nocloud_probe.py: %v", err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("nocloud_probe.py printed %q: %v", out, err)
	}
	return got
}

// An http(s) seedfrom on the kernel command line (ds=nocloud;s=URL, left by
// an image build) made cloud-init's local NoCloud refuse seedkeeper's seed
// and NoCloudNet fetch the seed again over the network. With the drop-in,
// cloud-init itself takes seedkeeper's seed in its local stage, with
// seedkeeper's instance ID and user-data, and fetches nothing; without its
// seedfrom line, cloud-init goes to the network (the test's guard).
func TestDropInSeedfromKeepsSeedkeepersSeed(t *testing.T) {
	t.Parallel()
	const cmdline = "root=/dev/vda1 ds=nocloud;s=http://10.0.2.2:8000/"
	got := probeNoCloud(t, dropIn, cmdline)
	local := got["NoCloud"]
	if local["claimed"] != true || local["instance_id"] != "iid-seedkeeper" || local["user_data"] != "#cloud-config\nhostname: ours\n" {
		t.Errorf("cloud-init's local NoCloud with the drop-in: %v", got)
	}
	if _, failed := got["DataSourceNoCloudNet"]; failed {
		t.Errorf("NoCloudNet went to the network: %v", got)
	}

	b, err := os.ReadFile(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	without := filepath.Join(t.TempDir(), dropIn)
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "seedfrom: file://") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(without, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	got = probeNoCloud(t, without, cmdline)
	if got["NoCloud"]["claimed"] != false || !strings.Contains(got["DataSourceNoCloudNet"]["error"].(string), "fetched over the network: http") {
		t.Errorf("without the drop-in's seedfrom, cloud-init: %v; want the local stage refusing and the network one fetching", got)
	}
}

// An i= on the kernel command line comes before every seed in cloud-init
// (first-wins meta-data): the drop-in cannot change that, which is why
// image check and status call it a finding. This pins the fact.
func TestDropInCannotOverrideCmdlineInstanceID(t *testing.T) {
	t.Parallel()
	got := probeNoCloud(t, dropIn, "root=/dev/vda1 ds=nocloud;i=iid-packer")
	if got["NoCloud"]["instance_id"] != "iid-packer" {
		t.Errorf("cloud-init's instance ID with a command-line i=: %v", got)
	}
}
