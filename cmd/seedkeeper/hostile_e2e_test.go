package main

// Whole-process cases for hostile metadata (SECURITY.md): the seed and the
// network are written as far as they can be, the bad fields are named in
// status, and nothing a field smuggles in reaches a file.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
)

// hostileSeed puts a NoCloud seed with these files into root's seed
// directory (a person's seed, read on the first boot).
func hostileSeed(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		writeFile(t, filepath.Join(root, "var/lib/cloud/seed/nocloud", name), data, 0o644)
	}
}

// One SSH key with a TAB as separator made boot exit 2
// with no seed written and no network applied.
func TestBootHostileFieldsDegrade(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	hostileSeed(t, root, map[string]string{
		"meta-data": "instance-id: iid-hostile\nlocal-hostname: \"web\\n1\"\npublic-keys:\n" +
			"  - \"ssh-ed25519\\tAAAAC3NzaC1lZDI1NTE5AAAAITab tab@key\"\n" +
			"  - \"ssh-rsa AAAAB3Nza\\rcommand\"\n" +
			"  - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGood good@key\n",
		"user-data": "#cloud-config\n",
		// A line break in a bond parameter once added
		// sections to the .netdev file. The parameter is left out, the
		// rest of the network config stands.
		"network-config": "version: 2\nethernets:\n  e0: {match: {macaddress: '52:54:00:12:34:56'}, set-name: e0}\n" +
			"bonds:\n  bond0:\n    interfaces: [e0]\n    dhcp4: true\n    parameters: {mode: \"active-backup\\n[Network]\\nAddress=6.6.6.6/32\"}\n",
	})
	r := runBinary(t, nil, "boot", "--root", root, "--network", "plan")
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	md := readFile(t, seedPath(root, "meta-data"))
	want := "instance-id: \"iid-hostile\"\npublic-keys:\n" +
		"  - \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITab tab@key\"\n" +
		"  - \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGood good@key\"\n"
	if md != want {
		t.Errorf("meta-data =\n%s\nwant\n%s", md, want)
	}
	var st struct {
		Outcome string   `json:"outcome"`
		Dropped []string `json:"dropped"`
		Network struct {
			Action, Reason string
		} `json:"network"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, agent.StatusPath))), &st); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(st.Dropped, "\n")
	for _, w := range []string{
		"meta-data local-hostname dropped: control character U+000A at byte 3",
		"meta-data public-keys[0]: a TAB between fields was replaced by a space",
		"meta-data public-keys[1] dropped: control character U+000D at byte 17",
		"network-config: bonds.bond0.parameters.mode: control character U+000A at byte 13; the parameter left out",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("status.json dropped %q\nhas no %q", st.Dropped, w)
		}
	}
	if strings.Contains(all, "AAAAB3Nza") || strings.Contains(all, "6.6.6.6") {
		t.Errorf("a warning quotes the value: %q", st.Dropped)
	}
	if st.Outcome != "ok" || st.Network.Action != "planned" {
		t.Errorf("outcome %q, network %+v", st.Outcome, st.Network)
	}
	ents, _ := os.ReadDir(filepath.Join(root, agent.NetworkDir))
	for _, ent := range ents {
		if b := readFile(t, filepath.Join(root, agent.NetworkDir, ent.Name())); strings.Contains(b, "6.6.6.6") || strings.Count(b, "[Network]") > 1 {
			t.Errorf("%s holds what the bad parameter said:\n%s", ent.Name(), b)
		}
	}
	s := runBinary(t, nil, "status", "--root", root)
	if !strings.Contains(s.stdout, "Dropped:     meta-data public-keys[1] dropped: control character U+000D at byte 17\n") {
		t.Errorf("status does not say what was dropped:\n%s", s.stdout)
	}
}

// Instance IDs "." and ".." passed to cloud-init, which
// makes a directory of the ID.
func TestBootDotDotInstanceID(t *testing.T) {
	for _, id := range []string{".", "..", "../../etc"} {
		root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
		hostileSeed(t, root, map[string]string{"meta-data": "instance-id: \"" + id + "\"\n", "user-data": ""})
		bootOK(t, root)
		if got := metaDataID(t, root); got != "nocloud" {
			t.Errorf("%q: meta-data instance-id %q, want cloud-init's default", id, got)
		}
		if st := readStatus(t, root); st.Identity == nil || st.Identity.InstanceID != "nocloud" {
			t.Errorf("%q: status %+v", id, st.Identity)
		}
	}
}

// A cloud-init instance-id file or a pinned ID that
// cloud-init could not use was handed back to it, and seed.Write failed
// the boot with exit 2.
func TestBootUnusableStoredInstanceID(t *testing.T) {
	for _, c := range []struct{ name, path, data string }{
		{"cloud-init's", "var/lib/cloud/data/instance-id", "../../etc\n"},
		{"pinned", "var/lib/seedkeeper/identity.json", `{"version":1,"instance_id":"..","machine_id":"` +
			strings.ToLower(kvmUUID) + `","rule":6,"rule_name":"first-run"}`},
	} {
		root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
		// No instance-id: NoCloud's default, which adopts or keeps a stored ID.
		hostileSeed(t, root, map[string]string{"meta-data": "local-hostname: h1\n", "user-data": ""})
		writeFile(t, filepath.Join(root, c.path), c.data, 0o644)
		bootOK(t, root)
		if got := metaDataID(t, root); got != "nocloud" {
			t.Errorf("%s: meta-data instance-id %q, want the reported default", c.name, got)
		}
		if st := readStatus(t, root); st.Identity == nil || !strings.Contains(st.Identity.Explanation, "Not used: stored instance ID is not usable") {
			t.Errorf("%s: status %+v", c.name, st.Identity)
		}
	}
}

