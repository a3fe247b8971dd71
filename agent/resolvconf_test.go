package agent

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// /etc/resolv.conf is written only when nothing else manages it: missing,
// or written by seedkeeper before; never a person's file, a symlink to a
// stub resolver, or when systemd-resolved runs.
func TestResolvConfOnlyWhenOurs(t *testing.T) {
	cfg := &netcfg.Config{
		Interfaces: []netcfg.Interface{{ID: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01",
			DNS: netcfg.DNS{Nameservers: []netip.Addr{netip.MustParseAddr("10.0.0.53")}}}},
		DNS: netcfg.DNS{Nameservers: []netip.Addr{netip.MustParseAddr("192.0.2.53")}, Search: []string{"example.lan"}},
	}
	want := netcfg.Header + "\nnameserver 192.0.2.53\nnameserver 10.0.0.53\nsearch example.lan\n"
	for _, tc := range []struct {
		name    string
		setup   func(root string)
		owned   []string
		content string // what /etc/resolv.conf must hold afterwards ("" = absent)
		outcome string
	}{
		{"missing", func(string) {}, []string{"eth0"}, want, "written"},
		{"ours, stale", func(r string) { write(t, r, "/etc/resolv.conf", netcfg.Header+"\nnameserver 1.1.1.1\n") }, []string{"eth0"}, want, "written"},
		{"ours, current", func(r string) { write(t, r, "/etc/resolv.conf", want) }, []string{"eth0"}, want, "unchanged"},
		{"a person's", func(r string) { write(t, r, "/etc/resolv.conf", "nameserver 9.9.9.9\n") }, []string{"eth0"}, "nameserver 9.9.9.9\n", "left alone: it was not written by seedkeeper"},
		{"stub symlink", func(r string) {
			write(t, r, "/run/stub-resolv.conf", "nameserver 127.0.0.53\n")
			os.Symlink(r+"/run/stub-resolv.conf", r+"/etc/resolv.conf")
		}, []string{"eth0"}, "nameserver 127.0.0.53\n", "left alone: it is a symbolic link (managed elsewhere)"},
		{"resolved", func(r string) { os.MkdirAll(r+"/run/systemd/resolve", 0o755) }, []string{"eth0"}, "", "left alone: systemd-resolved is in use"},
		{"no owned NIC", func(string) {}, nil, "", "left alone: seedkeeper owns no NIC here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "etc"), 0o755)
			tc.setup(root)
			e := &Env{Root: sysroot.Root(root)}
			e.init()
			res := &NetResult{}
			if err := e.writeResolvConf(cfg, tc.owned, res); err != nil {
				t.Fatal(err)
			}
			if res.ResolvConf != tc.outcome {
				t.Errorf("outcome %q, want %q", res.ResolvConf, tc.outcome)
			}
			b, err := os.ReadFile(filepath.Join(root, "etc/resolv.conf"))
			if got := string(b); (err != nil) != (tc.content == "") || got != tc.content {
				t.Errorf("resolv.conf = %q (%v), want %q", got, err, tc.content)
			}
			if strings.Contains(tc.name, "symlink") {
				if fi, _ := os.Lstat(filepath.Join(root, "etc/resolv.conf")); fi.Mode()&os.ModeSymlink == 0 {
					t.Error("the symlink was replaced")
				}
			}
		})
	}
}

func write(t *testing.T, root, path, data string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An image root whose /run is a link to a host directory: the rendered
// network files are not written (or removed) there.
func TestRenderNotThroughLinkedRun(t *testing.T) {
	cfg := &netcfg.Config{
		Interfaces: []netcfg.Interface{{ID: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01", DHCP4: true}},
	}
	host := t.TempDir()
	root := t.TempDir()
	if err := os.Symlink(host, filepath.Join(root, "run")); err != nil {
		t.Fatal(err)
	}
	e := &Env{Root: sysroot.Root(root)}
	e.init()
	if _, err := e.renderNetworkd(cfg, func(i *netcfg.Interface) bool { return i.ID == "eth0" }, awaited{}, &NetResult{}); err == nil {
		t.Errorf("rendered through a linked /run without an error")
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("written on the host: %v", ents)
	}
}

// An image root whose /var/lib is a link to a host directory: the network
// step refuses before it plans, so no receipt is written on the host.
func TestNetworkReceiptNotThroughLinkedStateDir(t *testing.T) {
	cfg := &netcfg.Config{
		Interfaces: []netcfg.Interface{{ID: "eth0", Kind: netcfg.Physical, MAC: "52:54:00:00:00:01", DHCP4: true}},
	}
	host := t.TempDir()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(root, "var", "lib")); err != nil {
		t.Fatal(err)
	}
	e := &Env{Root: sysroot.Root(root)}
	e.init()
	res, err := e.networkStep(context.Background(), cfg, hotplug.Allowlist{}, false)
	if err == nil || res.Action != "failed" {
		t.Errorf("network step through a linked /var/lib: %+v, %v", res, err)
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("written on the host: %v", ents)
	}
}
