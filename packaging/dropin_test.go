package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// dropIn is the drop-in's file name; the package installs it in
// /etc/cloud/cloud.cfg.d.
const dropIn = "95-seedkeeper.cfg"

// distroDropIns are cloud.cfg.d files distributions and image builders
// write that set datasource_list: Ubuntu's cloud-init postinst
// (90_dpkg.cfg, from debconf), Debian's and Ubuntu's preseed files, and
// diskimage-builder. cloud-init reads cloud.cfg.d in byte order ("_" sorts
// after "-") and a later file wins, so the drop-in must sort after them.
var distroDropIns = []string{
	"90_dpkg.cfg",
	"90_dpkg_maas.cfg",
	"90_dpkg_local_cloud_config.cfg",
	"91-dib-cloud-init-datasources.cfg",
}

func TestDropIn(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		DatasourceList []string `yaml:"datasource_list"`
		Datasource     struct {
			NoCloud map[string]any `yaml:"NoCloud"`
		} `yaml:"datasource"`
		Network           map[string]any `yaml:"network"`
		DisableVMwareCust bool           `yaml:"disable_vmware_customization"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", dropIn, err)
	}
	if !slices.Equal(cfg.DatasourceList, []string{"NoCloud", "None"}) {
		t.Errorf("datasource_list = %v; want [NoCloud None]", cfg.DatasourceList)
	}
	// cloud-init's NoCloud: label = ds_cfg.get("fs_label", "cidata");
	// only an explicit null skips the label search.
	if v, ok := cfg.Datasource.NoCloud["fs_label"]; !ok || v != nil {
		t.Errorf("datasource.NoCloud.fs_label = %v (set: %v); want an explicit null", v, ok)
	}
	if got := cfg.Network["config"]; got != "disabled" {
		t.Errorf("network.config = %v; want disabled", got)
	}
	// VMware Tools hands a traditional customization spec over only when
	// it reads false (vmwaretools_test.go has its rule).
	if cfg.DisableVMwareCust {
		t.Errorf("disable_vmware_customization is true: VMware Tools would run its own customization")
	}
	// ds-identify reads datasource_list with a line match, not YAML.
	if !regexp.MustCompile(`(?m)^datasource_list: \[NoCloud, None\]$`).Match(b) {
		t.Errorf("datasource_list is not on one line as ds-identify needs it")
	}
	for _, other := range distroDropIns {
		if dropIn <= other {
			t.Errorf("%s sorts before %s, which would override its datasource_list", dropIn, other)
		}
	}
}

// TestPackageInstallsDropIn ties the name the package installs to the file
// and to the name the other checks use.
func TestPackageInstallsDropIn(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Contents []struct {
			Src, Dst, Type string
		} `yaml:"contents"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("nfpm.yaml: %v", err)
	}
	found := false
	for _, c := range cfg.Contents {
		if c.Dst == "/etc/cloud/cloud.cfg.d/"+dropIn {
			found = true
			if c.Src != "packaging/"+dropIn || c.Type != "config|noreplace" {
				t.Errorf("drop-in entry: src %q type %q; want packaging/%s, config|noreplace", c.Src, c.Type, dropIn)
			}
		}
		if strings.HasPrefix(c.Src, "packaging/") {
			if _, err := os.Stat(filepath.Join(repoRoot, c.Src)); err != nil {
				t.Errorf("nfpm.yaml names %s: %v", c.Src, err)
			}
		}
	}
	if !found {
		t.Errorf("nfpm.yaml does not install /etc/cloud/cloud.cfg.d/%s", dropIn)
	}
}

