package intent

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
)

func vmwareMD(keys ...string) *datasource.Metadata {
	return &datasource.Metadata{Source: datasource.SourceVMware, InstanceID: "vm-1", Hostname: "web1", PublicKeys: keys}
}

// VMware with vmware.redact: the second boot reads the guestinfo wiped,
// no keys at all. That is no admin removing them: nothing is compared,
// nothing removed, the record kept.
func TestApplyRedactedRemovesNothing(t *testing.T) {
	root, a := userRoot(t)
	write(t, string(root), "etc/cloud/cloud.cfg", "system_info:\n  default_user:\n    name: admin\n", 0o644)
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(keyA), InstanceID: "vm-1", NewInstance: true, Redacted: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA}, nil); err != nil { // what cloud-init did
		t.Fatal(err)
	}
	rec1 := read(t, root.Path(RecordPath))
	res, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(), InstanceID: "vm-1", Redacted: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Baseline, "redacted") || len(res.Changed) != 0 {
		t.Errorf("redacted boot: %+v", res)
	}
	if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != keyA+"\n" {
		t.Errorf("redacted boot changed authorized_keys: %q", got)
	}
	if read(t, root.Path(RecordPath)) != rec1 {
		t.Error("redacted boot rewrote the record")
	}
	// Without redaction the same empty read is a removal.
	res, err = Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(), InstanceID: "vm-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != "" || len(res.Applied) != 1 {
		t.Errorf("key removed from the metadata: file %q, applied %q", got, res.Applied)
	}
}

// A record of another instance (a new explicit ID) is not compared with:
// the boot is a baseline.
func TestApplyOtherInstanceIsBaseline(t *testing.T) {
	root, _ := userRoot(t)
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(keyA), InstanceID: "vm-1", NewInstance: true}); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(keyB), InstanceID: "vm-2"})
	if err != nil || !strings.Contains(res.Baseline, "no record") || len(res.Changed) != 0 {
		t.Errorf("another instance: %+v, %v", res, err)
	}
	// A record that is not one is replaced, and says so.
	os.WriteFile(root.Path(RecordPath), []byte("{not json"), 0o600)
	res, err = Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(keyB), InstanceID: "vm-2"})
	if err != nil || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "not a record") || strings.Contains(res.Warnings[0], "not json") {
		t.Errorf("corrupt record: %+v, %v", res, err)
	}
	// ...and kept aside, for a person: nothing of it is lost.
	if got := read(t, root.Path(BadRecordPath)); got != "{not json" || !strings.Contains(res.Warnings[0], "kept as") {
		t.Errorf("the corrupt record kept as %q (warning %q)", got, res.Warnings[0])
	}
}

// ciuser renamed on a kept instance: the new user does not exist yet, so
// its keys wait, and the old user keeps the keys it had: a rename must
// not lock the admin out.
func TestApplyUserRenamedKeepsKeys(t *testing.T) {
	root, a := userRoot(t)
	md := func(user string) *datasource.Metadata {
		return &datasource.Metadata{Source: datasource.SourceNoCloud, InstanceID: "iid-1",
			UserData: []byte("#cloud-config\nuser: " + user + "\nssh_authorized_keys: [" + keyA + "]\n")}
	}
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: md("admin"), InstanceID: "iid-1", NewInstance: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Metadata: md("ops"), InstanceID: "iid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != keyA+"\n" {
		t.Errorf("admin's keys after the rename: %q", got)
	}
	changed, applied, waiting := res.Lines()
	if !strings.Contains(waiting, "keys:ops: the user does not exist") || !strings.Contains(waiting, "user-data:user") ||
		!strings.Contains(applied, "keys:admin: the metadata names this user no more") {
		t.Errorf("changed %q\napplied %q\nwaiting %q", changed, applied, waiting)
	}
}

// A new instance on a disk that already has a key by hand (a clone, a
// reset): cloud-init leaves that line as it is, so it stays the person's
// and a later boot that drops the key from the metadata leaves it; the
// key cloud-init adds is the metadata's and goes.
func TestApplyNewInstanceKeepsHandKeys(t *testing.T) {
	root, a := userRoot(t)
	write(t, string(root), "etc/cloud/cloud.cfg", "system_info:\n  default_user:\n    name: admin\n", 0o644)
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{handKey}, nil); err != nil { // by hand, on the source VM
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(handKey, keyA), InstanceID: "vm-1", NewInstance: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{handKey, keyA}, nil); err != nil { // what cloud-init did
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(), InstanceID: "vm-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != handKey+"\n" {
		t.Errorf("after the metadata dropped both keys: %q, want the hand key only (%+v)", got, res)
	}
}

// The metadata names a uid 0 account: its keys are not written (cloud-
// init's disable_root governs them), and the status says so.
func TestApplyRootKeysWait(t *testing.T) {
	root, _ := userRoot(t)
	if err := os.MkdirAll(root.Path("/root"), 0o700); err != nil {
		t.Fatal(err)
	}
	md := func(keys ...string) *datasource.Metadata {
		return &datasource.Metadata{Source: datasource.SourceNoCloud, InstanceID: "iid-1",
			UserData: []byte("#cloud-config\nuser: root\nssh_authorized_keys: [" + strings.Join(keys, ", ") + "]\n")}
	}
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: md(keyA), InstanceID: "iid-1", NewInstance: true}); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Metadata: md(keyA, keyB), InstanceID: "iid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root.Path("/root/.ssh/authorized_keys")); err == nil {
		t.Error("root's authorized_keys was written")
	}
	if _, _, waiting := res.Lines(); !strings.Contains(waiting, "keys:root: a uid 0 account") {
		t.Errorf("waiting %q", waiting)
	}
}

