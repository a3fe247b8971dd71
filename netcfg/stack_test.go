package netcfg

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/stacks"
)

// stackRoot makes a root of files and links (system path -> content or
// target).
func stackRoot(t *testing.T, files, links map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	unitDir   = "/lib/systemd/system/"
	wantsDir  = "/etc/systemd/system/multi-user.target.wants/"
	unitBody  = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	debianIfs = "# comment\nsource /etc/network/interfaces.d/*\n\nauto lo\niface lo inet loopback\n"
)

// units installs each unit in /lib/systemd/system, into files.
func units(files map[string]string, names ...string) map[string]string {
	if files == nil {
		files = map[string]string{}
	}
	for _, n := range names {
		files[unitDir+n] = unitBody
	}
	return files
}

// enabled links each unit into multi-user.target.wants, into links.
func enabled(links map[string]string, names ...string) map[string]string {
	if links == nil {
		links = map[string]string{}
	}
	for _, n := range names {
		links[wantsDir+n] = unitDir + n
	}
	return links
}

const (
	nmUnit  = "NetworkManager.service"
	ndUnit  = "systemd-networkd.service"
	ifdUnit = "networking.service"
)

func TestDetectStack(t *testing.T) {
	all := func() map[string]string { return units(nil, nmUnit, ndUnit, ifdUnit) }
	withFiles := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name         string
		files, links map[string]string
		want         *Stack
		enabled      []*Stack
		dir          string
		note         string
	}{
		{name: "nothing", files: all()},
		{name: "networkd", files: all(), links: enabled(nil, ndUnit), want: Networkd},
		{name: "networkd running", files: withFiles(all(), "/run/systemd/netif/state", ""), want: Networkd},
		// systemd's tmpfiles make /run/systemd/netif/links on every system.
		{name: "netif dir alone", files: withFiles(all(), "/run/systemd/netif/links/.keep", "")},
		{
			name:  "networkmanager over networkd",
			files: withFiles(all(), "/usr/sbin/NetworkManager", ""), links: enabled(nil, nmUnit, ndUnit),
			want: NetworkManager, enabled: []*Stack{NetworkManager, Networkd},
		},
		{
			name:  "networkmanager unit without the program",
			files: all(), links: enabled(nil, nmUnit),
			note: "/usr/sbin/NetworkManager is not installed",
		},
		{
			// Boot used to render NetworkManager keyfiles on this root
			// while image check said networkd.
			name:  "networkmanager masked, its .wants link left",
			files: withFiles(all(), "/usr/sbin/NetworkManager", ""),
			links: withFiles(enabled(nil, nmUnit, ndUnit), "/etc/systemd/system/"+nmUnit, "/dev/null"),
			want:  Networkd, note: "NetworkManager.service is masked",
		},
		{
			name:  "a .wants link without the unit",
			files: map[string]string{"/usr/sbin/NetworkManager": ""}, links: enabled(nil, nmUnit),
		},
		{
			name:  "ifupdown debian default",
			files: withFiles(all(), "/sbin/ifup", "", "/etc/network/interfaces", debianIfs), links: enabled(nil, ifdUnit),
			want: Ifupdown, dir: "/etc/network/interfaces.d",
		},
		{
			name:  "ifupdown source-directory relative",
			files: withFiles(all(), "/usr/sbin/ifup", "", "/etc/network/interfaces", "source-directory interfaces.d\n"), links: enabled(nil, ifdUnit),
			want: Ifupdown, dir: "/etc/network/interfaces.d",
		},
		{
			name:  "ifupdown sourcing nothing",
			files: withFiles(all(), "/sbin/ifup", "", "/etc/network/interfaces", "auto lo\niface lo inet loopback\nsource /etc/network/x-*.cfg\n"), links: enabled(nil, ifdUnit),
			want: Ifupdown,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DetectStack(stackRoot(t, tc.files, tc.links))
			if err != nil {
				t.Fatal(err)
			}
			if d.Stack != tc.want || d.Dir != tc.dir || d.Reason == "" {
				t.Errorf("got %s (%s) dir %q, want %s dir %q", d.Stack, d.Reason, d.Dir, tc.want, tc.dir)
			}
			if tc.enabled == nil && tc.want != nil {
				tc.enabled = []*Stack{tc.want}
			}
			if !slices.Equal(d.Enabled, tc.enabled) {
				t.Errorf("enabled %v, want %v", d.Enabled, tc.enabled)
			}
			if tc.note != "" && !strings.Contains(strings.Join(d.Notes, "; "), tc.note) {
				t.Errorf("notes %q do not say %q", d.Notes, tc.note)
			}
		})
	}
	root := stackRoot(t, map[string]string{unitDir + ifdUnit: unitBody, "/sbin/ifup": "", "/etc/network/interfaces": "source ../../var/tmp/*\n"}, enabled(nil, ifdUnit))
	if _, err := DetectStack(root); err == nil || !strings.Contains(err.Error(), "line 1") || strings.Contains(err.Error(), "var/tmp") {
		t.Errorf("a sourced directory outside /etc: err %v", err)
	}
}

