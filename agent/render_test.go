package agent

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// stackRoots makes an image root that runs each stack.
var stackRoots = map[string]func(t *testing.T, root string){
	"networkd": func(t *testing.T, root string) {
		link(t, root, "etc/systemd/system/multi-user.target.wants/systemd-networkd.service")
	},
	"networkmanager": func(t *testing.T, root string) {
		link(t, root, "etc/systemd/system/multi-user.target.wants/NetworkManager.service")
		write(t, root, "/usr/sbin/NetworkManager", "")
	},
	"ifupdown": func(t *testing.T, root string) {
		link(t, root, "etc/systemd/system/multi-user.target.wants/networking.service")
		write(t, root, "/sbin/ifup", "")
		write(t, root, "/etc/network/interfaces", "source /etc/network/interfaces.d/*\n")
	},
}

// link enables the unit that the .wants link p names: the unit file in
// /lib/systemd/system and the link to it, as systemctl enable makes them.
func link(t *testing.T, root, p string) {
	t.Helper()
	unit := "/lib/systemd/system/" + filepath.Base(p)
	write(t, root, unit, "[Install]\nWantedBy=multi-user.target\n")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(unit, filepath.Join(root, p)); err != nil {
		t.Fatal(err)
	}
}

// virtioOnly is the allowlist of the plans renderPlanned makes.
var virtioOnly = hotplug.NewAllowlist(hotplug.OriginFlag, []string{"virtio_net"})

// renderPlanned plans cfg against live and renders it for each stack; it
// returns every file written, by stack, path under the root → content.
func renderPlanned(t *testing.T, cfg *netcfg.Config, live []apply.Link) (*apply.Plan, map[string]map[string]string) {
	t.Helper()
	p := apply.Diff(cfg, live, apply.Drivers("virtio_net"), nil)
	out := map[string]map[string]string{}
	for stack, mk := range stackRoots {
		root := t.TempDir()
		mk(t, root)
		e := &Env{Root: sysroot.Root(root)}
		e.init()
		res := &NetResult{}
		if err := e.render(context.Background(), cfg, p, virtioOnly, res, false); err != nil {
			t.Fatalf("%s: %v", stack, err)
		}
		if !strings.HasPrefix(res.Stack, stack) {
			t.Fatalf("rendered for %s, want %s", res.Stack, stack)
		}
		out[stack] = map[string]string{}
		for _, d := range []string{"run", "etc/network/interfaces.d"} {
			filepath.Walk(filepath.Join(root, d), func(path string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					b, _ := os.ReadFile(path)
					out[stack][strings.TrimPrefix(path, root)] = string(b)
				}
				return nil
			})
		}
		if len(out[stack]) == 0 {
			t.Fatalf("%s: nothing rendered", stack)
		}
	}
	return p, out
}

// The live planner refuses bridge eth9 because a foreign NIC holds that
// name; the networkd files still said [Match] Name=eth9 with an address
// and a default route, so networkd configured the foreign NIC. Every
// renderer follows the plan: no file names eth9, and the owned NIC is
// not made a port of it.
func TestRenderFollowsThePlanForeignName(t *testing.T) {
	cfg, err := netcfg.Parse([]byte(`version: 2
ethernets:
  e0: {match: {macaddress: "52:54:00:00:00:01"}, set-name: e0}
bridges:
  eth9: {interfaces: [e0], addresses: [192.0.2.9/24], gateway4: 192.0.2.1}
`))
	if err != nil {
		t.Fatal(err)
	}
	live := []apply.Link{
		{Index: 2, Name: "e0", MAC: "52:54:00:00:00:01", Up: true, MTU: 1500, Driver: "virtio_net"},
		{Index: 3, Name: "eth9", MAC: "52:54:00:99:99:99", Up: true, MTU: 1500, Kind: "device"},
	}
	p, files := renderPlanned(t, cfg, live)
	if slices.Contains(p.Owned, "eth9") || !slices.Contains(p.Owned, "e0") {
		t.Fatalf("plan owns %q", p.Owned)
	}
	for stack, fs := range files {
		for path, b := range fs {
			if strings.Contains(b, "eth9") || strings.Contains(b, "192.0.2.") {
				t.Errorf("%s: %s configures the refused bridge:\n%s", stack, path, b)
			}
		}
	}
}