// A meta-data mapping with a key that is not a string
// made fetch --json print nothing and exit 0.
func TestFetchJSONNonStringKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "meta-data"), "instance-id: i-1\nextra: {1: one, true: yes, 2.5: x}\n", 0o644)
	writeFile(t, filepath.Join(dir, "user-data"), "", 0o644)
	r := runBinary(t, nil, "fetch", "--source", "nocloud", "--seed", dir, "--json")
	if r.code != exitOK {
		t.Fatalf("fetch: %v", r)
	}
	var out struct {
		InstanceID string         `json:"instance_id"`
		MetaData   map[string]any `json:"meta_data"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("fetch --json output is not JSON: %v\n%v", err, r)
	}
	if x, _ := out.MetaData["extra"].(map[string]any); out.InstanceID != "i-1" || x["1"] != "one" || x["2.5"] != "x" {
		t.Errorf("fetch --json = %s", r.stdout)
	}
}

// With network.owner cloud-init, a network-config whose
// alias pointed at an anchor outside "network:" was written with a
// dangling *alias; public-keys given as aliases of one large string were
// written out once per alias.
func TestBootAliasesResolvedAndBounded(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	var bomb strings.Builder
	bomb.WriteString("instance-id: i-alias\nbig: &big ssh-rsa " + strings.Repeat("A", 1<<20) + "\npublic-keys:\n")
	for range 1000 {
		bomb.WriteString("  - *big\n")
	}
	hostileSeed(t, root, map[string]string{
		"meta-data": bomb.String(),
		"user-data": "",
		"network-config": "dns: &dns {addresses: [10.0.0.2]}\nnetwork:\n  version: 2\n  ethernets:\n" +
			"    e0: {match: {macaddress: '52:54:00:12:34:56'}, set-name: e0, dhcp4: true, nameservers: *dns}\n",
	})
	cfg := filepath.Join(root, "etc/seedkeeper/config.yaml")
	writeFile(t, cfg, "network:\n  owner: cloud-init\n", 0o644)
	r := runBinary(t, nil, "boot", "--root", root, "--config", cfg)
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	nc := readFile(t, seedPath(root, "network-config"))
	if strings.ContainsAny(nc, "*&") || !strings.Contains(nc, "10.0.0.2") {
		t.Errorf("network-config is not self-contained:\n%s", nc)
	}
	if fi, err := os.Stat(seedPath(root, "meta-data")); err != nil || fi.Size() > 4096 {
		t.Errorf("meta-data: %v, %d bytes", err, fi.Size())
	}
	if got := metaDataID(t, root); got != "i-alias" {
		t.Errorf("instance-id %q", got)
	}
}

// The alias bomb as first seen: a few kilobytes of
// gzip+base64 guestinfo metadata whose network mapping names one 1 MiB
// string a thousand times made boot die re-encoding the mapping.
func TestBootVMwareNetworkAliasBomb(t *testing.T) {
	env, gi := vmwareStub(t)
	root := scratchRoot(t, "VMware7,1", "VMware, Inc.", "4213ABCD-1234-5678-9ABC-DEF012345678")
	var doc strings.Builder
	doc.WriteString("instance-id: i-vmw\nlocal-hostname: vm1\nnetwork:\n  version: 2\n  x: &big " + strings.Repeat("x", 1<<20) + "\n  ethernets:\n    e0:\n      dhcp4: true\n      l:\n")
	for range 1000 {
		doc.WriteString("      - *big\n")
	}
	enc := gzipBase64(t, doc.String())
	if len(enc) > 8<<10 {
		t.Fatalf("metadata is %d bytes encoded; the point is that it is small", len(enc))
	}
	writeFile(t, filepath.Join(gi, "guestinfo.metadata"), enc, 0o644)
	writeFile(t, filepath.Join(gi, "guestinfo.metadata.encoding"), "gzip+base64", 0o644)
	r := runBinary(t, env, "boot", "--root", root)
	if r.code != exitOK {
		t.Fatalf("boot: %v", r)
	}
	if got := metaDataID(t, root); got != "i-vmw" {
		t.Errorf("instance-id %q", got)
	}
	var st struct {
		Dropped []string `json:"dropped"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, agent.StatusPath))), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Dropped) != 1 || !strings.Contains(st.Dropped[0], "network") || !strings.Contains(st.Dropped[0], "expands to more than") {
		t.Errorf("dropped = %q", st.Dropped)
	}
}

