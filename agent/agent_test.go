package agent_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// kvmRoot makes a scratch root whose DMI says KVM, with the files given
// (path under the root -> content).
func kvmRoot(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{
		"sys/class/dmi/id/product_name": "Standard PC (Q35 + ICH9, 2009)\n",
		"sys/class/dmi/id/sys_vendor":   "QEMU\n",
		"sys/class/dmi/id/product_uuid": "5e2a7d38-1b9c-4c1e-9f41-0d5b6a1c2e01\n",
	}
	for k, v := range files {
		all[k] = v
	}
	for name, data := range all {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// notes records what a flow tells the service manager.
type notes []string

func (n *notes) notify(s string) { *n = append(*n, s) }

func TestBootPersonSeedDir(t *testing.T) {
	root := kvmRoot(t, map[string]string{
		"var/lib/cloud/seed/nocloud/meta-data": "instance-id: iid-agent\nlocal-hostname: node1\n",
		"var/lib/cloud/seed/nocloud/user-data": "#cloud-config\n",
	})
	var n notes
	e := agent.Env{Root: sysroot.Root(root), Notify: n.notify, Version: "test"}
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	if st.Outcome != "ok" || st.Source != datasource.SourceNoCloud || st.Identity == nil || st.Identity.InstanceID != "iid-agent" {
		t.Errorf("status %+v", st)
	}
	if st.Network == nil || st.Network.Action != "skipped" || !strings.Contains(st.Network.Reason, "no network configuration") {
		t.Errorf("network %+v", st.Network)
	}
	md, err := os.ReadFile(filepath.Join(root, "var/lib/cloud/seed/nocloud/meta-data"))
	if err != nil || !strings.Contains(string(md), `instance-id: "iid-agent"`) {
		t.Errorf("seed meta-data %q (%v)", md, err)
	}
	saved, err := agent.ReadStatus(sysroot.Root(root))
	if err != nil || saved.Outcome != "ok" || saved.Seedkeeper != "test" || saved.Identity.InstanceID != "iid-agent" {
		t.Errorf("saved status %+v (%v)", saved, err)
	}
	if len(n) == 0 || n[len(n)-1] != "READY=1" {
		t.Errorf("notifications %q, want READY=1 last", n)
	}
}

// A boot without a source writes only the marker that holds cloud-init
// back this boot and its status, says why each source is not there, and
// tells the service manager.
func TestBootNoSource(t *testing.T) {
	root := kvmRoot(t, nil)
	before := filesUnder(t, root)
	var n notes
	st, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root), Notify: n.notify}, agent.BootOptions{})
	if !errors.Is(err, datasource.ErrNoSource) {
		t.Fatalf("Boot err = %v, want ErrNoSource", err)
	}
	if st.Outcome != "no-source" || st.Identity != nil || len(st.Candidates) != 3 {
		t.Errorf("status %+v", st)
	}
	if !slices.Contains(n, "STATUS=no metadata source on this machine") || !slices.Contains(n, "READY=1") {
		t.Errorf("notifications %q", n)
	}
	if _, err := agent.ReadStatus(sysroot.Root(root)); err != nil {
		t.Errorf("status not saved: %v", err)
	}
	want := append(before, "run/seedkeeper/no-source", "var/lib/seedkeeper/status.json")
	slices.Sort(want)
	if after := filesUnder(t, root); !slices.Equal(after, want) {
		t.Errorf("files after a boot with no source: %q, want %q", after, want)
	}
	for _, c := range st.Candidates {
		if c.Found || c.Reason == "" {
			t.Errorf("candidate %+v", c)
		}
	}
	if st.Seed != nil || st.CloudInit == nil || !strings.Contains(st.CloudInit.Reason, "no metadata source and no seed: cloud-init is skipped this boot") {
		t.Errorf("seed %+v, cloud-init %+v", st.Seed, st.CloudInit)
	}
}

// filesUnder lists the regular files under root, relative and sorted.
func filesUnder(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestReadStatusBeforeBoot(t *testing.T) {
	_, err := agent.ReadStatus(sysroot.Root(t.TempDir()))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadStatus before any boot: %v, want ErrNotExist", err)
	}
}

func TestWatchNothingToWatch(t *testing.T) {
	root := kvmRoot(t, nil)
	var n notes
	err := agent.Watch(context.Background(), agent.Env{Root: sysroot.Root(root), Notify: n.notify}, agent.WatchOptions{})
	if err != nil {
		t.Fatalf("Watch with no source: %v", err)
	}
	if want := "READY=1\nSTATUS=no metadata source on this machine; nothing to watch"; !slices.Equal(n, []string{want}) {
		t.Errorf("notifications %q, want %q", n, want)
	}
}

// Fetched never shows a secret unless asked: user-data and password-like
// meta-data keys are a size and a hash prefix.
func TestNormalizeRedacts(t *testing.T) {
	md := &datasource.Metadata{Source: "nocloud", UserData: []byte("#cloud-config\npassword: hunter2\n"),
		MetaData: map[string]any{"admin_pass": "hunter2", "region": "r1"}}
	out, err := agent.Normalize(md, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.UserData == nil || strings.Contains(*out.UserData, "hunter2") || !strings.HasPrefix(*out.UserData, "<redacted: 32 bytes, sha256 ") {
		t.Errorf("user_data %v", out.UserData)
	}
	if v, _ := out.MetaData["admin_pass"].(string); !strings.HasPrefix(v, "<redacted") || out.MetaData["region"] != "r1" {
		t.Errorf("meta_data %v", out.MetaData)
	}
	if !out.Redacted {
		t.Error("Redacted is false for a redacted Fetched")
	}
	shown, _ := agent.Normalize(md, true)
	if *shown.UserData != string(md.UserData) || shown.MetaData["admin_pass"] != "hunter2" || shown.Redacted {
		t.Errorf("--show-secrets: %v %v redacted=%v", *shown.UserData, shown.MetaData, shown.Redacted)
	}
}

// The default configuration of a root is the root's own file: an
// absolute link there is resolved inside the root, never on the host.
func TestLoadEnvConfigStaysInRoot(t *testing.T) {
	host := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(host, []byte("network:\n  owner: cloud-init\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "etc/seedkeeper/config.yaml")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(host, link); err != nil {
		t.Fatal(err)
	}
	e := agent.LoadEnv(dir, "", nil)
	if e.ConfigErr != nil {
		t.Fatal(e.ConfigErr)
	}
	if e.Config.Network.Owner == "cloud-init" {
		t.Errorf("the root's configuration was read from the host file %s", host)
	}
}
