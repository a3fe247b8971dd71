package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// dropInKeys are the keys 95-seedkeeper.cfg sets, as paths through
// cloud-init's merged configuration. cloud-init merges cloud.cfg and
// cloud.cfg.d/*.cfg in name order, dictionaries key by key, a later
// file's value of a key replacing an earlier one's. These five are the
// hand-over of the datasource and the network to seedkeeper, the
// package's purpose: seedkeeper's alone, set nowhere else by it; every
// other key of the image, in the same dictionaries too, stays as the
// image set it, and a file that sorts after the drop-in (an admin's
// 99-*.cfg) still wins. docs/design.md lists them.
var dropInKeys = []string{
	"datasource_list",
	"datasource.NoCloud.fs_label",
	"datasource.NoCloud.seedfrom",
	"disable_vmware_customization",
	"network.config",
}

// leafKeys lists the paths of the scalar and list values of a YAML map.
func leafKeys(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			out = append(out, leafKeys(p, sub)...)
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// The drop-in sets exactly the keys of dropInKeys, and docs/design.md's
// table of what seedkeeper writes into files other programs merge names
// each of them.
func TestDropInKeysListed(t *testing.T) {
	t.Parallel()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(readFileT(t, dropIn)), &m); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(dropInKeys))
	if got := leafKeys("", m); !slices.Equal(got, want) {
		t.Errorf("%s sets %q; the table of its keys says %q", dropIn, got, want)
	}
	design := readFileT(t, "../docs/design.md")
	for _, k := range dropInKeys {
		if !strings.Contains(design, "`"+k+"`") {
			t.Errorf("docs/design.md does not list the drop-in's key %s", k)
		}
	}
}

// cloudInitMerge merges cloud.cfg and cloud.cfg.d under root with
// cloud-init's own code (read_conf_with_confd, what every stage reads),
// and prints the result as JSON.
const cloudInitMerge = `
import json, sys
from cloudinit import util
cfg = util.read_conf_with_confd(sys.argv[1])
print(json.dumps(cfg, sort_keys=True))
`