// A placeholder instance ID is no identity: a clone of the disk boots with
// the same one, with the metadata of another VM. Nothing is compared, so
// the first VM's metadata keys are not removed from the clone.
func TestApplyPlaceholderRemovesNothing(t *testing.T) {
	root, a := userRoot(t)
	write(t, string(root), "etc/cloud/cloud.cfg", "system_info:\n  default_user:\n    name: admin\n", 0o644)
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(keyA), InstanceID: "iid-datasource-none", NewInstance: true, Placeholder: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA}, nil); err != nil { // what cloud-init did
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(keyB), InstanceID: "iid-datasource-none", Placeholder: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != keyA+"\n" {
		t.Errorf("a placeholder ID: authorized_keys %q, want it untouched", got)
	}
	if !strings.Contains(res.Baseline, "placeholder") || len(res.Changed)+len(res.Applied) != 0 {
		t.Errorf("a placeholder ID: %+v", res)
	}
}

// A key of the user-data dropped as unusable (a mapping where a key
// should be, a control character) is one bad field: it does not make the
// keys it stood among count as removed. That boot only adds; once the
// list is whole again, a key it no longer has is removed.
func TestApplyDroppedKeyRemovesNothing(t *testing.T) {
	root, a := userRoot(t)
	const keyC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICarolKeyC carol@box"
	md := func(keys ...string) *datasource.Metadata {
		return &datasource.Metadata{Source: datasource.SourceNoCloud, InstanceID: "iid-1",
			UserData: []byte("#cloud-config\nuser: admin\nssh_authorized_keys:\n  - " + strings.Join(keys, "\n  - ") + "\n")}
	}
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: md(keyA, keyB), InstanceID: "iid-1", NewInstance: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA, keyB}, nil); err != nil { // what cloud-init did
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Metadata: md(keyA, "{not: a key}", keyC), InstanceID: "iid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, root.Path("/home/admin/.ssh/authorized_keys")), keyA+"\n"+keyB+"\n"+keyC+"\n"; got != want {
		t.Errorf("a dropped key: authorized_keys %q, want %q", got, want)
	}
	if _, applied, _ := res.Lines(); !strings.Contains(applied, "1 added, 0 removed") || !strings.Contains(applied, "dropped as unusable") {
		t.Errorf("applied %q", applied)
	}
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: md(keyA, keyC), InstanceID: "iid-1"}); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, root.Path("/home/admin/.ssh/authorized_keys")), keyA+"\n"+keyC+"\n"; got != want {
		t.Errorf("the list whole again: authorized_keys %q, want %q", got, want)
	}
}

// A #cloud-config that does not decode (a typo in the admin's user-data)
// is no removal of the user, keys and password it named: they stay, the
// status says why, and once it decodes again it is compared with the
// last one that did.
func TestApplyBrokenUserDataRemovesNothing(t *testing.T) {
	root, a := userRoot(t)
	write(t, string(root), "etc/cloud/cloud.cfg", "system_info:\n  default_user:\n    name: admin\n", 0o644)
	md := func(ud string) *datasource.Metadata {
		return &datasource.Metadata{Source: datasource.SourceNoCloud, InstanceID: "iid-1", UserData: []byte(ud)}
	}
	good := "#cloud-config\nuser: admin\nssh_authorized_keys: [" + keyA + "]\npackage_upgrade: false\n"
	var calls int
	run := func(context.Context, []string, []byte) error { calls++; return nil }
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: md(good), InstanceID: "iid-1", NewInstance: true, Run: run}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA}, nil); err != nil { // what cloud-init did
		t.Fatal(err)
	}
	for _, broken := range []string{
		"#cloud-config\nuser: admin\nssh_authorized_keys: [" + keyA + "\n  package_upgrade: : :\n",
		"#cloud-config\n- just\n- a list\n",
	} {
		res, err := Apply(context.Background(), Options{Root: root, Metadata: md(broken), InstanceID: "iid-1", Run: run})
		if err != nil {
			t.Fatal(err)
		}
		if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != keyA+"\n" {
			t.Errorf("broken user-data: authorized_keys %q, want key A still", got)
		}
		if _, _, waiting := res.Lines(); !strings.Contains(waiting, "does not decode") {
			t.Errorf("broken user-data: waiting %q", waiting)
		}
	}
	res, err := Apply(context.Background(), Options{Root: root, Metadata: md(strings.Replace(good, keyA, keyA+", "+keyB, 1)), InstanceID: "iid-1", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != keyA+"\n"+keyB+"\n" {
		t.Errorf("decoding again: authorized_keys %q", got)
	}
	if changed, _, _ := res.Lines(); changed != "keys:admin changed" || calls != 0 {
		t.Errorf("decoding again: changed %q (want only the key, compared with the last good one), ran %d", changed, calls)
	}
}

// The same for a meta-data public key the source dropped as unusable: the
// keys beside it do not count as removed.
func TestApplyDroppedMetaDataKeyRemovesNothing(t *testing.T) {
	root, a := userRoot(t)
	write(t, string(root), "etc/cloud/cloud.cfg", "system_info:\n  default_user:\n    name: admin\n", 0o644)
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: vmwareMD(keyA, keyB), InstanceID: "vm-1", NewInstance: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA, keyB}, nil); err != nil { // what cloud-init did
		t.Fatal(err)
	}
	md := vmwareMD(keyA)
	md.PublicKeysDropped = 1 // key B, edited into one with a control character
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: md, InstanceID: "vm-1"}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, root.Path("/home/admin/.ssh/authorized_keys")); got != keyA+"\n"+keyB+"\n" {
		t.Errorf("a dropped meta-data key: authorized_keys %q, want both keys still", got)
	}
}
