package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func validateFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runValidateArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(append([]string{"seedkeeper", "validate"}, args...), nil, &o, &e)
	return code, o.String(), e.String()
}

// Every error of every kind, each at FILE:LINE:COL, none quoting a value;
// exit 1 on any, 0 when every file is clean.
func TestValidateSaysEveryErrorWhereItIs(t *testing.T) {
	dir := validateFiles(t, map[string]string{
		"net.yaml": `network:
  version: 2
  ethernets:
    eth0:
      dhcp4: SECRET-maybe
      dhcp5: true
      routes:
        - to: default
          via: SECRET-gw
`,
		"v1.yaml": `version: 1
config:
  - type: physical
    name: eth0
    mac_address: "52:54:00:12:34:56"
    subnets:
      - type: static
        address: 10.0.0.5/24
        gateway: SECRET-gw
  - type: physical
    name: eth1
    mac_address: "SECRET-mac"
`,
		"nics.json": `[{"mac": "90:b8:d0:ae:d1:ec", "interface": "net0", "ips": ["SECRET-ip"]}]`,
		"seed/meta-data": `instance-id: "SECRET-id\x01"
local-hostname: web1
public-keys: [5]
`,
		"seed/user-data": `#cloud-config
password: [SECRET-pw]
users:
  - name: "SECRET user"
`,
		"seedkeeper/config.yaml": `hotplug:
  driver: [SECRET-e1000]
network: {owner: SECRET-me}
`,
		"clean.yaml": "version: 2\nethernets:\n  eth0: {dhcp4: true}\n",
	})
	code, out, _ := runValidateArgs(
		filepath.Join(dir, "net.yaml"), filepath.Join(dir, "v1.yaml"), filepath.Join(dir, "nics.json"),
		filepath.Join(dir, "seed/meta-data"), filepath.Join(dir, "seed/user-data"),
		filepath.Join(dir, "seedkeeper/config.yaml"), filepath.Join(dir, "clean.yaml"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	out = strings.ReplaceAll(out, dir+"/", "")
	for _, want := range []string{
		"net.yaml:5:14: ethernets.eth0.dhcp4: not a boolean; the setting left out\n",
		"net.yaml:6:14: ethernets.eth0.dhcp5: not a key of the v2 format seedkeeper knows; the key left out\n",
		"net.yaml:9:16: ethernets.eth0.routes[0].via: not an IP address; the route left out\n",
		"v1.yaml:12:18: config[1].mac_address: not a MAC address; the entry left out\n",
		"v1.yaml:9:18: config[0].subnets[0].gateway: not an IP address",
		"nics.json:1:60: sdc:nics[0].ips[0]:",
		"seed/meta-data:1:14: meta-data instance-id dropped:",
		"seed/meta-data:3:15: meta-data public-keys[0] dropped: want a key string, got a number\n",
		"seed/user-data:2:11: user-data password (line 2) dropped: want a string, got a list\n",
		"seed/user-data:4:11: user-data users[0].name (line 4) dropped:",
		`seedkeeper/config.yaml:2:3: hotplug: unknown key "driver" (the keys in hotplug are drivers)` + "\n",
		"seedkeeper/config.yaml:3:18: network.owner: not one of seedkeeper, cloud-init\n",
		"clean.yaml: valid network\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("an error quotes a value:\n%s", out)
	}

	if code, out, _ := runValidateArgs(filepath.Join(dir, "clean.yaml")); code != 0 || out == "" {
		t.Errorf("a clean file: exit %d %q, want 0", code, out)
	}
}

// The kind is told from the content, or forced with --kind; a file whose
// kind cannot be told, or that cannot be read, is exit 2.
func TestValidateKind(t *testing.T) {
	dir := validateFiles(t, map[string]string{
		"a": "network:\n  version: 1\n  config: []\n",
		"b": "#cloud-config\n",
		"c": "sdc:nics: []\n",
		"d": "instance-id: i-1\n",
		"e": "boot: {wait: 90s}\nbogus: 1\n",
		"f": "hello: world\n",
		"g": "version: 2\n",
		"h": "network:\n  renderer: networkd\n  vrfs: {}\n",
		"i": "#cloud-config-archive\n- type: text/x-shellscript\n",
		"j": "- {mac: \"90:b8:d0:ae:d1:ec\", interface: net0}\n",
		"k": "network: {owner: cloud-init}\n",
	})
	for name, want := range map[string]string{"a": "network", "b": "user-data", "c": "smartos", "d": "meta-data", "e": "config", "f": "", "g": "network", "h": "network", "i": "user-data", "j": "smartos", "k": "config"} {
		code, out, _ := runValidateArgs("--json", filepath.Join(dir, name))
		var res struct {
			SchemaVersion int `json:"schema_version"`
			Files         []struct {
				Kind   string
				Valid  bool
				Errors []struct {
					Line, Column int
					Message      string
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Files) != 1 || res.SchemaVersion != 1 {
			t.Fatalf("%s: --json = %q, %v", name, out, err)
		}
		if got := res.Files[0].Kind; got != want {
			t.Errorf("%s: kind %q, want %q", name, got, want)
		}
		if want == "" && (code != 2 || !strings.Contains(res.Files[0].Errors[0].Message, "--kind")) {
			t.Errorf("%s: exit %d %+v, want 2 and a hint at --kind", name, code, res.Files[0])
		}
	}
	// Forced: the same mapping read as meta-data is valid but as
	// network it has no version. Flags may follow the files.
	if code, out, _ := runValidateArgs(filepath.Join(dir, "f"), "--kind", "meta-data"); code != 1 || !strings.Contains(out, "no instance-id") {
		t.Errorf("--kind meta-data: exit %d %q", code, out)
	}
	if code, out, _ := runValidateArgs("--kind", "network", filepath.Join(dir, "f")); code != 1 || !strings.Contains(out, "f:1:1: version: missing") {
		t.Errorf("--kind network: exit %d %q", code, out)
	}
	if code, out, _ := runValidateArgs(filepath.Join(dir, "missing")); code != 2 || !strings.Contains(out, "missing:1:1:") {
		t.Errorf("a missing file: exit %d %q, want 2", code, out)
	}
	for _, args := range [][]string{{}, {"--kind", "nope", "x"}, {"--bogus", "x"}} {
		if code, _, _ := runValidateArgs(args...); code != exitUsage {
			t.Errorf("validate %q: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, out, _ := runValidateArgs("--help"); code != 0 || !strings.Contains(out, "Usage: seedkeeper validate") {
		t.Errorf("--help: exit %d %q", code, out)
	}
}
