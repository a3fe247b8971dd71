package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// fetchSchema are the keys every "seedkeeper fetch --json" object has.
var fetchSchema = []string{"source", "transport", "items", "instance_id", "instance_id_defaulted", "hostname",
	"machine_id", "public_keys", "network_config", "network_drivers", "user_data", "vendor_data"}

func decodeFetch(t *testing.T, r procResult) map[string]any {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("fetch: %v", r)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("fetch --json output is not JSON: %v\n%s", err, r.stdout)
	}
	for _, k := range fetchSchema {
		if _, ok := m[k]; !ok {
			t.Errorf("fetch --json has no %q", k)
		}
	}
	if strings.Contains(r.stdout, `\u003c`) {
		t.Errorf("fetch --json escapes '<': %s", r.stdout)
	}
	return m
}

// redacted is how fetch shows a secret.
func redacted(data string) string {
	sum := sha256.Sum256([]byte(data))
	return fmt.Sprintf("<redacted: %d bytes, sha256 %x>", len(data), sum[:6])
}

// The network-config of testdata/nocloud/seed (v2) as fetch normalizes it:
// a cloud-init v1 document.
var fixtureNetworkV1 = map[string]any{
	"version": float64(1),
	"config": []any{map[string]any{
		"type": "physical", "name": "eth0", "mac_address": "52:54:00:12:34:56",
		"subnets": []any{map[string]any{"type": "static", "address": "192.0.2.10/24", "gateway": "192.0.2.1"}},
	}},
}

func TestFetchSeedDirAndImages(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	dir := t.TempDir()
	seedFile := func(name string) string { return readFile(t, filepath.Join(fixtureSeed, name)) }
	for _, tc := range []struct {
		name, fixture, transport string
		network, vendor          bool
	}{
		{name: "directory", transport: "dir:", network: true, vendor: true},
		{name: "iso9660 (cloud-localds)", fixture: "cloud-localds.iso", transport: "iso9660:", network: true},
		{name: "iso9660 without Rock Ridge or Joliet", fixture: "plain.iso", transport: "iso9660:", network: true, vendor: true},
		{name: "fat12 (cloud-localds -f vfat)", fixture: "cloud-localds.vfat", transport: "vfat:"},
		{name: "fat32", fixture: "fat32.img", transport: "vfat:", network: true, vendor: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed, _ := filepath.Abs(fixtureSeed)
			if tc.fixture != "" {
				seed = filepath.Join(dir, tc.fixture)
				gunzipTo(t, tc.fixture, seed)
			}
			m := decodeFetch(t, runInProcess("fetch", "--root", root, "--seed", seed, "--json"))
			want := map[string]any{
				"source":      "nocloud",
				"instance_id": "iid-fixture-01",
				"hostname":    "fixture-host",
				"machine_id":  strings.ToLower(kvmUUID),
				"public_keys": []any{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFixtureKeyOne fixture@one"},
				"user_data":   redacted(seedFile("user-data")),
			}
			if tc.network {
				want["network_config"] = fixtureNetworkV1
			} else {
				want["network_config"] = nil
			}
			if tc.vendor {
				want["vendor_data"] = redacted(seedFile("vendor-data"))
			} else {
				want["vendor_data"] = nil
			}
			for k, v := range want {
				if !reflect.DeepEqual(m[k], v) {
					t.Errorf("%s = %#v, want %#v", k, m[k], v)
				}
			}
			if tr, _ := m["transport"].(string); !strings.HasPrefix(tr, tc.transport) || !strings.HasSuffix(tr, seed) {
				t.Errorf("transport %q, want %s%s", tr, tc.transport, seed)
			}

			m = decodeFetch(t, runInProcess("fetch", "--root", root, "--seed", seed, "--json", "--show-secrets"))
			if m["user_data"] != seedFile("user-data") {
				t.Errorf("--show-secrets user_data = %#v", m["user_data"])
			}
		})
	}
}