// cloudInitCheck merges the configuration under a scratch root with
// cloud-init's own code (fetch_base_config: cloud.cfg, then cloud.cfg.d in
// order), builds the NoCloud datasource from it, and asks stages.Init which
// network configuration wins over a datasource that has one. It records
// whether NoCloud searched for a labelled filesystem.
const cloudInitCheck = `
import json, os, sys
from cloudinit import distros, helpers, stages, util
from cloudinit.sources import DataSourceNoCloud

root = sys.argv[1]
stages.CLOUD_CONFIG = os.path.join(root, "etc/cloud/cloud.cfg")
stages.read_runtime_config = lambda: {}
util.read_conf_from_cmdline = lambda cmdline=None: {}
cfg = stages.fetch_base_config()

paths = helpers.Paths({"cloud_dir": os.path.join(root, "var/lib/cloud"),
                       "run_dir": os.path.join(root, "run/cloud-init")})
ds = DataSourceNoCloud.DataSourceNoCloud(cfg, distros.fetch("debian")("debian", {}, paths), paths)

searched = []
def find_devs_with(criteria=None, **kw):
    searched.append(criteria)
    return []
DataSourceNoCloud.util.find_devs_with = find_devs_with
util.find_devs_with = find_devs_with
# cloud-init's find_source takes an exception from a datasource for "not
# found" and goes on to the next one (None); so does this check, and says
# which exception it was. The drop-in's seedfrom names the machine's seed
# directory, absent here, which read_seeded reports as a UrlError.
get_data_error = ""
try:
    found = ds.get_data()
except Exception as e:
    found = False
    get_data_error = type(e).__name__

init = stages.Init(ds_deps=[])
init._cfg = cfg
init._paths = paths
init._distro = ds.distro
init.datasource = ds
ds._network_config = {"version": 1, "config": [{"type": "physical", "name": "eth9",
    "mac_address": "52:54:00:00:00:09", "subnets": [{"type": "dhcp"}]}]}
netcfg, src = init._find_networking_config()
json.dump({
    "datasource_list": cfg.get("datasource_list"),
    "label_searched": searched,
    "found": found,
    "get_data_error": get_data_error,
    "network_config": netcfg,
    "network_source": getattr(src, "value", str(src)),
    # How cloud-init's VMware and OVF datasources read the key (22.4's
    # DataSourceOVF, 25.x's guestcust_util.is_vmware_cust_enabled).
    "vmware_customization_disabled": util.get_cfg_option_bool(cfg, "disable_vmware_customization", True),
}, sys.stdout)
`

type cloudInitResult struct {
	DatasourceList []string `json:"datasource_list"`
	LabelSearched  []string `json:"label_searched"`
	Found          bool     `json:"found"`
	GetDataError   string   `json:"get_data_error"`
	NetworkConfig  any      `json:"network_config"`
	NetworkSource  string   `json:"network_source"`
	VMwareCustOff  bool     `json:"vmware_customization_disabled"`
}

