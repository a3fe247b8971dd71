package agent_test

// Hostile metadata through the boot flow (SECURITY.md): the seed and the
// network are written as far as they can be, the bad fields are named in
// the status, and nothing a field smuggles in reaches a file. The command's
// side (exit codes, what status prints) is tested in cmd/seedkeeper.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/syncbuf"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// commandBoot is a Boot run as `seedkeeper boot --root root` runs it: its
// log in the command's format and the lines it told the service manager,
// then its status and error.
type commandBoot struct {
	st     *agent.Status
	err    error
	log    *syncbuf.Buffer
	notify *notifyLog
}

// commandEnv is the Env the command makes for root: the configuration
// loaded from root (or cfgPath) and the command's logger, with the log and
// the service manager's lines recorded in b.
func commandEnv(root, cfgPath string) (agent.Env, *commandBoot) {
	b := &commandBoot{log: &syncbuf.Buffer{}, notify: &notifyLog{}}
	e := agent.LoadEnv(root, cfgPath, agent.NewLogger(b.log))
	e.Notify = b.notify.notify
	return e, b
}

// bootCommand boots root as the command does, with the network mode.
func bootCommand(t *testing.T, root, cfgPath string, mode agent.NetworkMode) *commandBoot {
	t.Helper()
	e, b := commandEnv(root, cfgPath)
	b.st, b.err = agent.Boot(context.Background(), e, agent.BootOptions{Network: mode})
	return b
}

// bootCommandOK is bootCommand that fails the test unless the boot went
// well (the command's exit 0).
func bootCommandOK(t *testing.T, root string, mode agent.NetworkMode) *commandBoot {
	t.Helper()
	b := bootCommand(t, root, "", mode)
	if b.err != nil {
		t.Fatalf("boot: %v\n%s", b.err, b.log)
	}
	return b
}

// savedStatus is the status file a boot left under root.
func savedStatus(t *testing.T, root string) *agent.Status {
	t.Helper()
	st, err := agent.ReadStatus(sysroot.Root(root))
	if err != nil {
		t.Fatalf("status file: %v", err)
	}
	return st
}

// hostileSeed puts a NoCloud seed with these files into root's seed
// directory (a person's seed, read on the first boot).
func hostileSeed(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		writeFile(t, filepath.Join(root, "var/lib/cloud/seed/nocloud", name), data)
	}
}

// One SSH key with a TAB as separator made boot exit 2
// with no seed written and no network applied.
func TestBootHostileFieldsDegrade(t *testing.T) {
	root := machineRoot(t, uuidVM, nil)
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
	bootCommandOK(t, root, agent.NetworkPlan)
	md := seedFile(t, root, "meta-data")
	want := "instance-id: \"iid-hostile\"\npublic-keys:\n" +
		"  - \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITab tab@key\"\n" +
		"  - \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGood good@key\"\n"
	if md != want {
		t.Errorf("meta-data =\n%s\nwant\n%s", md, want)
	}
	st := savedStatus(t, root)
	all := strings.Join(st.Dropped, "\n")
	for _, w := range []string{
		"meta-data local-hostname dropped: control character U+000A at byte 3",
		"meta-data public-keys[0]: a TAB between fields was replaced by a space",
		"meta-data public-keys[1] dropped: control character U+000D at byte 17",
		"network-config: bonds.bond0.parameters.mode: control character U+000A at byte 13; the parameter left out",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("status file dropped %q\nhas no %q", st.Dropped, w)
		}
	}
	if strings.Contains(all, "AAAAB3Nza") || strings.Contains(all, "6.6.6.6") {
		t.Errorf("a warning quotes the value: %q", st.Dropped)
	}
	if st.Outcome != "ok" || st.Network == nil || st.Network.Action != "planned" {
		t.Errorf("outcome %q, network %+v", st.Outcome, st.Network)
	}
	ents, _ := os.ReadDir(filepath.Join(root, agent.NetworkDir))
	for _, ent := range ents {
		if b := readFile(t, filepath.Join(root, agent.NetworkDir, ent.Name())); strings.Contains(b, "6.6.6.6") || strings.Count(b, "[Network]") > 1 {
			t.Errorf("%s holds what the bad parameter said:\n%s", ent.Name(), b)
		}
	}
}