// SIGTERM during boot ends it with 128+15, the code boot --help
// documents. Before the documents were bounded, the parse of a 4 MiB
// meta-data took seconds and the signal was ignored until it was done.
// The boot here cannot finish before the signal: it waits, without limit,
// for an mdata host that is down, and the signal goes after it logged
// that wait. The bounds below are generous: they fail only on a boot that
// never waited or ignored the signal, not on a slow machine.
func TestBootEndsOnSIGTERM(t *testing.T) {
	h, transport := smartosHost(t, smartosStore())
	h.Down()
	root := scratchRoot(t, "SmartDC HVM", "Joyent", "")
	cmd := exec.Command(seedkeeperBinary(t), "boot", "--root", root, "--network", "plan")
	cmd.Env = testEnv([]string{"SEEDKEEPER_MDATA=" + transport})
	// Our own pipe, read to its end whenever Wait returns.
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	waiting := make(chan string, 1)
	rest := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stderr)
		var seen strings.Builder
		for {
			line, err := br.ReadString('\n')
			seen.WriteString(line)
			if strings.Contains(line, "metadata host not answering") {
				waiting <- seen.String()
				break
			}
			if err != nil {
				waiting <- ""
				rest <- seen.String()
				return
			}
		}
		b, _ := io.ReadAll(br)
		rest <- string(b)
	}()
	var out string
	select {
	case out = <-waiting:
	case <-time.After(60 * time.Second):
		t.Fatal("boot did not start waiting for the mdata host within 60 s")
	}
	if out == "" {
		t.Fatalf("boot ended without waiting for the mdata host:\n%s", <-rest)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("boot ignored SIGTERM: still running 30 s after it")
	}
	out += <-rest
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) || !strings.Contains(out, "seedkeeper boot: stopped by a signal") {
		t.Fatalf("boot after SIGTERM: %v, want exit %d\n%s", waitErr, 128+int(syscall.SIGTERM), out)
	}
}