// TestIntegrationDropInKeepsImageSettings merges, with cloud-init 22.4.2's
// own code, the drop-in into an image whose cloud.cfg and cloud.cfg.d set
// every key beside the drop-in's and the drop-in's own: what the image
// set that the drop-in does not name is kept, key by key, inside the
// dictionaries the drop-in writes into as well; the drop-in's keys are
// seedkeeper's; and an image's file that sorts after the drop-in still
// wins.
func TestIntegrationDropInKeepsImageSettings(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	py := needTool(t, "/usr/bin/python3", "python3")
	if _, err := os.Stat("/usr/lib/python3/dist-packages/cloudinit/util.py"); err != nil {
		t.Skip("needs Debian's cloud-init: apt-get install cloud-init (make test-deps installs it as root)")
	}
	root := t.TempDir()
	writeFileT(t, filepath.Join(root, "cloud.cfg"), `datasource_list: [VMware, OVF, None]
disable_vmware_customization: true
datasource:
  NoCloud:
    fs_label: cidata
    meta_data: {local-hostname: image}
  VMware:
    allow_raw_data: true
network:
  renderers: [netplan, eni]
users: [default]
`)
	writeFileT(t, filepath.Join(root, "cloud.cfg.d", "50-image.cfg"), `datasource:
  NoCloud:
    seedfrom: http://image.invalid/
    dsmode: local
network:
  version: 2
  ethernets: {mgmt: {match: {driver: e1000}, dhcp4: true}}
`)
	writeFileT(t, filepath.Join(root, "cloud.cfg.d", dropIn), readFileT(t, dropIn))
	merge := func() map[string]any {
		out, err := exec.Command(py, "-c", cloudInitMerge, filepath.Join(root, "cloud.cfg")).Output()
		if err != nil {
			t.Fatalf("cloud-init's merge: %v\n%s", err, out)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return m
	}
	get := func(m map[string]any, path string) any {
		var v any = m
		for _, k := range strings.Split(path, ".") {
			d, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = d[k]
		}
		return v
	}
	m := merge()
	kept := map[string]string{
		"datasource.NoCloud.meta_data.local-hostname": "image",
		"datasource.NoCloud.dsmode":                   "local",
		"datasource.VMware.allow_raw_data":            "true",
		"network.renderers":                           "[netplan eni]",
		"network.version":                             "2",
		"network.ethernets.mgmt.dhcp4":                "true",
		"users":                                       "[default]",
	}
	for k, want := range kept {
		if got := strings.TrimSpace(strings.ReplaceAll(fmtAny(get(m, k)), "\n", " ")); got != want {
			t.Errorf("%s = %s after the drop-in; want the image's %s", k, got, want)
		}
	}
	ours := map[string]string{
		"datasource_list":              "[NoCloud None]",
		"datasource.NoCloud.fs_label":  "<nil>",
		"datasource.NoCloud.seedfrom":  "file:///var/lib/cloud/seed/nocloud/",
		"disable_vmware_customization": "false",
		"network.config":               "disabled",
	}
	for _, k := range dropInKeys {
		if got := fmtAny(get(m, k)); got != ours[k] {
			t.Errorf("%s = %s; want the drop-in's %s", k, got, ours[k])
		}
	}
	// A later file of the image's or an admin's still wins.
	writeFileT(t, filepath.Join(root, "cloud.cfg.d", "99-admin.cfg"), "datasource_list: [ConfigDrive, None]\n")
	if got := fmtAny(get(merge(), "datasource_list")); got != "[ConfigDrive None]" {
		t.Errorf("a 99-*.cfg after the drop-in: datasource_list = %s", got)
	}
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case []any:
		var s []string
		for _, e := range x {
			s = append(s, fmtAny(e))
		}
		return "[" + strings.Join(s, " ") + "]"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return "<nil>"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestIntegrationNoSourceDropInKeepsUnitConditions evaluates, as systemd
// does when it starts them (systemd-analyze condition --unit), Debian's
// cloud-init units with an image's own drop-in that adds a condition and
// seedkeeper's no-source drop-in beside it: a condition only adds to the
// unit's (only an empty assignment would reset them, and the drop-in has
// none), so the image's still skips the unit when it fails, whether its
// drop-in sorts before or after seedkeeper's.
func TestIntegrationNoSourceDropInKeepsUnitConditions(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	sa := needTool(t, "systemd-analyze", "systemd")
	if _, err := os.Stat("/lib/systemd/system/cloud-init-local.service"); err != nil {
		t.Skip("needs Debian's cloud-init units: apt-get install cloud-init (make test-deps installs it as root)")
	}
	u := parseUnit(t, noSourceDropIn)
	for sec, keys := range u {
		for k, vs := range keys {
			for _, v := range vs {
				if v == "" {
					t.Errorf("[%s] %s= is empty: it would reset the image's settings", sec, k)
				}
			}
		}
	}
	scratch := t.TempDir()
	off := filepath.Join(scratch, "image-off")
	for _, name := range []string{"00-image.conf", "zz-image.conf"} {
		d := t.TempDir()
		for _, unit := range debianUnits {
			writeFileT(t, filepath.Join(d, unit), readFileT(t, filepath.Join("/lib/systemd/system", unit)))
			writeFileT(t, filepath.Join(d, unit+".d", noSourceDropIn), readFileT(t, noSourceDropIn))
			writeFileT(t, filepath.Join(d, unit+".d", name), "[Unit]\nConditionPathExists=!"+off+"\n")
		}
		runs := func(unit string) (bool, string) {
			cmd := exec.Command(sa, "condition", "--unit="+unit)
			cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+d+":")
			out, err := cmd.CombinedOutput()
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatalf("%s: %v", sa, err)
			}
			return err == nil, string(out)
		}
		os.Remove(off)
		for _, unit := range debianUnits {
			if ok, out := runs(unit); !ok {
				t.Errorf("%s with %s: does not run with every condition met:\n%s", unit, name, out)
			}
		}
		writeFileT(t, off, "")
		for _, unit := range debianUnits {
			if ok, out := runs(unit); ok || !strings.Contains(out, "ConditionPathExists=!"+off+" failed") {
				t.Errorf("%s with %s: the image's condition no longer holds it:\n%s", unit, name, out)
			}
		}
	}
}