// Instance IDs "." and ".." passed to cloud-init, which
// makes a directory of the ID.
func TestBootDotDotInstanceID(t *testing.T) {
	for _, id := range []string{".", "..", "../../etc"} {
		root := machineRoot(t, uuidVM, nil)
		hostileSeed(t, root, map[string]string{"meta-data": "instance-id: \"" + id + "\"\n", "user-data": ""})
		bootCommandOK(t, root, agent.NetworkAuto)
		if got := metaDataID(t, root); got != "nocloud" {
			t.Errorf("%q: meta-data instance-id %q, want cloud-init's default", id, got)
		}
		if st := savedStatus(t, root); st.Identity == nil || st.Identity.InstanceID != "nocloud" {
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
			uuidVM + `","rule":6,"rule_name":"first-run"}`},
	} {
		root := machineRoot(t, uuidVM, nil)
		// No instance-id: NoCloud's default, which adopts or keeps a stored ID.
		hostileSeed(t, root, map[string]string{"meta-data": "local-hostname: h1\n", "user-data": ""})
		writeFile(t, filepath.Join(root, c.path), c.data)
		bootCommandOK(t, root, agent.NetworkAuto)
		if got := metaDataID(t, root); got != "nocloud" {
			t.Errorf("%s: meta-data instance-id %q, want the reported default", c.name, got)
		}
		if st := savedStatus(t, root); st.Identity == nil || !strings.Contains(st.Identity.Explanation, "Not used: stored instance ID is not usable") {
			t.Errorf("%s: status %+v", c.name, st.Identity)
		}
	}
}

// With network.owner cloud-init, a network-config whose
// alias pointed at an anchor outside "network:" was written with a
// dangling *alias; public-keys given as aliases of one large string were
// written out once per alias.
func TestBootAliasesResolvedAndBounded(t *testing.T) {
	root := machineRoot(t, uuidVM, nil)
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
	writeFile(t, cfg, "network:\n  owner: cloud-init\n")
	if b := bootCommand(t, root, cfg, agent.NetworkAuto); b.err != nil {
		t.Fatalf("boot: %v\n%s", b.err, b.log)
	}
	nc := seedFile(t, root, "network-config")
	if strings.ContainsAny(nc, "*&") || !strings.Contains(nc, "10.0.0.2") {
		t.Errorf("network-config is not self-contained:\n%s", nc)
	}
	if fi, err := os.Stat(filepath.Join(root, "var/lib/cloud/seed/nocloud/meta-data")); err != nil || fi.Size() > 4096 {
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
	g := newVMwareGuest(t, "")
	var doc strings.Builder
	doc.WriteString("instance-id: i-vmw\nlocal-hostname: vm1\nnetwork:\n  version: 2\n  x: &big " + strings.Repeat("x", 1<<20) + "\n  ethernets:\n    e0:\n      dhcp4: true\n      l:\n")
	for range 1000 {
		doc.WriteString("      - *big\n")
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(doc.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(zb.Bytes())
	if len(enc) > 8<<10 {
		t.Fatalf("metadata is %d bytes encoded; the point is that it is small", len(enc))
	}
	g.set(t, "metadata", enc)
	g.set(t, "metadata.encoding", "gzip+base64")
	b := bootCommand(t, g.root, "", agent.NetworkAuto)
	if b.err != nil {
		t.Fatalf("boot: %v\n%s", b.err, b.log)
	}
	if b.st.Source != datasource.SourceVMware {
		t.Fatalf("source %q, want vmware", b.st.Source)
	}
	if got := metaDataID(t, g.root); got != "i-vmw" {
		t.Errorf("instance-id %q", got)
	}
	st := savedStatus(t, g.root)
	if len(st.Dropped) != 1 || !strings.Contains(st.Dropped[0], "network") || !strings.Contains(st.Dropped[0], "expands beyond the size limit") {
		t.Errorf("dropped = %q", st.Dropped)
	}
}