// scratchCloudEtc makes root/etc/cloud with Debian's cloud.cfg and the
// given cloud.cfg.d files.
func scratchCloudEtc(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	d := filepath.Join(root, "etc/cloud/cloud.cfg.d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile("/etc/cloud/cloud.cfg")
	if err != nil {
		t.Skipf("needs cloud-init's /etc/cloud/cloud.cfg: apt-get install cloud-init (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/cloud/cloud.cfg"), base, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readDropIn(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const ubuntuDpkgCfg = "# to update this file, run dpkg-reconfigure cloud-init\n" +
	"datasource_list: [ NoCloud, ConfigDrive, OpenStack, Ec2, SmartOS, VMware, None ]\n"

// TestIntegrationDropInCloudInit checks the drop-in with Debian's
// cloud-init 22.4.2: the merged configuration lists only NoCloud and None,
// NoCloud does not search for a cidata label, and system config disables
// the network ahead of the datasource's network-config (docs/cloud-init.md,
// "Configuration and ds-identify"). The same file under the name
// 90-seedkeeper.cfg loses to Ubuntu's 90_dpkg.cfg, which is why it is
// called 95-seedkeeper.cfg.
func TestIntegrationDropInCloudInit(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	py := needTool(t, "/usr/bin/python3", "python3")
	if _, err := os.Stat("/usr/lib/python3/dist-packages/cloudinit/stages.py"); err != nil {
		t.Skip("needs Debian's cloud-init: apt-get install cloud-init (make test-deps installs it as root)")
	}
	check := func(t *testing.T, files map[string]string) cloudInitResult {
		t.Helper()
		root := scratchCloudEtc(t, files)
		out, err := exec.Command(py, "-c", cloudInitCheck, root).Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("cloud-init check: %v\n%s", err, stderr)
		}
		var r cloudInitResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("cloud-init check printed %q: %v", out, err)
		}
		return r
	}
	ours := readDropIn(t)
	wantOurs := func(t *testing.T, r cloudInitResult) {
		t.Helper()
		if !slices.Equal(r.DatasourceList, []string{"NoCloud", "None"}) {
			t.Errorf("datasource_list = %v; want [NoCloud None]", r.DatasourceList)
		}
		if len(r.LabelSearched) != 0 {
			t.Errorf("NoCloud searched for labelled filesystems: %v", r.LabelSearched)
		}
		if r.Found {
			t.Errorf("NoCloud found a seed in an empty root")
		}
		if r.GetDataError != "" && r.GetDataError != "UrlError" {
			t.Errorf("NoCloud's get_data raised %s in an empty root; only the missing seed (UrlError) is expected", r.GetDataError)
		}
		if r.NetworkConfig != nil || r.NetworkSource != "system_cfg" {
			t.Errorf("network config %v from %q; want none (disabled by system_cfg)", r.NetworkConfig, r.NetworkSource)
		}
		// false, for VMware Tools to hand a spec to seedkeeper; cloud-init
		// reads it only in its VMware and OVF datasources, which the
		// datasource_list above leaves out.
		if r.VMwareCustOff {
			t.Errorf("disable_vmware_customization read as true: VMware Tools would run its own customization")
		}
	}

	t.Run("alone", func(t *testing.T) {
		t.Parallel()
		wantOurs(t, check(t, map[string]string{dropIn: ours}))
	})
	t.Run("after Ubuntu's 90_dpkg.cfg", func(t *testing.T) {
		t.Parallel()
		wantOurs(t, check(t, map[string]string{dropIn: ours, "90_dpkg.cfg": ubuntuDpkgCfg}))
	})
	t.Run("after curtin's network", func(t *testing.T) {
		t.Parallel()
		curtin := "network: {version: 1, config: [{type: physical, name: eth0, subnets: [{type: dhcp}]}]}\n"
		wantOurs(t, check(t, map[string]string{dropIn: ours, "50-curtin-networking.cfg": curtin}))
	})
	vmwareCustOff := "disable_vmware_customization: true\n"
	t.Run("after a file that turns VMware customization off", func(t *testing.T) {
		t.Parallel()
		wantOurs(t, check(t, map[string]string{dropIn: ours, "50-vmware-customization.cfg": vmwareCustOff}))
	})
	// The counterfactuals show the checks above can fail.
	t.Run("without the drop-in that file turns VMware customization off", func(t *testing.T) {
		t.Parallel()
		if r := check(t, map[string]string{"50-vmware-customization.cfg": vmwareCustOff}); !r.VMwareCustOff {
			t.Errorf("disable_vmware_customization read as false; want the file's true to count")
		}
	})
	t.Run("named 90-seedkeeper.cfg it loses to 90_dpkg.cfg", func(t *testing.T) {
		t.Parallel()
		r := check(t, map[string]string{"90-seedkeeper.cfg": ours, "90_dpkg.cfg": ubuntuDpkgCfg})
		if slices.Equal(r.DatasourceList, []string{"NoCloud", "None"}) {
			t.Errorf("datasource_list = %v; want 90_dpkg.cfg's list to win over 90-seedkeeper.cfg", r.DatasourceList)
		}
	})
	t.Run("without the drop-in", func(t *testing.T) {
		t.Parallel()
		r := check(t, map[string]string{})
		if len(r.LabelSearched) == 0 || r.NetworkSource != "ds" {
			t.Errorf("label search %v, network from %q; want cloud-init's defaults (label search, the datasource's network)", r.LabelSearched, r.NetworkSource)
		}
	})
}

// TestIntegrationDropInDSIdentify runs cloud-init's generator check,
// ds-identify, on a scratch root. It runs before any unit, so before
// seedkeeper has written the seed: with the drop-in it must take the
// single-datasource shortcut and enable cloud-init with [NoCloud, None];
// otherwise it probes, finds no seed yet, and disables cloud-init for the
// boot.
func TestIntegrationDropInDSIdentify(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	const dsIdentify = "/usr/lib/cloud-init/ds-identify"
	if _, err := os.Stat(dsIdentify); err != nil {
		t.Skip("needs cloud-init's ds-identify: apt-get install cloud-init (make test-deps installs it as root)")
	}
	ours := readDropIn(t)
	run := func(t *testing.T, files map[string]string, rootFiles ...string) (result, log string, code int) {
		t.Helper()
		root := scratchCloudEtc(t, files)
		for _, d := range []string{"proc/1", "run", "sys/class/dmi/id"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		extra := map[string]string{"proc/cmdline": "console=ttyS0\n", "proc/1/cmdline": "/sbin/init\x00"}
		for _, f := range rootFiles {
			extra[f] = ""
		}
		for name, content := range extra {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		logFile := filepath.Join(root, "ds-identify.log")
		cmd := exec.Command(dsIdentify)
		cmd.Env = append(os.Environ(), "PATH_ROOT="+root, "DI_LOG="+logFile)
		out, err := cmd.CombinedOutput()
		code = cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("ds-identify: %v\n%s", err, out)
		}
		res, _ := os.ReadFile(filepath.Join(root, "run/cloud-init/cloud.cfg"))
		lg, _ := os.ReadFile(logFile)
		return string(res), string(lg), code
	}
	for name, files := range map[string]map[string]string{
		"alone":                      {dropIn: ours},
		"after Ubuntu's 90_dpkg.cfg": {dropIn: ours, "90_dpkg.cfg": ubuntuDpkgCfg},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, lg, code := run(t, files)
			if code != 0 || strings.TrimSpace(res) != "datasource_list: [ NoCloud, None ]" {
				t.Errorf("ds-identify exit %d, wrote %q; want exit 0 and datasource_list: [ NoCloud, None ]\nlog:\n%s", code, res, lg)
			}
			if !strings.Contains(lg, "single entry in datasource_list") {
				t.Errorf("ds-identify did not take the single-datasource shortcut; log:\n%s", lg)
			}
		})
	}
	t.Run("named 90-seedkeeper.cfg it loses to 90_dpkg.cfg", func(t *testing.T) {
		t.Parallel()
		_, lg, _ := run(t, map[string]string{"90-seedkeeper.cfg": ours, "90_dpkg.cfg": ubuntuDpkgCfg})
		if strings.Contains(lg, "single entry in datasource_list") {
			t.Errorf("ds-identify took the shortcut although 90_dpkg.cfg sorts after 90-seedkeeper.cfg; log:\n%s", lg)
		}
	})

	// The evidence for the no-source decision (docs/design.md, "The boot
	// flow", step 3): leaving None out of the drop-in cannot stop a
	// DataSourceNone run, because ds-identify appends None to whatever it
	// enables; ds-identify's own probing runs before seedkeeper-boot, so it
	// finds seedkeeper's seed only on the boots after the first one that
	// wrote it, and without one it disables cloud-init (the default policy,
	// notfound=disabled). So the shortcut stays, and a sourceless boot is
	// held back after seedkeeper-boot decided (seedkeeper-no-source.conf).
	noNone := strings.Replace(ours, "datasource_list: [NoCloud, None]", "datasource_list: [NoCloud]", 1)
	t.Run("without None ds-identify adds it back", func(t *testing.T) {
		t.Parallel()
		res, lg, code := run(t, map[string]string{dropIn: noNone})
		if code != 0 || strings.TrimSpace(res) != "datasource_list: [ NoCloud, None ]" {
			t.Errorf("ds-identify exit %d, wrote %q; want None appended\nlog:\n%s", code, res, lg)
		}
	})
	probing := strings.Replace(ours, "datasource_list: [NoCloud, None]", "datasource_list: [NoCloud, VMware, None]", 1)
	t.Run("probing before the first seed disables cloud-init", func(t *testing.T) {
		t.Parallel()
		res, lg, code := run(t, map[string]string{dropIn: probing})
		if code != 1 || !strings.Contains(res, "notfound=disabled") {
			t.Errorf("ds-identify exit %d, wrote %q; want exit 1, not found\nlog:\n%s", code, res, lg)
		}
	})
	t.Run("probing finds a seed an earlier boot wrote", func(t *testing.T) {
		t.Parallel()
		res, lg, code := run(t, map[string]string{dropIn: probing},
			"var/lib/cloud/seed/nocloud/meta-data", "var/lib/cloud/seed/nocloud/user-data")
		if code != 0 || strings.TrimSpace(res) != "datasource_list: [ NoCloud, None ]" {
			t.Errorf("ds-identify exit %d, wrote %q; want NoCloud found, None appended\nlog:\n%s", code, res, lg)
		}
	})
}