func TestFetchText(t *testing.T) {
	seed, _ := filepath.Abs(fixtureSeed)
	r := runInProcess("fetch", "--root", t.TempDir(), "--seed", seed)
	ud := readFile(t, filepath.Join(fixtureSeed, "user-data"))
	for _, want := range []string{
		"source:                nocloud\n",
		"instance-id:           iid-fixture-01\n",
		"hostname:              fixture-host\n",
		"user-data:             " + redacted(ud) + "\n",
		"network:               (cloud-init v1)\n",
		`mac_address: "52:54:00:12:34:56"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fetch output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != exitOK || strings.Contains(r.stdout, "ssh_pwauth") {
		t.Errorf("fetch: %v", r)
	}
}

// With --show-secrets a value is printed as the block it is, even when its
// text looks like a redaction: whether values were redacted is the
// redactor's answer, not a guess from the text.
func TestFetchTextShowsSecretsThatLookRedacted(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed")
	copyDir(t, fixtureSeed, seed)
	const ud = "<redacted: 5 bytes, sha256 000000000000>\nruncmd: [true]\n"
	writeFile(t, filepath.Join(seed, "user-data"), ud, 0o644)
	r := runInProcess("fetch", "--root", t.TempDir(), "--seed", seed, "--show-secrets")
	want := fmt.Sprintf("user-data:             %d bytes:\n%s", len(ud), ud)
	if r.code != exitOK || !strings.Contains(r.stdout, want) {
		t.Errorf("fetch --show-secrets: exit %d, want %q in:\n%s", r.code, want, r.stdout)
	}
}

func TestFetchExitCodes(t *testing.T) {
	empty := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	seed, _ := filepath.Abs(fixtureSeed)
	junk := filepath.Join(t.TempDir(), "junk.img")
	writeFile(t, junk, strings.Repeat("not a filesystem\n", 4096), 0o644)
	badNet := t.TempDir()
	copyDir(t, fixtureSeed, badNet)
	writeFile(t, filepath.Join(badNet, "network-config"), "version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets:\n      - type: static\n        address: 10.0.0.300/24\n", 0o644)

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"seed directory", []string{"--seed", seed}, exitOK, ""},
		{"no source", []string{"--root", empty}, exitNoSource, "seedkeeper fetch: no metadata source found"},
		{"vmware asked for, not VMware", []string{"--root", empty, "--source", "vmware"}, exitNoSource, `DMI product_name "Standard PC (i440FX + PIIX, 1996)" is not VMware`},
		{"seed path missing", []string{"--seed", filepath.Join(empty, "nope")}, exitError, "nope: no such file or directory"},
		{"seed image corrupt", []string{"--seed", junk}, exitError, junk},
		{"bad network-config", []string{"--seed", badNet}, exitOK, "network-config: config[0].subnets[0].address: not an IP address; the subnet left out"},
		{"unknown flag", []string{"--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{"unknown source", []string{"--source", "azure"}, exitUsage, `--source "azure": want one of`},
		{"seed with another source", []string{"--seed", seed, "--source", "vmware"}, exitUsage, "cannot be combined with --source vmware"},
		{"extra argument", []string{"--seed", seed, "now"}, exitUsage, `unexpected argument "now"`},
	} {
		r := runBinary(t, nil, append([]string{"fetch"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%s: want exit %d and %q, got %v", tc.name, tc.code, tc.msg, r)
		}
	}
}

// vmwareStub installs the stub vmware-rpctool and vmtoolsd of
// testdata/vmware in a bin directory and returns the environment that
// makes seedkeeper run them, serving the guestinfo files in dir.
func vmwareStub(t *testing.T) (env []string, dir string) {
	t.Helper()
	needTool(t, "sh")
	base := t.TempDir()
	bin, dir := filepath.Join(base, "bin"), filepath.Join(base, "guestinfo")
	for _, name := range []string{"vmware-rpctool", "vmtoolsd", "guestinfo-stub.sh"} {
		writeFile(t, filepath.Join(bin, name), readFile(t, filepath.Join("../../testdata/vmware", name)), 0o755)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + bin + ":/usr/bin:/bin", "GUESTINFO_DIR=" + dir}, dir
}

func gzipBase64(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestFetchVMware(t *testing.T) {
	env, gi := vmwareStub(t)
	root := scratchRoot(t, "VMware7,1", "VMware, Inc.", "4213ABCD-1234-5678-9ABC-DEF012345678")
	set := func(key, val string) { writeFile(t, filepath.Join(gi, "guestinfo."+key), val, 0o644) }
	userData := "#cloud-config\nhostname: cloud-vm\n"
	set("metadata", gzipBase64(t, readFile(t, "../../testdata/vmware/metadata.json")))
	set("metadata.encoding", "gzip+base64")
	set("userdata", base64.StdEncoding.EncodeToString([]byte(userData)))
	set("userdata.encoding", "b64")

	m := decodeFetch(t, runBinary(t, env, "fetch", "--root", root, "--source", "vmware", "--json"))
	want := map[string]any{
		"source":          "vmware",
		"transport":       "vmware-rpctool",
		"instance_id":     "cloud-vm-0042",
		"hostname":        "cloud-vm",
		"machine_id":      "4213abcd-1234-5678-9abc-def012345678",
		"public_keys":     []any{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAbcdefghijklmnopqrstuvwxyz0123456789ABCD one@example", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCxyz two@example"},
		"network_drivers": []any{"vmxnet3", "e1000e"},
		"network_config": map[string]any{"version": float64(1), "config": []any{map[string]any{
			"type": "physical", "name": "ens192", "mac_address": "00:50:56:aa:bb:01",
			"subnets": []any{map[string]any{"type": "dhcp4"}},
		}}},
		"user_data":   redacted(userData),
		"vendor_data": nil,
	}
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}

	// Detected without --source; secrets shown when asked.
	m = decodeFetch(t, runBinary(t, env, "fetch", "--root", root, "--json", "--show-secrets"))
	if m["source"] != "vmware" || m["user_data"] != userData {
		t.Errorf("detected fetch: source %v user_data %#v", m["source"], m["user_data"])
	}

	// vmware-rpctool refused (secure RPC): vmtoolsd answers.
	m = decodeFetch(t, runBinary(t, append(env, "GUESTINFO_FAIL_RPCTOOL=Permission denied"), "fetch", "--root", root, "--source", "vmware", "--json"))
	if m["transport"] != "vmtoolsd" || m["instance_id"] != "cloud-vm-0042" {
		t.Errorf("after Permission denied: transport %v instance_id %v", m["transport"], m["instance_id"])
	}

	set("userdata", "!!! not base64")
	r := runBinary(t, env, "fetch", "--root", root, "--source", "vmware")
	if r.code != exitError || !strings.Contains(r.stderr, "seedkeeper fetch: vmware: guestinfo.userdata: decoding b64: bad base64") {
		t.Errorf("bad base64: %v", r)
	}
}

// A VMware root with empty guestinfo and a customization spec where VMware
// Tools leaves it: fetch prints what the spec says, the password only with
// --show-secrets.
func TestFetchVMwareIMC(t *testing.T) {
	env, _ := vmwareStub(t)
	root := scratchRoot(t, "VMware7,1", "VMware, Inc.", "4213ABCD-1234-5678-9ABC-DEF012345678")
	writeFile(t, filepath.Join(root, "var/run/vmware-imc/cust.cfg"), readFile(t, "../../testdata/vmware/imc/static-primary.cfg")+
		"[PASSWORD]\n-PASS = "+base64.StdEncoding.EncodeToString([]byte("Imc-Pa55"))+"\n", 0o600)

	r := runBinary(t, env, "fetch", "--root", root, "--source", "vmware", "--json")
	if strings.Contains(r.stdout+r.stderr, "Imc-Pa55") {
		t.Errorf("the password is shown without --show-secrets:\n%s", r.stdout)
	}
	m := decodeFetch(t, r)
	for k, v := range map[string]any{
		"source": "vmware", "transport": "imc", "instance_id": "app01-clone-7", "hostname": "app01",
		"items":      []any{"/var/run/vmware-imc/cust.cfg"},
		"vmware_imc": map[string]any{"kind": "traditional", "password": true, "nics": float64(2)},
	} {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	nc, _ := m["network_config"].(map[string]any)
	b, _ := json.Marshal(nc)
	for _, want := range []string{`"mac_address":"00:50:56:9a:30:02"`, `"address":"10.0.2.10/24"`, `"gateway":"10.0.2.1"`, `"address":"2001:db8:31::10/64"`, `"dns_nameservers":["10.0.2.53"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("network_config has no %s:\n%s", want, b)
		}
	}
	if s, _ := m["vendor_data"].(string); !strings.HasPrefix(s, "<redacted") {
		t.Errorf("vendor_data = %#v, want it redacted", m["vendor_data"])
	}
	m = decodeFetch(t, runBinary(t, env, "fetch", "--root", root, "--source", "vmware", "--json", "--show-secrets"))
	if s, _ := m["vendor_data"].(string); !strings.Contains(s, "password: Imc-Pa55") || !strings.HasPrefix(s, "#cloud-config\n") {
		t.Errorf("vendor_data with --show-secrets = %#v", m["vendor_data"])
	}
	// Detected without --source, too.
	if m = decodeFetch(t, runBinary(t, env, "fetch", "--root", root, "--json")); m["transport"] != "imc" {
		t.Errorf("detected: transport %v", m["transport"])
	}
}

