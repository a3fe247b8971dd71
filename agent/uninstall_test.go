package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/nosource"
	"github.com/seedkeeper/seedkeeper/seed"
)

func writeT(t *testing.T, root sysroot.Root, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(root.Path(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root.Path(p), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renderAll writes what every stack's renderer makes for cfg, where the
// stack reads it, and returns the paths.
func renderAll(t *testing.T, root sysroot.Root, cfg *netcfg.Config) []string {
	t.Helper()
	var paths []string
	for _, d := range []netcfg.Detection{{Stack: netcfg.Networkd}, {Stack: netcfg.NetworkManager}, {Stack: netcfg.Ifupdown, Dir: "/etc/network/interfaces.d"}} {
		sf, err := d.Stack.Render(d, cfg, func(*netcfg.Interface) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		for n, b := range sf.Files {
			writeT(t, root, filepath.Join(sf.Dir, n), string(b))
			paths = append(paths, filepath.Join(sf.Dir, n))
		}
		for p, b := range sf.Extra {
			writeT(t, root, p, string(b))
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}

const uninstallNetwork = `version: 1
config:
  - type: physical
    name: eth0
    mac_address: "52:54:00:12:34:56"
    subnets:
      - type: static
        address: 192.0.2.10/24
        gateway: 192.0.2.1
`

// Uninstall removes the seed and every network file a renderer of ours
// wrote (networkd, NetworkManager, and the persistent ifupdown stanza),
// and leaves and names what is not ours any more; files of others are
// neither touched nor named.
func TestUninstall(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	cfg, err := netcfg.Parse([]byte(uninstallNetwork))
	if err != nil {
		t.Fatal(err)
	}
	rendered := renderAll(t, root, cfg)
	if len(rendered) < 4 {
		t.Fatalf("rendered only %v", rendered)
	}
	if _, err := seed.Write(string(root), seed.Seed{InstanceID: "i-1"}); err != nil {
		t.Fatal(err)
	}
	writeT(t, root, nosource.MarkerPath, "")
	writeT(t, root, "/etc/network/interfaces", "source /etc/network/interfaces.d/*\n")
	writeT(t, root, "/etc/network/interfaces.d/50-cloud-init", "auto eth0\n")
	writeT(t, root, "/run/systemd/network/05-seedkeeper-mine.network", "[Match]\nName=eth9\n")
	writeT(t, root, "/etc/resolv.conf", netcfg.Header+"\nnameserver 192.0.2.53\n")
	// Written under the name seedkeeper used before "05-".
	const legacy = "/run/systemd/network/10-seedkeeper-eth7.network"
	writeT(t, root, legacy, netcfg.Header+"\n[Match]\nName=eth7\n")
	rendered = append(rendered, legacy)

	u, err := Uninstall(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rendered {
		if _, err := os.Lstat(root.Path(p)); err == nil {
			t.Errorf("%s is still there", p)
		}
		if !slices.Contains(u.Removed, p) {
			t.Errorf("%s not listed as removed: %v", p, u.Removed)
		}
	}
	for _, p := range []string{nosource.MarkerPath, filepath.Join(seed.Dir, seed.MetaDataFile)} {
		if !slices.Contains(u.Removed, p) {
			t.Errorf("%s not listed as removed: %v", p, u.Removed)
		}
	}
	for _, p := range []string{"/etc/network/interfaces.d/50-cloud-init", "/run/systemd/network/05-seedkeeper-mine.network", "/etc/resolv.conf"} {
		if _, err := os.Lstat(root.Path(p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	named := func(p string) bool {
		return slices.ContainsFunc(u.Left, func(l string) bool { return strings.HasPrefix(l, p+": ") })
	}
	if !named("/run/systemd/network/05-seedkeeper-mine.network") || !named("/etc/resolv.conf") || named("/etc/network/interfaces.d/50-cloud-init") {
		t.Errorf("Left = %q", u.Left)
	}
	again, err := Uninstall(root)
	if err != nil || len(again.Removed) != 0 {
		t.Errorf("second Uninstall = %+v, %v; want nothing removed", again, err)
	}
}

// Apply removes a network file only while it holds what the plan read:
// one the admin edited after the plan (its header kept, so it still
// passes for seedkeeper's by its name and first line) is left and named,
// and the rest of the plan goes on. The plan's digest covers each file's
// content, so an edit of the same size and time is a changed plan too.
func TestUninstallApplyKeepsANetworkFileEditedAfterThePlan(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	cfg, err := netcfg.Parse([]byte(uninstallNetwork))
	if err != nil {
		t.Fatal(err)
	}
	rendered := renderAll(t, root, cfg)
	writeT(t, root, "/etc/network/interfaces", "source /etc/network/interfaces.d/*\n")
	edited := rendered[0] // the persistent ifupdown stanza
	p, err := PlanUninstall(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Actions, func(a UninstallAction) bool { return a.Op == seed.RemoveFile && a.Path == edited }) {
		t.Fatalf("the plan does not remove %s; the test proves nothing: %+v", edited, p.Actions)
	}
	before, err := os.Lstat(root.Path(edited))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(root.Path(edited))
	if err != nil {
		t.Fatal(err)
	}
	// The same size and modification time, another last byte.
	mine := append(b[:len(b)-1:len(b)-1], '#')
	if err := os.WriteFile(root.Path(edited), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(root.Path(edited), before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	if again, err := PlanUninstall(root); err != nil || again.Digest() == p.Digest() {
		t.Errorf("the plan after the edit has the digest of the plan before it (%v)", err)
	}

	u, err := p.Apply()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(root.Path(edited)); string(got) != string(mine) {
		t.Errorf("%s = %q after Apply; want the admin's edit kept", edited, got)
	}
	if slices.Contains(u.Removed, edited) || !slices.Contains(u.Left, edited+": changed since the plan was made; left in place") {
		t.Errorf("Removed %q, Left %q: want %s left and named", u.Removed, u.Left, edited)
	}
	for _, f := range rendered[1:] {
		if _, err := os.Lstat(root.Path(f)); err == nil || !slices.Contains(u.Removed, f) {
			t.Errorf("%s: not removed (%v), or not named in Removed %q", f, err, u.Removed)
		}
	}
}
