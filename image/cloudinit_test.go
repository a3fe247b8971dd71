package image

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// mergeScript prints what the real cloud-init makes of a cloud.cfg and its
// cloud.cfg.d: the merged values check and seal read, and the log files
// "cloud-init clean --logs" removes.
const mergeScript = `
import json, sys
sys.path.insert(0, "/usr/lib/python3/dist-packages")
from cloudinit import util
cfg = util.read_conf_with_confd(sys.argv[1])
def get(*keys):
    v = cfg
    for k in keys:
        if not isinstance(v, dict) or k not in v:
            return {"unset": True}
        v = v[k]
    return {"value": v}
print(json.dumps({
    "datasource_list": get("datasource_list"),
    "network.config": get("network", "config"),
    "datasource.NoCloud.fs_label": get("datasource", "NoCloud", "fs_label"),
    "ssh_deletekeys": get("ssh_deletekeys"),
    "logs": sorted(util.get_config_logfiles(dict({"def_log_file": "/var/log/cloud-init.log"}, **cfg))),
}))
`

// TestIntegrationCloudInitMergesAsCheckReads is the oracle test for the
// layering: Debian's cloud-init 22.4 merges the same files, and its value
// for every key check reads is the one lookup finds.
func TestIntegrationCloudInitMergesAsCheckReads(t *testing.T) {
	testenv.Integration(t)
	for _, p := range []string{"/usr/bin/python3", "/usr/lib/python3/dist-packages/cloudinit/util.py"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs Debian's cloud-init under /usr/bin/python3 (%s is missing): run `sudo make test` (scripts/test-deps.sh installs it) or `apt-get install cloud-init`", p)
		}
	}
	cases := map[string]map[string]string{
		"debian with the drop-in": {},
		"later datasource_list":   {"99-installer.cfg": "datasource_list: [Azure]\n"},
		"underscore after dash":   {"95_local.cfg": "datasource_list: [NoCloud]\nnetwork: {config: {version: 1}}\n"},
		"mapping merges":          {"99-net.cfg": "network:\n  renderers: [networkd]\ndatasource:\n  NoCloud:\n    seedfrom: http://x/\n"},
		"null replaces":           {"99-net.cfg": "network: null\ndatasource: {NoCloud: null}\n"},
		"label back":              {"99-label.cfg": "datasource: {NoCloud: {fs_label: cidata}}\nssh_deletekeys: false\n"},
		"broken yaml skipped":     {"99-broken.cfg": "datasource_list: [Azure\n  x: y: z\n"},
		"list file skipped":       {"99-list.cfg": "- a\n- b\n"},
		"not .cfg":                {"99-x.conf": "datasource_list: [Azure]\n"},
		"logs":                    {"06-logs.cfg": "def_log_file: /var/log/ci.log\noutput: {init: '> /var/log/ci-init.log', final: ['>> /var/log/ci-final.log', '&1']}\n"},
		"logs of all, a list":     {"06-logs.cfg": "output: {all: ['/var/log/o.log', '| tee -a /var/log/e.log']}\n"},
		"logs of all, a mapping":  {"06-logs.cfg": "output: {all: {output: '>/var/log/o.log', error: '&1'}}\n"},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			m := freshImage(t)
			for f, data := range files {
				m.write(CloudCfgD+"/"+f, data)
			}
			out, err := exec.Command("/usr/bin/python3", "-c", mergeScript, filepath.Join(m.dir, CloudCfg)).Output()
			if err != nil {
				t.Fatalf("cloud-init: %v", err)
			}
			var want map[string]any
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			cc, err := readCloudConfig(m.root())
			if err != nil {
				t.Fatal(err)
			}
			for key, keys := range map[string][]string{
				"datasource_list":             {"datasource_list"},
				"network.config":              {"network", "config"},
				"datasource.NoCloud.fs_label": {"datasource", "NoCloud", "fs_label"},
				"ssh_deletekeys":              {"ssh_deletekeys"},
			} {
				s := cc.lookup(keys...)
				got := map[string]any{"unset": true}
				if s.Set() && !(s.Value == nil && nullOnTheWay(cc, keys)) {
					got = map[string]any{"value": jsonValue(t, s.Value)}
				}
				if !reflect.DeepEqual(got, want[key]) {
					t.Errorf("%s: check reads %v (from %s), cloud-init %v", key, got, s.File, want[key])
				}
			}
			var wantLogs []string
			for _, l := range want["logs"].([]any) {
				wantLogs = append(wantLogs, l.(string))
			}
			if got := cc.logFiles(); !slices.Equal(got, wantLogs) {
				t.Errorf("log files %q, cloud-init %q", got, wantLogs)
			}
		})
	}
}

// nullOnTheWay reports whether the value in force for keys is a null that
// replaced a mapping on the way (cloud-init then has no such key at all).
func nullOnTheWay(cc cloudConfig, keys []string) bool {
	f := cc.lookup(keys...).File
	for _, c := range cc {
		if c.Path == f {
			_, ok := dig(c.Doc, keys)
			var cur any = c.Doc
			for _, k := range keys {
				m, isMap := cur.(map[string]any)
				if !isMap {
					return ok
				}
				cur = m[k]
			}
			return false
		}
	}
	return false
}

func jsonValue(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}