func TestFetchSmartOS(t *testing.T) {
	t.Parallel()
	h, transport := smartosHost(t, smartosStore())
	env := []string{"SEEDKEEPER_MDATA=" + transport}
	root := scratchRoot(t, "SmartDC HVM", "Joyent", "")
	m := decodeFetch(t, runBinary(t, env, "fetch", "--root", root, "--json"))
	userScript, _ := mdatatest.Default().Get("user-script")
	wantOS := map[string]any{
		"user_script":       redacted(string(userScript)),
		"operator_script":   redacted("echo operator ran\n"),
		"legacy_user_data":  redacted("legacy user-data\n"),
		"availability_zone": "us-east-1",
		"dns_domain":        "example.com",
	}
	if m["source"] != "smartos" || m["instance_id"] != mdatatest.SampleUUID || m["machine_id"] != mdatatest.SampleUUID ||
		m["transport"] != transport || !reflect.DeepEqual(m["smartos"], wantOS) {
		t.Errorf("fetch: %v", m)
	}
	m = decodeFetch(t, runBinary(t, env, "fetch", "--root", root, "--json", "--show-secrets"))
	if os, _ := m["smartos"].(map[string]any); os == nil || os["operator_script"] != "echo operator ran\n" {
		t.Errorf("--show-secrets smartos = %#v", m["smartos"])
	}

	// A host that does not answer: waited for until --timeout, exit 10.
	h.Down()
	r := runBinary(t, env, "fetch", "--root", root, "--source", "smartos", "--timeout", "1s")
	if r.code != exitTryAgain || !strings.Contains(r.stderr, "seedkeeper fetch: smartos: reading sdc:uuid") {
		t.Errorf("fetch from a host that is down: %v", r)
	}
}

