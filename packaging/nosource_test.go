package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/nosource"
)

// noSourceDropIn skips cloud-init's units on a boot that found no source
// and no seed; gatedUnits are the units it is installed for: cloud-init
// 22.4's four and 24.3's single-process set.
const noSourceDropIn = "seedkeeper-no-source.conf"

var gatedUnits = []string{
	"cloud-init-main.service",
	"cloud-init-local.service",
	"cloud-init.service",
	"cloud-init-network.service",
	"cloud-config.service",
	"cloud-final.service",
}

// debianUnits are Debian 12's cloud-init 22.4.2 units.
var debianUnits = []string{"cloud-init-local.service", "cloud-init.service", "cloud-config.service", "cloud-final.service"}

func TestNoSourceDropIn(t *testing.T) {
	t.Parallel()
	u := parseUnit(t, noSourceDropIn)
	if got := u.get("Unit", "ConditionPathExists"); got != "!"+nosource.MarkerPath {
		t.Errorf("ConditionPathExists = %q; want !%s", got, nosource.MarkerPath)
	}
	if len(u) != 1 || len(u["Unit"]) != 1 {
		t.Errorf("the drop-in sets more than the condition: %v", u)
	}
	// Every gated unit that does not start after cloud-init-local must
	// start after boot, or its condition is tested before boot decided.
	b := parseUnit(t, "seedkeeper-boot.service")
	hasAll(t, b, "Unit", "Before", "cloud-init-local.service", "cloud-init-main.service")
}

// TestPackageInstallsNoSourceDropIn ties nfpm.yaml to gatedUnits for both
// package formats.
func TestPackageInstallsNoSourceDropIn(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Contents []struct {
			Src, Dst, Packager string
		} `yaml:"contents"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for pkg, dir := range map[string]string{"deb": "/lib/systemd/system", "rpm": "/usr/lib/systemd/system"} {
		var got []string
		for _, c := range cfg.Contents {
			if c.Src == "packaging/"+noSourceDropIn && c.Packager == pkg {
				got = append(got, c.Dst)
			}
		}
		var want []string
		for _, u := range gatedUnits {
			want = append(want, dir+"/"+u+".d/"+noSourceDropIn)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s installs the no-source drop-in as %v; want %v", pkg, got, want)
		}
	}
}

// TestIntegrationNoSourceDropInSkipsCloudInit evaluates the conditions of
// Debian's cloud-init 22.4.2 units with the drop-in, as systemd does when
// it starts them (systemd-analyze condition --unit, with the unit path set
// to a scratch copy and the marker's path moved into the scratch folder):
// all four run without the marker and are all skipped with it; without the
// drop-in the marker changes nothing.
func TestIntegrationNoSourceDropInSkipsCloudInit(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	sa := needTool(t, "systemd-analyze", "systemd")
	if _, err := os.Stat("/lib/systemd/system/cloud-init-local.service"); err != nil {
		t.Skip("needs Debian's cloud-init units: apt-get install cloud-init (make test-deps installs it as root)")
	}
	dropIn := readFileT(t, noSourceDropIn)
	scratch := t.TempDir()
	marker := filepath.Join(scratch, "no-source")
	if !strings.Contains(dropIn, nosource.MarkerPath) {
		t.Fatalf("the drop-in does not name %s", nosource.MarkerPath)
	}
	dropIn = strings.ReplaceAll(dropIn, nosource.MarkerPath, marker)
	unitDir := func(withDropIn bool) string {
		d := t.TempDir()
		for _, u := range debianUnits {
			b, err := os.ReadFile(filepath.Join("/lib/systemd/system", u))
			if err != nil {
				t.Fatal(err)
			}
			writeFileT(t, filepath.Join(d, u), string(b))
			if withDropIn {
				writeFileT(t, filepath.Join(d, u+".d", noSourceDropIn), dropIn)
			}
		}
		return d
	}
	runs := func(dir, u string) (bool, string) {
		cmd := exec.Command(sa, "condition", "--unit="+u)
		// The trailing ":" keeps the built-in unit path after ours.
		cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s: %v", sa, err)
		}
		return err == nil, string(out)
	}
	with, without := unitDir(true), unitDir(false)
	for _, u := range debianUnits {
		if ok, out := runs(with, u); !ok {
			t.Errorf("%s does not run without the marker:\n%s", u, out)
		}
	}
	writeFileT(t, marker, "{}\n")
	for _, u := range debianUnits {
		if ok, out := runs(with, u); ok || !strings.Contains(out, "ConditionPathExists=!"+marker+" failed") {
			t.Errorf("%s runs with the marker:\n%s", u, out)
		}
		if ok, out := runs(without, u); !ok {
			t.Errorf("%s without the drop-in is skipped by the marker:\n%s", u, out)
		}
	}
}

func readFileT(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFileT(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cloudInitStatus asks cloud-init 22.4.2's own status code what "cloud-init
// status" would say about the run directory under root.
const cloudInitStatus = `
import sys
import cloudinit.cmd.status as s
from cloudinit import helpers
s.uses_systemd = lambda: True
s.get_cmdline = lambda: "ro quiet"
root = sys.argv[1]
d = s.get_status_details(helpers.Paths({"run_dir": root + "/run/cloud-init", "cloud_dir": root + "/var/lib/cloud"}))
print(d.status.value, d.boot_status_code.value)
`

// TestIntegrationHeldCloudInitStatus checks, with cloud-init's status code,
// that a held boot reads "disabled" (so "cloud-init status --wait" returns,
// as when ds-identify disables cloud-init) and a released one "not run"
// with the generator's "enabled".
func TestIntegrationHeldCloudInitStatus(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	py := needTool(t, "/usr/bin/python3", "python3")
	if _, err := os.Stat("/usr/lib/python3/dist-packages/cloudinit/cmd/status.py"); err != nil {
		t.Skip("needs Debian's cloud-init: apt-get install cloud-init (make test-deps installs it as root)")
	}
	root := t.TempDir()
	writeFileT(t, filepath.Join(root, "run/cloud-init/enabled"), "")
	status := func() string {
		out, err := exec.Command(py, "-c", cloudInitStatus, root).CombinedOutput()
		if err != nil {
			t.Fatalf("cloud-init status: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := status(); got != "not run enabled-by-generator" {
		t.Errorf("before: %q", got)
	}
	h, err := nosource.HoldCloudInit(sysroot.Root(root), time.Now())
	if err != nil || !h.Held {
		t.Fatalf("HoldCloudInit = %+v, %v", h, err)
	}
	if got := status(); got != "disabled disabled-by-generator" {
		t.Errorf("held: cloud-init status says %q; want disabled", got)
	}
	if err := nosource.Release(sysroot.Root(root)); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "not run enabled-by-generator" {
		t.Errorf("released: %q", got)
	}
}
