package seed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/alloctest"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

func testSeed() Seed {
	return Seed{
		InstanceID: "i-0123abcd",
		Hostname:   "web1",
		PublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx web@admin", "  "},
		UserData:   []byte("#cloud-config\npassword: hunter2\n"),
	}
}

func read(t *testing.T, root sysroot.Root, p string) string {
	t.Helper()
	b, err := os.ReadFile(root.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mode(t *testing.T, root sysroot.Root, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(root.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func mustWrite(t *testing.T, root sysroot.Root, s Seed) Result {
	t.Helper()
	res, err := Write(string(root), s)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return res
}

func sd(name string) string { return filepath.Join(Dir, name) }

func TestWriteFilesAndModes(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	res := mustWrite(t, root, testSeed())
	want := []string{sd(MetaDataFile), sd(UserDataFile), sd(VendorDataFile)}
	if !slices.Equal(res.Written, want) || len(res.Removed) != 0 || res.Imported != "" || len(res.Warnings) != 0 {
		t.Fatalf("result = %+v", res)
	}
	var md map[string]any
	if err := yaml.Unmarshal([]byte(read(t, root, sd(MetaDataFile))), &md); err != nil {
		t.Fatal(err)
	}
	if md["instance-id"] != "i-0123abcd" || md["local-hostname"] != "web1" ||
		len(md["public-keys"].([]any)) != 1 || len(md) != 3 {
		t.Errorf("meta-data = %v", md)
	}
	if got := read(t, root, sd(UserDataFile)); got != "#cloud-config\npassword: hunter2\n" {
		t.Errorf("user-data = %q", got)
	}
	if got := read(t, root, sd(VendorDataFile)); got != "" {
		t.Errorf("vendor-data = %q", got)
	}
	for p, m := range map[string]fs.FileMode{
		Dir:                fs.ModeDir | 0o700,
		sd(MetaDataFile):   0o644,
		sd(UserDataFile):   0o600,
		sd(VendorDataFile): 0o600,
		sd(MarkerName):     0o600,
	} {
		if got := mode(t, root, p); got != m {
			t.Errorf("%s: mode %v, want %v", p, got, m)
		}
	}
	if _, err := os.Lstat(root.Path(sd(NetworkConfigFile))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("network-config written although cloud-init does not own the network: %v", err)
	}
	mk, owned, err := readMarker(root)
	if err != nil || !owned || len(mk.Files) != 3 || len(mk.Pending) != 0 {
		t.Fatalf("marker = %+v %v %v", mk, owned, err)
	}
	if mk.Files[sd(UserDataFile)] != sum([]byte("#cloud-config\npassword: hunter2\n")) {
		t.Errorf("marker hash of user-data = %s", mk.Files[sd(UserDataFile)])
	}

	// Same seed again: nothing written, not even the marker.
	fi1, _ := os.Stat(root.Path(sd(MarkerName)))
	res = mustWrite(t, root, testSeed())
	if res.Changed() || len(res.Warnings) != 0 {
		t.Errorf("second write: %+v", res)
	}
	fi2, _ := os.Stat(root.Path(sd(MarkerName)))
	if !os.SameFile(fi1, fi2) {
		t.Error("an unchanged seed rewrote the marker")
	}

	// A change writes just that file.
	s := testSeed()
	s.InstanceID = "i-new"
	res = mustWrite(t, root, s)
	if !slices.Equal(res.Written, []string{sd(MetaDataFile)}) {
		t.Errorf("changed instance ID wrote %v", res.Written)
	}
}

func TestNetworkConfigUnwrappedAndRemoved(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	wrapped, err := os.ReadFile("../testdata/seed/network-v1-wrapped.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := testSeed()
	s.NetworkConfig = wrapped
	res := mustWrite(t, root, s)
	if !slices.Contains(res.Written, sd(NetworkConfigFile)) {
		t.Fatalf("network-config not written: %+v", res)
	}
	got := read(t, root, sd(NetworkConfigFile))
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatal(err)
	}
	if _, wrapped := doc["network"]; wrapped || doc["version"] != 1 || len(doc["config"].([]any)) != 2 {
		t.Errorf("network-config = %s", got)
	}
	if m := mode(t, root, sd(NetworkConfigFile)); m != 0o600 {
		t.Errorf("network-config mode %v", m)
	}

	// Unwrapped input is kept byte for byte.
	v1, _ := os.ReadFile("../testdata/seed/network-v1.yaml")
	s.NetworkConfig = v1
	mustWrite(t, root, s)
	if got := read(t, root, sd(NetworkConfigFile)); got != string(v1) {
		t.Errorf("unwrapped config was changed:\n%s", got)
	}

	// No longer wanted: removed, without a warning.
	s.NetworkConfig = nil
	res = mustWrite(t, root, s)
	if !slices.Equal(res.Removed, []string{sd(NetworkConfigFile)}) || len(res.Warnings) != 0 {
		t.Errorf("result = %+v", res)
	}
	if _, err := os.Lstat(root.Path(sd(NetworkConfigFile))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("network-config still there: %v", err)
	}
	mk, _, _ := readMarker(root)
	if _, ok := mk.Files[sd(NetworkConfigFile)]; ok {
		t.Errorf("marker still lists network-config: %v", mk.Files)
	}

	s.NetworkConfig = []byte("network: [1, 2]\n")
	if _, err := Write(string(root), s); err == nil || !strings.Contains(err.Error(), "network-config") {
		t.Errorf("bad network config: %v", err)
	}
}

// TestMetaDataRefusesUnusableIDs: instance IDs "." and ".." (and others that
// are no directory name) reached cloud-init.
func TestMetaDataRefusesUnusableIDs(t *testing.T) {
	for _, id := range []string{".", "..", "i-0/with/slash", "/", "a\x00b", strings.Repeat("x", 256)} {
		if _, err := MetaData(Seed{InstanceID: id}); err == nil || !strings.HasPrefix(err.Error(), "meta-data instance-id: instance ID") {
			t.Errorf("%q: err = %v", id, err)
		}
	}
}

// TestWriteDropsBadFields: one public key with a control character in it
// made Write fail, and boot wrote no seed.
func TestWriteDropsBadFields(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	s := testSeed()
	s.Hostname = "bad\nhost"
	s.PublicKeys = []string{"ssh-rsa AAA\tone", "ssh-ed25519 BBB two", "ssh-rsa CCC\u2028x", strings.Repeat("K", datasource.MaxPublicKey+1)}
	res, err := Write(string(root), s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"meta-data local-hostname left out: control character U+000A at byte 3",
		"meta-data public-keys[0] left out: control character U+0009 at byte 11",
		"meta-data public-keys[2] left out: control character U+2028 at byte 11",
		fmt.Sprintf("meta-data public-keys[3] left out: %d bytes long, more than %d", datasource.MaxPublicKey+1, datasource.MaxPublicKey),
	}
	if !slices.Equal(res.Warnings, want) {
		t.Errorf("Warnings = %q\nwant %q", res.Warnings, want)
	}
	got := read(t, root, sd(MetaDataFile))
	if got != "instance-id: \""+s.InstanceID+"\"\npublic-keys:\n  - \"ssh-ed25519 BBB two\"\n" {
		t.Errorf("meta-data = %q", got)
	}
}

// TestMetaDataKeysBounded: keys that share one large string (YAML aliases)
// were written out in full, once per copy.
func TestMetaDataKeysBounded(t *testing.T) {
	big := "ssh-rsa " + strings.Repeat("A", datasource.MaxPublicKey-8)
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = big
	}
	b, err := MetaData(Seed{InstanceID: "i-1", PublicKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > datasource.MaxPublicKeys+64<<10 {
		t.Errorf("meta-data is %d bytes", len(b))
	}
}

// TestUnwrapNetworkConfigSelfContained: a wrapped network-config whose alias
// pointed at an anchor outside "network:" was written with a dangling
// *alias, which cloud-init rejects; one whose aliases expand hugely was
// re-encoded in full.
func TestUnwrapNetworkConfigSelfContained(t *testing.T) {
	in := "dns: &dns {addresses: [10.0.0.2]}\nnetwork:\n  version: 2\n  ethernets:\n    eth0: {dhcp4: true, nameservers: *dns}\n"
	out, err := UnwrapNetworkConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(out, "*&") {
		t.Errorf("output has an alias or anchor:\n%s", out)
	}
	var got map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	var whole map[string]any
	yaml.Unmarshal([]byte(in), &whole)
	if !reflect.DeepEqual(got, whole["network"]) {
		t.Errorf("unwrapped = %v, want %v", got, whole["network"])
	}

	var b strings.Builder
	b.WriteString("big: &big " + strings.Repeat("x", 1<<20) + "\nnetwork:\n  version: 2\n  list:\n")
	for range 1000 {
		b.WriteString("  - *big\n")
	}
	for _, doc := range []string{b.String(), strings.Replace(b.String(), "network:\n  version: 2\n", "version: 2\nnetwork:\n", 1)} {
		if _, err := UnwrapNetworkConfig([]byte(doc)); err == nil || !errors.Is(err, yamlx.ErrTooLarge) {
			t.Errorf("alias bomb: err = %v", err)
		}
	}
}

func TestUnwrapNetworkConfig(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"version: 1\nconfig: []\n", "version: 1\nconfig: []\n", ""},
		{"# comment\nversion: 2\nethernets: {}\n", "# comment\nversion: 2\nethernets: {}\n", ""},
		{"network:\n  version: 2\n  ethernets: {}\n", "version: 2\nethernets: {}\n", ""},
		{`{"network": {"version": 1, "config": []}}`, `{"version": 1, "config": []}` + "\n", ""},
		{"network: &n {version: 1, config: []}\n", "{version: 1, config: []}\n", ""},
		{"network: {config: disabled}\n", "{config: disabled}\n", ""},
		{"version: 1\nnetwork: {x: 1}\n", "version: 1\nnetwork: {x: 1}\n", ""},
		{"", "", ""},
		{"network: 1\n", "", "not a mapping"},
		{"- 1\n", "", "top level"},
		{"a: [\n", "", "network-config"},
	} {
		got, err := UnwrapNetworkConfig([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestMetaDataKeepsStringsStrings(t *testing.T) {
	// Values a YAML 1.1 or 1.2 loader would read as something else when
	// unquoted; the conformance test feeds the same to cloud-init.
	for _, id := range trickyIDs {
		host := id
		if netcfg.CheckLine(id) != nil {
			host = "h"
		}
		b, err := MetaData(Seed{InstanceID: id, Hostname: host, PublicKeys: []string{host}})
		if err := datasource.CheckInstanceID(id); err != nil {
			continue // TestMetaDataRefusesUnusableIDs
		}
		if err != nil {
			t.Fatal(err)
		}
		var md map[string]any
		if err := yaml.Unmarshal(b, &md); err != nil {
			t.Fatalf("%q: %v\n%s", id, err, b)
		}
		if md["instance-id"] != id || md["local-hostname"] != host {
			t.Errorf("%q came back as %#v:\n%s", id, md["instance-id"], b)
		}
	}
	if _, err := MetaData(Seed{}); err == nil {
		t.Error("empty instance ID accepted")
	}
	for _, bad := range []string{"tab\there", "line\nbreak", "cr\rx", "nul\x00x", "del\x7f", "nel\u0085x", "ls\u2028x"} {
		if _, err := MetaData(Seed{InstanceID: bad}); err == nil || !strings.Contains(err.Error(), "instance-id: instance ID: control character") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	b, _ := MetaData(Seed{InstanceID: "x"})
	if string(b) != "instance-id: \"x\"\n" {
		t.Errorf("minimal meta-data = %q", b)
	}
}

var trickyIDs = []string{
	"1e10", "0x1F", "0o17", "017", "1_000", "1:20", "yes", "No", "on", "OFF", "~", "null",
	"true", "2026-03-01", ".inf", "-.5", "12345", "a: b", "- x", "#x", "'q'", "\"dq\"",
	"é ünï", "i-0/with/slash", "  padded  ", "&anchor", "*alias", "!tag", "%pct", "@at", "`tick", "nel\u0085x", "ls\u2028x", "\ufeffbom", "emoji 🙂",
}

func TestImportOnce(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	person := map[string]string{
		MetaDataFile:      "instance-id: handmade\n",
		UserDataFile:      "#cloud-config\nusers: []\n",
		NetworkConfigFile: "version: 1\nconfig: []\n",
		"README":          "put by hand\n",
	}
	os.MkdirAll(root.Path(Dir), 0o755)
	for n, c := range person {
		os.WriteFile(root.Path(sd(n)), []byte(c), 0o644)
	}
	if dir, err := SourceDir(string(root)); err != nil || dir != Dir {
		t.Fatalf("before the first run SourceDir = %q, %v; want %s", dir, err, Dir)
	}
	res := mustWrite(t, root, testSeed())
	if res.Imported != ImportDir || len(res.Warnings) != 0 {
		t.Fatalf("result = %+v", res)
	}
	for n, c := range person {
		if got := read(t, root, filepath.Join(ImportDir, n)); got != c {
			t.Errorf("imported %s = %q, want %q", n, got, c)
		}
		if m := mode(t, root, filepath.Join(ImportDir, n)); m != 0o600 {
			t.Errorf("imported %s mode %v", n, m)
		}
	}
	if m := mode(t, root, ImportDir); m != fs.ModeDir|0o700 {
		t.Errorf("import dir mode %v", m)
	}
	if dir, err := SourceDir(string(root)); err != nil || dir != ImportDir {
		t.Errorf("after import SourceDir = %q, %v", dir, err)
	}
	// The person's network-config is gone from the seed (it is imported);
	// other files are left alone.
	if !slices.Equal(res.Removed, []string{sd(NetworkConfigFile)}) {
		t.Errorf("removed %v", res.Removed)
	}
	if read(t, root, sd("README")) != "put by hand\n" {
		t.Error("README touched")
	}
	if !strings.Contains(read(t, root, sd(MetaDataFile)), "i-0123abcd") {
		t.Error("meta-data not ours")
	}
	// Never again, even when the seed dir changes.
	os.WriteFile(root.Path(filepath.Join(ImportDir, MetaDataFile)), []byte("instance-id: edited-import\n"), 0o600)
	s := testSeed()
	s.Hostname = "web2"
	res = mustWrite(t, root, s)
	if res.Imported != "" || read(t, root, filepath.Join(ImportDir, MetaDataFile)) != "instance-id: edited-import\n" {
		t.Errorf("re-imported: %+v", res)
	}
}

func TestSourceDirOwnOutput(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	if owned, _ := Owned(string(root)); owned {
		t.Fatal("owned before any write")
	}
	mustWrite(t, root, testSeed())
	dir, err := SourceDir(string(root))
	if err != nil || dir != "" {
		t.Errorf("SourceDir of our own output = %q, %v; want \"\"", dir, err)
	}
	if owned, err := Owned(string(root)); !owned || err != nil {
		t.Errorf("Owned = %v, %v", owned, err)
	}
}

func TestHandEditsAreReportedAndOverwritten(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	mustWrite(t, root, testSeed())
	os.WriteFile(root.Path(sd(UserDataFile)), []byte("#cloud-config\nruncmd: [reboot]\n"), 0o600)
	os.WriteFile(root.Path(sd(NetworkConfigFile)), []byte("version: 1\nconfig: []\n"), 0o600)
	res := mustWrite(t, root, testSeed())
	if len(res.Warnings) != 2 ||
		!strings.Contains(res.Warnings[0], sd(UserDataFile)+" was changed by hand") || !strings.Contains(res.Warnings[0], "overwriting") ||
		!strings.Contains(res.Warnings[1], sd(NetworkConfigFile)) || !strings.Contains(res.Warnings[1], "leaving it in place") {
		t.Errorf("warnings = %q", res.Warnings)
	}
	// Only files whose content seedkeeper wrote are
	// removed; a person's file is left, with the warning.
	if read(t, root, sd(NetworkConfigFile)) != "version: 1\nconfig: []\n" {
		t.Error("a file seedkeeper did not write was removed")
	}
	os.Remove(root.Path(sd(NetworkConfigFile)))
	if read(t, root, sd(UserDataFile)) != string(testSeed().UserData) {
		t.Error("hand edit not overwritten")
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "hunter2") || strings.Contains(w, "reboot") {
			t.Errorf("a warning shows file content: %s", w)
		}
	}
	// A corrupt marker is reported, and the directory stays ours.
	os.WriteFile(root.Path(sd(MarkerName)), []byte("{"), 0o600)
	res = mustWrite(t, root, testSeed())
	if res.Imported != "" || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "seed marker") {
		t.Errorf("corrupt marker: %+v", res)
	}
	if _, owned, err := readMarker(root); !owned || err != nil {
		t.Errorf("marker not rewritten: %v", err)
	}
}

func TestInterruptedWriteIsNotAHandEdit(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	mustWrite(t, root, testSeed())
	// A run killed after the pending marker and user-data: user-data
	// holds the new content, the marker lists it as pending.
	next := testSeed()
	next.UserData = []byte("#cloud-config\n# v2\n")
	mk, _, _ := readMarker(root)
	want, _ := files(next)
	pending := map[string]string{}
	for _, f := range want {
		pending[f.path] = sum(f.data)
	}
	writeMarker(root, &marker{Files: mk.Files, Pending: pending})
	fsutil.WriteFile(root.Path(sd(UserDataFile)), next.UserData, 0o600)
	os.WriteFile(root.Path(filepath.Join(Dir, ".user-data.tmp-42")), []byte("torn"), 0o600)

	third := testSeed()
	third.UserData = []byte("#cloud-config\n# v3\n")
	res := mustWrite(t, root, third)
	if len(res.Warnings) != 0 {
		t.Errorf("warnings after an interrupted write: %q", res.Warnings)
	}
	if _, err := os.Lstat(root.Path(filepath.Join(Dir, ".user-data.tmp-42"))); !errors.Is(err, fs.ErrNotExist) {
		t.Error("leftover temporary file not removed")
	}
	mk, _, _ = readMarker(root)
	if len(mk.Pending) != 0 {
		t.Errorf("pending left in marker: %v", mk.Pending)
	}
}

func TestSmartOSExtras(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	s := testSeed()
	s.SmartOS = &datasource.SmartOSExtras{
		OperatorScript: []byte("echo operator\n"), HasOperator: true,
		UserScript: []byte("#!/bin/sh\necho user\n"), HasUserScript: true,
		LegacyUserData: []byte("legacy config\n"), HasLegacyUser: true,
	}
	mustWrite(t, root, s)
	if got := read(t, root, OperatorScript); got != "#!/bin/bash\necho operator\n" {
		t.Errorf("operator script = %q", got)
	}
	if got := read(t, root, UserScript); got != "#!/bin/sh\necho user\n" {
		t.Errorf("user script = %q", got)
	}
	if got := read(t, root, LegacyUserData); got != "legacy config\n" {
		t.Errorf("legacy user-data = %q", got)
	}
	for p, m := range map[string]fs.FileMode{OperatorScript: 0o700, UserScript: 0o700, LegacyUserData: 0o400} {
		if got := mode(t, root, p); got != m {
			t.Errorf("%s mode %v, want %v", p, got, m)
		}
	}
	// cloud-init's scripts_per_boot runs the directory in name order.
	entries, _ := os.ReadDir(root.Path(PerBootDir))
	if len(entries) != 2 || entries[0].Name() != filepath.Base(OperatorScript) {
		t.Errorf("per-boot order: %v", entries)
	}
	// Keys disappear one by one.
	s.SmartOS = &datasource.SmartOSExtras{UserScript: []byte("echo user\n"), HasUserScript: true}
	res := mustWrite(t, root, s)
	if !slices.Equal(res.Removed, []string{LegacyUserData, OperatorScript}) || len(res.Warnings) != 0 {
		t.Errorf("result = %+v", res)
	}
	if got := read(t, root, UserScript); got != "#!/bin/bash\necho user\n" {
		t.Errorf("user script = %q", got)
	}
	s.SmartOS = nil
	res = mustWrite(t, root, s)
	if !slices.Equal(res.Removed, []string{UserScript}) {
		t.Errorf("result = %+v", res)
	}
	// A /var/db/mdata-user-data seedkeeper did not write is not removed.
	os.WriteFile(root.Path(LegacyUserData), []byte("cloud-init's\n"), 0o400)
	mustWrite(t, root, s)
	if read(t, root, LegacyUserData) != "cloud-init's\n" {
		t.Error("removed a legacy file seedkeeper did not write")
	}
}

func TestRefusesSymlinks(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	elsewhere := t.TempDir()
	os.MkdirAll(filepath.Dir(root.Path(Dir)), 0o755)
	os.Symlink(elsewhere, root.Path(Dir))
	if _, err := Write(string(root), testSeed()); !errors.Is(err, fsutil.ErrSymlink) {
		t.Errorf("seed dir symlink: %v", err)
	}

	root = sysroot.Root(t.TempDir())
	mustWrite(t, root, testSeed())
	os.Remove(root.Path(sd(UserDataFile)))
	os.Symlink(filepath.Join(elsewhere, "target"), root.Path(sd(UserDataFile)))
	if _, err := Write(string(root), testSeed()); !errors.Is(err, fsutil.ErrSymlink) {
		t.Errorf("user-data symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "target")); err == nil {
		t.Error("wrote through the symlink")
	}
}

func TestFromMetadata(t *testing.T) {
	md := &datasource.Metadata{Hostname: "h", PublicKeys: []string{"k"}, UserData: []byte("u"),
		VendorData: []byte("v"), NetworkConfigRaw: []byte("n"), SmartOS: &datasource.SmartOSExtras{}}
	s := FromMetadata(md, "id")
	if s.InstanceID != "id" || s.Hostname != "h" || s.PublicKeys[0] != "k" || string(s.UserData) != "u" ||
		string(s.VendorData) != "v" || s.NetworkConfig != nil || s.SmartOS != md.SmartOS {
		t.Errorf("FromMetadata = %+v", s)
	}
}

func FuzzUnwrapNetworkConfig(f *testing.F) {
	for _, p := range []string{"network-v1.yaml", "network-v1-wrapped.yaml", "network-v2.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "seed", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("network: *a\n"))
	f.Add([]byte("network: &a {network: *a}\n"))
	f.Add([]byte("network:\n  network: {version: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := UnwrapNetworkConfig(data)
		if err != nil {
			return
		}
		if bytes.Equal(out, data) {
			return
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("unwrapped output does not parse: %v\n%s", err, out)
		}
		if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
			t.Fatalf("unwrapped output is not a mapping:\n%s", out)
		}
		// Re-encoded output stands on its own: no alias left to dangle.
		var walk func(*yaml.Node)
		walk = func(n *yaml.Node) {
			if n.Kind == yaml.AliasNode {
				t.Fatalf("unwrapped output has an alias:\n%s", out)
			}
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(&doc)
	})
}

func FuzzMetaData(f *testing.F) {
	for _, id := range trickyIDs {
		f.Add(id, id, id)
	}
	f.Fuzz(func(t *testing.T, id, host, key string) {
		b, err := MetaData(Seed{InstanceID: id, Hostname: host, PublicKeys: []string{key}})
		if (err == nil) != (datasource.CheckInstanceID(id) == nil) {
			t.Fatalf("instance ID %q: err = %v", id, err)
		}
		if err != nil {
			return
		}
		// What cannot be one line is left out; the rest comes back as it was.
		if netcfg.CheckLine(host) != nil {
			host = ""
		}
		if k := strings.TrimSpace(key); netcfg.CheckLine(k) != nil || len(k) > datasource.MaxPublicKey {
			key = ""
		}
		var md struct {
			ID   string   `yaml:"instance-id"`
			Host string   `yaml:"local-hostname"`
			Keys []string `yaml:"public-keys"`
		}
		if err := yaml.Unmarshal(b, &md); err != nil {
			t.Fatalf("meta-data does not parse: %v\n%s", err, b)
		}
		if md.ID != id || md.Host != host {
			t.Fatalf("round trip: %q %q -> %q %q\n%s", id, host, md.ID, md.Host, b)
		}
		if k := strings.TrimSpace(key); k != "" && (len(md.Keys) != 1 || md.Keys[0] != k) || k == "" && len(md.Keys) != 0 {
			t.Fatalf("key %q -> %q", k, md.Keys)
		}
	})
}

func FuzzParseMarker(f *testing.F) {
	f.Add([]byte(`{"version":1,"files":{"/var/lib/cloud/seed/nocloud/meta-data":"00"}}`))
	f.Add([]byte(`{"version":1,"files":{},"pending":{"a":"b"}}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		mk, err := parseMarker(data)
		if err != nil {
			return
		}
		b, _ := json.Marshal(mk)
		if _, err := parseMarker(b); err != nil {
			t.Fatalf("re-encoded marker does not parse: %v", err)
		}
	})
}

// Two writes cut short in a row (the second before it reached a file the
// first had already rewritten) must not make the third call that file a
// hand edit: the marker keeps track of what each file holds.
func TestInterruptedWritesInARowAreNotHandEdits(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	gen := func(n string) Seed {
		return Seed{InstanceID: "iid-" + n, UserData: []byte("#cloud-config\n# " + n + "\n"), VendorData: []byte(n)}
	}
	if _, err := Write(string(root), gen("0")); err != nil {
		t.Fatal(err)
	}
	// A write of generation A got as far as user-data, then was killed.
	mk, _, err := readMarker(root)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := files(gen("A"))
	mk.Pending = map[string]string{}
	for _, f := range want {
		mk.Pending[f.path] = sum(f.data)
	}
	if err := writeMarker(root, mk); err != nil {
		t.Fatal(err)
	}
	ud := root.Path(filepath.Join(Dir, UserDataFile))
	if err := os.WriteFile(ud, []byte("#cloud-config\n# A\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A write of generation B fails on meta-data, before it reaches
	// user-data (a directory stands where meta-data goes).
	md := root.Path(filepath.Join(Dir, MetaDataFile))
	if err := os.Remove(md); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(md, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(string(root), gen("B")); err == nil {
		t.Fatal("write over a directory succeeded")
	}
	os.Remove(md)
	res, err := Write(string(root), gen("C"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings after interrupted writes: %q", res.Warnings)
	}
}

// A second write of the same seed compares each file with what it would
// write as it reads it: a 12 MiB legacy user-data is not read back whole
// beside the value (a boot at the SmartOS total held it twice).
func TestUnchangedLargeFileIsNotReadBackWhole(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	s := testSeed()
	big := bytes.Repeat([]byte("# legacy user-data\n"), 12<<20/19)
	s.SmartOS = &datasource.SmartOSExtras{LegacyUserData: big, HasLegacyUser: true}
	mustWrite(t, root, s)
	var res Result
	n := alloctest.Bytes(func() { res = mustWrite(t, root, s) })
	if res.Changed() {
		t.Errorf("the same seed again changed %+v", res)
	}
	if n > 2<<20 {
		t.Errorf("writing the same seed again allocated %d bytes beside a %d-byte file, want under 2 MiB", n, len(big))
	}
	big[len(big)-2] = '!'
	if res := mustWrite(t, root, s); !slices.Contains(res.Written, LegacyUserData) {
		t.Errorf("a changed last byte: %+v, want %s written", res, LegacyUserData)
	}
}