// An image at rest: its /run is not what boots.
func TestDetectImageStackIgnoresRun(t *testing.T) {
	files := units(map[string]string{"/run/systemd/netif/state": "", "/usr/sbin/NetworkManager": ""}, nmUnit, ndUnit)
	links := enabled(nil, nmUnit)
	links["/run/systemd/system/"+nmUnit] = "/dev/null"
	root := stackRoot(t, files, links)
	live, err := DetectStack(root)
	if err != nil || live.Stack != Networkd {
		t.Errorf("live: %s (%s), %v; want networkd (running, NetworkManager masked at runtime)", live.Stack, live.Reason, err)
	}
	img, err := DetectImageStack(root)
	if err != nil || img.Stack != NetworkManager {
		t.Errorf("image: %s (%s), %v; want NetworkManager", img.Stack, img.Reason, err)
	}
}

// An interfaces file that is a link out of the root is read inside it.
func TestIfupdownSourceDirStaysInRoot(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "interfaces")
	os.WriteFile(outside, []byte("source /etc/network/elsewhere/*\n"), 0o644)
	root := stackRoot(t, map[string]string{"/etc/net/interfaces": debianIfs}, map[string]string{ifupdownInterfaces: outside})
	dir, err := ifupdownSourceDir(root)
	if err != nil || dir != "" {
		t.Errorf("followed a link out of the root: %q, %v", dir, err)
	}
	os.Remove(filepath.Join(root, ifupdownInterfaces))
	os.Symlink("/etc/net/interfaces", filepath.Join(root, ifupdownInterfaces))
	if dir, err := ifupdownSourceDir(root); err != nil || dir != "/etc/network/interfaces.d" {
		t.Errorf("a link inside the root: %q, %v", dir, err)
	}
}