// When a bond is not seedkeeper's (one member is not owned), the owned
// member's file said Bond=bond0 while no bond0.netdev was written, so that
// NIC got no configuration at all. It gets its own plain one, and no file
// names bond0.
func TestRenderFollowsThePlanBondNotOurs(t *testing.T) {
	cfg, err := netcfg.Parse([]byte(`version: 2
ethernets:
  e0: {match: {macaddress: "52:54:00:00:00:01"}, set-name: e0}
  e1: {match: {macaddress: "52:54:00:00:00:02"}, set-name: e1}
bonds:
  bond0: {interfaces: [e0, e1], dhcp4: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	live := []apply.Link{
		{Index: 2, Name: "e0", MAC: "52:54:00:00:00:01", Up: true, MTU: 1500, Driver: "virtio_net"},
		{Index: 3, Name: "e1", MAC: "52:54:00:00:00:02", Up: true, MTU: 1500, Driver: "e1000"}, // not allowed
	}
	p, files := renderPlanned(t, cfg, live)
	if slices.Contains(p.Owned, "bond0") || slices.Contains(p.Owned, "e1") {
		t.Fatalf("plan owns %q", p.Owned)
	}
	for stack, fs := range files {
		for path, b := range fs {
			if strings.Contains(b, "bond0") || strings.Contains(b, "52:54:00:00:00:02") {
				t.Errorf("%s: %s names a link no file defines:\n%s", stack, path, b)
			}
		}
	}
	want := map[string]string{
		"networkd":       "/run/systemd/network/05-seedkeeper-e0.network",
		"networkmanager": "/run/NetworkManager/system-connections/seedkeeper-e0.nmconnection",
		"ifupdown":       "/etc/network/interfaces.d/" + "50-seedkeeper",
	}
	for stack, path := range want {
		if _, ok := files[stack][path]; !ok {
			t.Errorf("%s: no plain file for the owned member e0; files %v", stack, keys(files[stack]))
		}
	}
	if b := files["ifupdown"][want["ifupdown"]]; !strings.Contains(b, "iface e0 inet manual\n") {
		t.Errorf("ifupdown:\n%s", b)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// What a stack's files cannot say of a link seedkeeper renders (here
// NetworkManager's keyfiles and use-ntp, ifupdown's stanzas and use-dns)
// was dropped with no word; it is named, with the link and the key, in
// the status and the log.
func TestRenderStackNotesReachStatusAndLog(t *testing.T) {
	cfg, err := netcfg.Parse([]byte(`version: 2
ethernets:
  e0: {match: {macaddress: "52:54:00:00:00:01"}, set-name: e0, dhcp4: true, dhcp4-overrides: {use-dns: false, use-ntp: false}}
`))
	if err != nil {
		t.Fatal(err)
	}
	live := []apply.Link{{Index: 2, Name: "e0", MAC: "52:54:00:00:00:01", Up: true, MTU: 1500, Driver: "virtio_net"}}
	p := apply.Diff(cfg, live, apply.Drivers("virtio_net"), nil)
	for stack, want := range map[string]string{
		"networkmanager": "e0: not applied by networkmanager: dhcp4-overrides.use-ntp",
		"ifupdown":       "e0: not applied by ifupdown: dhcp4-overrides.use-dns, dhcp4-overrides.use-ntp",
	} {
		root := t.TempDir()
		stackRoots[stack](t, root)
		var log strings.Builder
		e := &Env{Root: sysroot.Root(root), Log: slog.New(slog.NewTextHandler(&log, nil))}
		e.init()
		res := &NetResult{}
		if err := e.render(context.Background(), cfg, p, virtioOnly, res, false); err != nil {
			t.Fatalf("%s: %v", stack, err)
		}
		if !slices.Contains(res.Notes, want) {
			t.Errorf("%s: notes %q, want %q", stack, res.Notes, want)
		}
		if !strings.Contains(log.String(), want) {
			t.Errorf("%s: log lacks %q:\n%s", stack, want, log.String())
		}
	}
}

// A NIC the metadata configures that is not present at boot got no file
// until the watch applied it, and in between networkd gave the hot-added
// NIC whatever else matched it: on a netplan image the catch-all
// 10-netplan-all-en, a DHCP client the metadata never asked for. Its file
// is written ahead on networkd, matched by its MAC and the allowed
// drivers (on NetworkManager its profile, bound to the MAC and the
// drivers); a NIC matched by name only gets none, nor does a present NIC
// of a driver that is not allowed, and ifupdown is told nothing. An unchanged render rewrites nothing; when the NIC appears
// its file becomes the owned one under the same name; when a NIC of that
// MAC appears with a driver that is not allowed, the file goes.
func TestRenderWritesAheadOfAbsentNIC(t *testing.T) {
	cfg, err := netcfg.Parse([]byte(`version: 2
ethernets:
  e0: {match: {macaddress: "52:54:00:00:00:01"}, set-name: e0, addresses: [192.0.2.10/24], gateway4: 192.0.2.1, nameservers: {addresses: [192.0.2.53]}}
  hot: {match: {macaddress: "52:54:00:5e:ed:03"}, set-name: eth2, addresses: [10.0.3.20/24]}
  byname: {match: {name: ens9}, dhcp4: true}
  slow: {match: {macaddress: "52:54:00:00:00:07"}, dhcp4: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	allow := hotplug.NewAllowlist(hotplug.OriginFlag, []string{"vmxnet3", "virtio_net"})
	e0 := apply.Link{Index: 2, Name: "e0", MAC: "52:54:00:00:00:01", Up: true, MTU: 1500, Driver: "virtio_net"}
	slow := apply.Link{Index: 3, Name: "ens4", MAC: "52:54:00:00:00:07", Up: true, MTU: 1500, Driver: "e1000"}
	const dir = "/run/systemd/network/"
	var p *apply.Plan
	render := func(root string, live ...apply.Link) (*NetResult, map[string]string) {
		t.Helper()
		p = apply.Diff(cfg, live, allow.Allows, nil)
		e := &Env{Root: sysroot.Root(root)}
		e.init()
		res := &NetResult{}
		if err := e.render(context.Background(), cfg, p, allow, res, false); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		ents, _ := os.ReadDir(filepath.Join(root, dir))
		for _, ent := range ents {
			b, _ := os.ReadFile(filepath.Join(root, dir, ent.Name()))
			fi, _ := os.Stat(filepath.Join(root, dir, ent.Name()))
			files[ent.Name()] = string(b) + "\x00" + fi.ModTime().String()
		}
		return res, files
	}
	content := func(s string) string { return strings.Split(s, "\x00")[0] }

	root := t.TempDir()
	stackRoots["networkd"](t, root)
	res, boot := render(root, e0, slow)
	if got, want := slices.Sorted(maps.Keys(boot)), []string{"05-seedkeeper-e0.network", "05-seedkeeper-hot.network"}; !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q\nnotes %q", got, want, res.Notes)
	}
	hot := content(boot["05-seedkeeper-hot.network"])
	if !strings.Contains(hot, "\n[Match]\nMACAddress=52:54:00:5e:ed:03\nType=ether\nDriver=virtio_net vmxnet3\n\n") ||
		!strings.Contains(hot, "Address=10.0.3.20/24\n") || strings.Contains(hot, "192.0.2.") {
		t.Errorf("the file written ahead:\n%s", hot)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool {
		return strings.HasPrefix(n, "eth2: not present; 05-seedkeeper-hot.network written ahead")
	}) || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "byname: not present; no networkd file") }) {
		t.Errorf("notes %q", res.Notes)
	}
	if slices.Contains(p.Owned, "hot") || !slices.Equal(p.Absent, []string{"byname", "hot"}) {
		t.Errorf("owned %q, absent %q", p.Owned, p.Absent)
	}

	// The next render with nothing changed writes nothing.
	res, again := render(root, e0, slow)
	if !maps.Equal(boot, again) || len(res.Removed) != 0 {
		t.Errorf("unchanged render rewrote files: %q, removed %q", slices.Sorted(maps.Keys(again)), res.Removed)
	}

	// The NIC appears: the file of the same name is now the owned one.
	res, appeared := render(root, e0, slow, apply.Link{Index: 4, Name: "ens5", MAC: "52:54:00:5e:ed:03", Up: true, MTU: 1500, Driver: "virtio_net"})
	if !slices.Equal(slices.Sorted(maps.Keys(appeared)), slices.Sorted(maps.Keys(boot))) || len(res.Removed) != 0 || !slices.Contains(p.Owned, "hot") {
		t.Errorf("files %q, removed %q, owned %q", slices.Sorted(maps.Keys(appeared)), res.Removed, p.Owned)
	}
	if b := content(appeared["05-seedkeeper-hot.network"]); strings.Contains(b, "Driver=") || !strings.Contains(b, "MACAddress=52:54:00:5e:ed:03\nType=ether\n") {
		t.Errorf("the owned NIC's file:\n%s", b)
	}

	// A NIC of that MAC but a driver that is not allowed is not ours:
	// no file for it.
	res, refused := render(root, e0, slow, apply.Link{Index: 4, Name: "ens5", MAC: "52:54:00:5e:ed:03", Up: true, MTU: 1500, Driver: "e1000"})
	if _, ok := refused["05-seedkeeper-hot.network"]; ok || !slices.Contains(res.Removed, "05-seedkeeper-hot.network") {
		t.Errorf("files %q, removed %q", slices.Sorted(maps.Keys(refused)), res.Removed)
	}

	// NetworkManager gets the profile ahead, the same way: bound to the
	// MAC and the allowed drivers, and not allowed on any owned NIC
	// until it is owned; then it is the owned profile, and the drop-in
	// allows it on its NIC alone.
	nm := t.TempDir()
	stackRoots["networkmanager"](t, nm)
	nmFiles := func(live ...apply.Link) (*NetResult, map[string]string) {
		t.Helper()
		p = apply.Diff(cfg, live, allow.Allows, nil)
		e := &Env{Root: sysroot.Root(nm)}
		e.init()
		res := &NetResult{}
		if err := e.render(context.Background(), cfg, p, allow, res, false); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		for _, d := range []string{"/run/NetworkManager/system-connections", filepath.Dir("/run/NetworkManager/conf.d/50-seedkeeper.conf")} {
			ents, _ := os.ReadDir(filepath.Join(nm, d))
			for _, ent := range ents {
				b, _ := os.ReadFile(filepath.Join(nm, d, ent.Name()))
				files[ent.Name()] = string(b)
			}
		}
		return res, files
	}
	const hotKey, conf, aheadConf = "seedkeeper-hot.nmconnection", "50-seedkeeper.conf", "50-seedkeeper-ahead.conf"
	res, nmBoot := nmFiles(e0, slow)
	if got, want := slices.Sorted(maps.Keys(nmBoot)), []string{aheadConf, conf, "seedkeeper-e0.nmconnection", hotKey}; !slices.Equal(got, want) {
		t.Fatalf("NetworkManager files %q, want %q\nnotes %q", got, want, res.Notes)
	}
	hotUUID := profileUUID(nmBoot[hotKey])
	if k := nmBoot[hotKey]; !strings.Contains(k, "\n[match]\ndriver=virtio_net;vmxnet3;\n") || !strings.Contains(k, "\nmac-address=52:54:00:5E:ED:03\n") || hotUUID == "" || strings.Contains(k, "192.0.2.") {
		t.Errorf("the profile written ahead:\n%s", k)
	}
	if c := nmBoot[conf]; strings.Contains(c, hotUUID) || strings.Contains(strings.ToLower(c), "52:54:00:5e:ed:03") || !strings.Contains(c, "\nallowed-connections=uuid:") {
		t.Errorf("the drop-in before the NIC is owned:\n%s", c)
	}
	// NetworkManager must not take the NIC, once it appears, as
	// configured by someone else (the watch's live apply): it activates
	// seedkeeper's profile instead.
	if got, want := nmBoot[aheadConf], netcfg.Header+"\n[device-seedkeeper-ahead]\nmatch-device=mac:52:54:00:5e:ed:03\nkeep-configuration=no\n"; got != want {
		t.Errorf("the drop-in ahead:\n%s\nwant:\n%s", got, want)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool {
		return strings.HasPrefix(n, "eth2: not present; seedkeeper-hot.nmconnection written ahead")
	}) {
		t.Errorf("notes %q", res.Notes)
	}
	_, nmAppeared := nmFiles(e0, slow, apply.Link{Index: 4, Name: "ens5", MAC: "52:54:00:5e:ed:03", Up: true, MTU: 1500, Driver: "virtio_net"})
	if k := nmAppeared[hotKey]; strings.Contains(k, "[match]") || hotUUID != profileUUID(k) {
		t.Errorf("the owned NIC's profile (want the same UUID, no driver match):\n%s", k)
	}
	if c := nmAppeared[conf]; !strings.Contains(c, "uuid:"+hotUUID) || !strings.Contains(c, "mac:52:54:00:5e:ed:03") {
		t.Errorf("the drop-in once the NIC is owned:\n%s", c)
	}
	if c, ok := nmAppeared[aheadConf]; ok {
		t.Errorf("the drop-in ahead is left once no NIC is awaited:\n%s", c)
	}
	res, nmRefused := nmFiles(e0, slow, apply.Link{Index: 4, Name: "ens5", MAC: "52:54:00:5e:ed:03", Up: true, MTU: 1500, Driver: "e1000"})
	if _, ok := nmRefused[hotKey]; ok || !slices.Contains(res.Removed, hotKey) {
		t.Errorf("NetworkManager files %q, removed %q", slices.Sorted(maps.Keys(nmRefused)), res.Removed)
	}

	// ifupdown is told nothing of the absent NIC.
	for _, stack := range []string{"ifupdown"} {
		root := t.TempDir()
		stackRoots[stack](t, root)
		p := apply.Diff(cfg, []apply.Link{e0, slow}, allow.Allows, nil)
		e := &Env{Root: sysroot.Root(root)}
		e.init()
		if err := e.render(context.Background(), cfg, p, allow, &NetResult{}, false); err != nil {
			t.Fatal(err)
		}
		filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				if b, _ := os.ReadFile(path); strings.Contains(strings.ToLower(string(b)), "52:54:00:5e:ed:03") || strings.Contains(string(b), "eth2") {
					t.Errorf("%s: %s names the absent NIC:\n%s", stack, path, b)
				}
			}
			return nil
		})
	}
}

// profileUUID is the uuid= of a NetworkManager keyfile, "" when it has none.
func profileUUID(keyfile string) string {
	_, r, _ := strings.Cut(keyfile, "\nuuid=")
	u, _, _ := strings.Cut(r, "\n")
	return u
}