// The binary, end to end on a VMware root with the stub tools: a boot that
// only plans (--root) publishes nothing to the VMX, and status says what
// wait-on-network asked and why nothing was waited for or published.
func TestBootStatusVMware(t *testing.T) {
	env, gi := vmwareStub(t)
	log := filepath.Join(gi, "..", "calls.log")
	env = append(env, "GUESTINFO_LOG="+log)
	root := scratchRoot(t, "VMware7,1", "VMware, Inc.", "4213ABCD-1234-5678-9ABC-DEF012345678")
	writeFile(t, filepath.Join(gi, "guestinfo.metadata"), "instance-id: i-status\nwait-on-network: {ipv4: true, ipv6: sure}\n", 0o644)
	if r := runBinary(t, env, "boot", "--root", root); r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	r := runBinary(t, env, "status", "--root", root)
	for _, want := range []string{
		"\nDropped:     bad wait-on-network: ipv6: a string of 4 bytes that is not a boolean word (want true, false, yes, no, on, off, 1 or 0); waiting for ipv4\n",
		"\nWaited:      wait-on-network asks for ipv4: not waited for: the network was not applied on this machine (the metadata has no network configuration; leaving the network alone)\n",
		"\nGuestinfo:   guestinfo.local-ipv4 and guestinfo.local-ipv6 not published: the network was not applied on this machine",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "info-set") {
		t.Errorf("a boot under --root wrote to the VMX:\n%s", b)
	}
}