// TestStacksTable pins every list derived from the stack table to it:
// names and units are unique, every file a stack renders is in one of its
// places and recognised there as seedkeeper's (so boot replaces and seal
// removes exactly what boot wrote), and no place claims another tool's
// file or a file without seedkeeper's header.
func TestStacksTable(t *testing.T) {
	c := mustParse(t, proxmoxV1)
	seen := map[string]bool{}
	for _, s := range Stacks {
		for _, k := range []string{"name " + s.Name, "title " + s.Title, "unit " + s.Unit} {
			if seen[k] || strings.HasSuffix(k, " ") {
				t.Errorf("%s: %s empty or not unique", s, k)
			}
			seen[k] = true
		}
		if stackByName(s.Name) != s || s.render == nil || s.duties.Places == nil || s.duties.Reload == nil {
			t.Errorf("%s: incomplete", s)
		}
		root := stackRoot(t, map[string]string{ifupdownInterfaces: debianIfs}, nil)
		places, err := stacks.Of(s.Name).Places(root)
		if err != nil || len(places) == 0 {
			t.Fatalf("%s: places %v, %v", s, places, err)
		}
		d := Detection{Stack: s, Dir: "/etc/network/interfaces.d"}
		sf, err := s.Render(d, c, nil)
		if err != nil || sf.Stack != s || len(sf.Files) == 0 {
			t.Fatalf("%s: render %+v, %v", s, sf, err)
		}
		ours := func(p string, b []byte) bool {
			for _, pl := range places {
				if pl.Dir == path.Dir(p) && pl.Ours(path.Base(p), b) {
					return true
				}
			}
			return false
		}
		for n, b := range sf.Files {
			if !ours(path.Join(sf.Dir, n), b) {
				t.Errorf("%s: %s in %s is not recognised as seedkeeper's by %v", s, n, sf.Dir, places)
			}
		}
		for p, b := range sf.Extra {
			if !ours(p, b) {
				t.Errorf("%s: %s is not recognised as seedkeeper's", s, p)
			}
		}
		for _, pl := range places {
			for _, other := range []string{"10-netplan-eth0.network", "Wired connection 1.nmconnection", "eth0", "interfaces", "50-cloud-init", "90-dns.conf"} {
				if pl.Ours(other, []byte(Header+"\n")) {
					t.Errorf("%s: claims another tool's %s in %s", s, other, pl.Dir)
				}
			}
			for n := range sf.Files {
				if pl.Dir == sf.Dir && pl.Ours(n, []byte("[Match]\nName=eth0\n")) {
					t.Errorf("%s: claims %s without seedkeeper's header", s, n)
				}
			}
		}
	}
	// The networkd files seedkeeper wrote under its old "10-" name are
	// still its own, to replace and remove after an upgrade.
	if pl, _ := stacks.Of("networkd").Places(""); !pl[0].Ours("10-seedkeeper-eth0.network", []byte(Header+"\n")) {
		t.Error("networkd: a file of the old name is not seedkeeper's")
	}
	if stackByName("wicked") != nil {
		t.Error("an unknown stack by name")
	}
}

func TestRenderForStack(t *testing.T) {
	c := mustParse(t, proxmoxV1)
	for _, tc := range []struct {
		d     Detection
		dir   string
		files []string
		mode  os.FileMode
		note  bool
	}{
		{d: Detection{Stack: Networkd}, dir: "/run/systemd/network", files: []string{"05-seedkeeper-eth0.network", "05-seedkeeper-eth1.network"}, mode: 0o644},
		{d: Detection{Stack: NetworkManager}, dir: nmConnectionDir, files: []string{"seedkeeper-eth0.nmconnection", "seedkeeper-eth1.nmconnection"}, mode: 0o600},
		{d: Detection{Stack: Ifupdown, Dir: "/etc/network/interfaces.d"}, dir: "/etc/network/interfaces.d", files: []string{ifupdownFile}, mode: 0o644},
		{d: Detection{Stack: Ifupdown}, note: true},
		{d: Detection{}, note: true},
	} {
		sf, err := renderForStack(tc.d, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for n := range sf.Files {
			names = append(names, n)
		}
		slices.Sort(names)
		if sf.Dir != tc.dir || !slices.Equal(names, tc.files) || (tc.dir != "" && sf.Mode != tc.mode) || (sf.Note != "") != tc.note {
			t.Errorf("%s: dir %q files %v mode %v note %q", tc.d.Stack, sf.Dir, names, sf.Mode, sf.Note)
		}
	}
}

func TestStackReload(t *testing.T) {
	stanzas := map[string][]byte{ifupdownFile: []byte(Header + "\nauto eth0\niface eth0 inet dhcp\n\nauto eth1\niface eth1 inet dhcp\n")}
	for _, tc := range []struct {
		name  string
		s     *Stack
		files map[string]string
		sf    map[string][]byte
		steps []string
	}{
		{name: "networkd not running", s: Networkd, files: map[string]string{systemBus: ""}},
		{name: "networkd before D-Bus", s: Networkd, files: map[string]string{"/run/systemd/netif/.keep": ""}},
		{name: "networkd", s: Networkd, files: map[string]string{"/run/systemd/netif/.keep": "", systemBus: ""}, steps: []string{"D-Bus org.freedesktop.network1.Manager.Reload"}},
		{name: "networkmanager before D-Bus", s: NetworkManager},
		{name: "networkmanager", s: NetworkManager, files: map[string]string{systemBus: ""}, steps: []string{"nmcli general reload conf", "nmcli connection reload"}},
		{name: "ifupdown before networking.service", s: Ifupdown, sf: stanzas},
		{name: "ifupdown", s: Ifupdown, files: map[string]string{ifupdownState: "lo=lo\neth1=eth1\n"}, sf: stanzas, steps: []string{"systemctl start --no-block ifup@eth0.service"}},
		{name: "ifupdown all up", s: Ifupdown, files: map[string]string{ifupdownState: "eth0=eth0\neth1=eth1\n"}, sf: stanzas},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.s.duties.Reload(stackRoot(t, tc.files, nil), tc.sf)
			var got []string
			for _, st := range r.Steps {
				got = append(got, st.String())
			}
			if !slices.Equal(got, tc.steps) || (len(got) == 0) != (r.Note != "") {
				t.Errorf("steps %q note %q, want %q", got, r.Note, tc.steps)
			}
		})
	}
}

