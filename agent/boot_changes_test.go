package agent_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/intent"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const (
	adminKeyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyA alice@laptop"
	adminKeyB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyB bob@desk"
	handKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHandAddedKey person@hand"
	hashOne   = "$6$saltone$uM3aYl0pNQw6Qx1pIeV3W1zVQ2wq8fQ0eB9yQ6t5Kx7x2l8m1n0o9p8q7r6s5t4u3v2w1x0y9z8A7B6C5D4E3."
	hashTwo   = "$6$salttwo$0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aB4cD5eF6gH7iJ8kL9mN0oP1qR2sT3uV4wX5yZ6aB7cD8eF9g."
)

// adminSeed is a NoCloud seed directory a person maintains (nocloud-net,
// which seedkeeper reads on every boot), with a Proxmox-style user-data.
func adminSeed(t *testing.T, root, host, hash string, keys ...string) {
	t.Helper()
	ud := "#cloud-config\nhostname: " + host + "\nmanage_etc_hosts: true\nfqdn: " + host + "\nuser: admin\npassword: " + hash +
		"\nssh_authorized_keys:\n"
	for _, k := range keys {
		ud += "  - " + k + "\n"
	}
	ud += "chpasswd:\n  expire: False\nusers:\n  - default\npackage_upgrade: true\n"
	dir := filepath.Join(root, "var/lib/cloud/seed/nocloud-net")
	os.MkdirAll(dir, 0o755)
	for name, data := range map[string]string{"meta-data": "instance-id: iid-admin-01\n", "user-data": ud} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cloudInitRan leaves what cloud-init's first boot of the instance
// leaves: its instance ID, its cached datasource and the keys it wrote.
func cloudInitRan(t *testing.T, root string, keys ...string) {
	t.Helper()
	for name, data := range map[string]string{
		"var/lib/cloud/data/instance-id":               "iid-admin-01\n",
		"var/lib/cloud/instances/iid-admin-01/obj.pkl": "pickle",
		"home/admin/.ssh/authorized_keys":              strings.Join(keys, "\n") + "\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// cloud-init gives ~/.ssh and the keys to the user whose home it is.
	fi, err := os.Stat(filepath.Join(root, "home/admin"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	for _, p := range []string{"home/admin/.ssh", "home/admin/.ssh/authorized_keys"} {
		if err := os.Lchown(filepath.Join(root, p), int(st.Uid), int(st.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "home/admin/.ssh"), 0o700)
}

type ran struct {
	argv  []string
	stdin string
}

func bootWith(t *testing.T, root string, calls *[]ran) *agent.Status {
	t.Helper()
	run := func(_ context.Context, argv []string, stdin []byte) error {
		*calls = append(*calls, ran{argv, string(stdin)})
		return nil
	}
	st, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root), RunCommand: run}, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	return st
}

// fileStates is every file under root's state, seed, home and cloud-init
// directories with its inode and mtime: a rewrite shows.
func fileStates(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range []string{"var/lib/seedkeeper", "var/lib/cloud", "home", "etc"} {
		filepath.WalkDir(filepath.Join(root, d), func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			out[p] = strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10) + " " + fi.ModTime().String()
			return nil
		})
	}
	return out
}

// An admin adds a key, renames the VM and changes the password of a kept
// instance: the next boot applies the key and the password itself, hands
// the hostname to cloud-init (its cached datasource dropped), and says
// that package_upgrade waits; removing the key later removes it and only
// it, never the line a person added. A boot with nothing changed writes
// no file and runs nothing.
func TestBootAppliesAdminChanges(t *testing.T) {
	// As root admin is another user (uid 0's keys are cloud-init's), so
	// that the ownership of what is written is tested.
	uidN, gidN := os.Getuid(), os.Getgid()
	if uidN == 0 {
		uidN, gidN = 4242, 4243
	}
	uid, gid := strconv.Itoa(uidN), strconv.Itoa(gidN)
	root := kvmRoot(t, map[string]string{
		"etc/passwd":          "root:x:0:0:root:/root:/bin/sh\nadmin:x:" + uid + ":" + gid + "::/home/admin:/bin/sh\n",
		"etc/cloud/cloud.cfg": "system_info:\n  default_user:\n    name: debian\n",
		"home/admin/.profile": "",
	})
	// The home is the user's, as useradd makes it.
	if err := os.Lchown(filepath.Join(root, "home/admin"), uidN, gidN); err != nil {
		t.Fatal(err)
	}
	var calls []ran

	// Boot 1: a new instance; cloud-init applies everything.
	adminSeed(t, root, "vm101", hashOne, adminKeyA)
	st := bootWith(t, root, &calls)
	if c := st.Changes; c == nil || !strings.Contains(c.Baseline, "new instance") || len(calls) != 0 {
		t.Fatalf("boot 1: changes %+v, ran %q", st.Changes, calls)
	}
	cloudInitRan(t, root, adminKeyA)

	// Boot 2: nothing changed: nothing written, nothing run (after a boot
	// that has seen cloud-init's record of the first, as the guest's
	// unchanged-boot check compares).
	bootWith(t, root, &calls)
	before := fileStates(t, root)
	st = bootWith(t, root, &calls)
	after := fileStates(t, root)
	delete(before, filepath.Join(root, agent.StatusPath))
	delete(after, filepath.Join(root, agent.StatusPath))
	for p, s := range after {
		if before[p] != s {
			t.Errorf("unchanged boot rewrote %s", p)
		}
	}
	if len(before) != len(after) {
		t.Errorf("unchanged boot: %d files, was %d", len(after), len(before))
	}
	if c := st.Changes; c == nil || c.Baseline != "" || len(c.Changed) != 0 || len(calls) != 0 {
		t.Errorf("unchanged boot: changes %+v, ran %q", st.Changes, calls)
	}

	// Boot 3: the admin adds key B, renames the VM, sets a new password.
	adminSeed(t, root, "vm102", hashTwo, adminKeyA, adminKeyB)
	st = bootWith(t, root, &calls)
	keys := rootFile(t, root, "home/admin/.ssh/authorized_keys")
	if keys != adminKeyA+"\n"+adminKeyB+"\n" {
		t.Errorf("boot 3: authorized_keys %q, want key A then key B", keys)
	}
	wantRun := []ran{{[]string{"chpasswd", "-e", "-R", root}, "admin:" + hashTwo + "\n"}}
	if !slices.EqualFunc(calls, wantRun, func(a, b ran) bool { return slices.Equal(a.argv, b.argv) && a.stdin == b.stdin }) {
		t.Errorf("boot 3 ran %q, want %q", calls, wantRun)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/cloud/instances/iid-admin-01/obj.pkl")); !os.IsNotExist(err) {
		t.Errorf("boot 3: cloud-init's cached datasource is still there (%v): it would not read the new hostname", err)
	}
	if !strings.Contains(seedFile(t, root, "user-data"), "hostname: vm102") {
		t.Error("boot 3: the seed does not carry the new hostname")
	}
	changed, applied, waiting := st.Changes.Lines()
	for _, w := range []string{"keys:admin changed", "password:admin changed", "user-data:hostname changed", "user-data:fqdn changed"} {
		if !strings.Contains(changed, w) {
			t.Errorf("boot 3: changed line %q lacks %q", changed, w)
		}
	}
	for _, w := range []string{"keys:admin: 1 added, 0 removed", "password:admin: set", "user-data:hostname: by cloud-init", "cached datasource was removed"} {
		if !strings.Contains(applied, w) {
			t.Errorf("boot 3: applied line %q lacks %q", applied, w)
		}
	}
	if waiting != "" {
		t.Errorf("boot 3: waiting %q, want nothing (package_upgrade did not change)", waiting)
	}
	if strings.Contains(changed+applied, "AdminKeyB") || strings.Contains(changed+applied, hashTwo) {
		t.Error("boot 3: the status quotes a key or the password")
	}
	if id := metaDataID(t, root); id != "iid-admin-01" {
		t.Errorf("boot 3: instance ID %s", id)
	}

	// A person adds a key by hand; the admin removes key B and turns
	// package_upgrade off.
	putFile(t, root, "home/admin/.ssh/authorized_keys", keys+handKey+"\n")
	os.Lchown(filepath.Join(root, "home/admin/.ssh/authorized_keys"), uidN, gidN)
	calls = nil
	adminSeed(t, root, "vm102", hashTwo, adminKeyA)
	seedUD := filepath.Join(root, "var/lib/cloud/seed/nocloud-net/user-data")
	b, _ := os.ReadFile(seedUD)
	os.WriteFile(seedUD, []byte(strings.Replace(string(b), "package_upgrade: true", "package_upgrade: false", 1)), 0o644)
	st = bootWith(t, root, &calls)
	if got := rootFile(t, root, "home/admin/.ssh/authorized_keys"); got != adminKeyA+"\n"+handKey+"\n" {
		t.Errorf("boot 4: authorized_keys %q, want key A and the hand key", got)
	}
	if len(calls) != 0 {
		t.Errorf("boot 4: ran %q; the password did not change", calls)
	}
	if _, _, waiting := st.Changes.Lines(); !strings.Contains(waiting, "user-data:package_upgrade") {
		t.Errorf("boot 4: waiting %q, want package_upgrade", waiting)
	}

	// Key B again, but authorized_keys is now a link to /etc/shadow: the
	// write is refused and says so; the record keeps the old key set,
	// so the next boot tries again.
	p := filepath.Join(root, "home/admin/.ssh/authorized_keys")
	os.Remove(p)
	putFile(t, root, "etc/shadow", "root:*:1::::::\n")
	if err := os.Symlink("/etc/shadow", p); err != nil {
		t.Fatal(err)
	}
	adminSeed(t, root, "vm102", hashTwo, adminKeyA, adminKeyB)
	st = bootWith(t, root, &calls)
	if _, applied, _ := st.Changes.Lines(); !strings.Contains(applied, "FAILED keys:admin") || !strings.Contains(applied, "symbolic link") {
		t.Errorf("planted link: applied line %q, want the refusal", applied)
	}
	if got := rootFile(t, root, "etc/shadow"); got != "root:*:1::::::\n" {
		t.Errorf("/etc/shadow changed: %q", got)
	}
	st = bootWith(t, root, &calls)
	if changed, _, _ := st.Changes.Lines(); !strings.Contains(changed, "keys:admin changed") {
		t.Errorf("next boot: changed %q, want the key change tried again", changed)
	}
}

// The record is seedkeeper's state: 0600, and never holds a key or a
// password in clear.
func TestBootRecordHoldsNoSecret(t *testing.T) {
	root := kvmRoot(t, map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n"})
	adminSeed(t, root, "vm101", "plain-secret-pw", adminKeyA)
	var calls []ran
	bootWith(t, root, &calls)
	p := filepath.Join(root, intent.RecordPath)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v", fi.Mode())
	}
	b := rootFile(t, root, intent.RecordPath)
	for _, s := range []string{"plain-secret-pw", "AdminKeyA", "alice"} {
		if strings.Contains(b, s) {
			t.Errorf("the record holds %q", s)
		}
	}
}

func rootFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func putFile(t *testing.T, root, name, data string) {
	t.Helper()
	p := filepath.Join(root, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