// FuzzParseIfupdownSource: an image's interfaces file is outside input.
// Any bytes give "" or a clean absolute directory under /etc or /run, or
// an error that says where and quotes nothing.
func FuzzParseIfupdownSource(f *testing.F) {
	for _, s := range []string{debianIfs, "source-directory interfaces.d\n", "source ../../var/tmp/*\n", "source /etc/network/x-*.cfg\n", "source-dir /run/n\n", "source /etc/a/../../b/*\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir, err := parseIfupdownSource(b)
		if err != nil {
			if dir != "" || !strings.HasPrefix(err.Error(), ifupdownInterfaces) {
				t.Fatalf("%q, %v", dir, err)
			}
			for _, w := range strings.Fields(string(b)) {
				if len(w) > 8 && strings.Contains(err.Error(), w) {
					t.Fatalf("error %q quotes the input", err)
				}
			}
			return
		}
		if dir != "" && (dir != path.Clean(dir) || !(strings.HasPrefix(dir, "/etc/") || strings.HasPrefix(dir, "/run/"))) {
			t.Fatalf("directory %q", dir)
		}
	})
}

// The header the renderers write is the one the walker of seedkeeper's
// files recognises.
func TestHeaderIsTheWalkers(t *testing.T) {
	if Header != stacks.Header {
		t.Errorf("netcfg.Header %q, internal/stacks.Header %q", Header, stacks.Header)
	}
}

// Every stack's render is a view of one plan of the owned links
// (Config.Plan): it asks owned about the interfaces exactly as often as
// one Config.Plan does, so nothing in it decides again which links are
// owned, members, VLAN parents or stacked. (NetworkManager's drop-in
// decided them again from the configuration, and its render made the
// plan four times.)
func TestStackRenderIsOneViewOfThePlan(t *testing.T) {
	var docs []string
	for _, g := range []string{fixtures + "/valid/*", "testdata/conformance/*.yaml", "testdata/conformance/v1/*.yaml"} {
		m, _ := filepath.Glob(g)
		docs = append(docs, m...)
	}
	if len(docs) < 20 {
		t.Fatalf("only %d documents", len(docs))
	}
	rendered := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(b)
		if err != nil || len(c.Interfaces) == 0 {
			continue
		}
		// All but the first interface: a link not owned is in each.
		asked := 0
		owned := func(i *Interface) bool { asked++; return i.ID != c.Interfaces[0].ID }
		c.Plan(owned)
		once := asked
		for _, s := range Stacks {
			asked = 0
			if _, err := s.Render(Detection{Stack: s, Dir: "/etc/network/interfaces.d"}, c, owned); err != nil {
				continue
			}
			rendered++
			if asked != once {
				t.Errorf("%s: the %s render asked owned %d times; one plan asks %d", filepath.Base(doc), s.Name, asked, once)
			}
		}
	}
	if rendered < 3*20 {
		t.Errorf("only %d renders compared", rendered)
	}
}
