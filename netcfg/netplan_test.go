package netcfg

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/unit"
)

const (
	netplanGen = "/usr/lib/systemd/system-generators/netplan"
	// catchAll is what image builders leave in /etc/netplan: DHCP on every
	// en* and eth* NIC.
	catchAll = `network:
  version: 2
  ethernets:
    all-en:
      match: {name: "en*"}
      dhcp4: true
      dhcp6: true
    all-eth:
      match:
        name: "eth*"
      dhcp4: true
`
)

// netplanOn is what netplan renders at boot on root, as boot (live) or
// image check (an image at rest) sees it.
func netplanOn(root string, live bool) *stacks.NetplanInfo {
	return stacks.DetectNetplan(unit.Root{Dir: root, Live: live})
}

// globMatch is a glob of the tests' tables.
func globMatch(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return ok || err != nil && pattern == name
}

func TestDetectNetplan(t *testing.T) {
	files := map[string]string{
		netplanGen:                     "",
		"/etc/netplan/90-default.yaml": catchAll,
		"/lib/netplan/90-default.yaml": "network: {version: 2, ethernets: {shadowed: {}}}",
		"/lib/netplan/10-lib.yaml":     "network: {version: 2, renderer: NetworkManager, ethernets: {eth9: {dhcp4: true}}}",
		"/run/netplan/50-run.yaml":     "network: {version: 2, ethernets: {byid: {match: {macaddress: '52:54:00:AA:00:01'}}}}",
		"/etc/netplan/README":          "not yaml: [",
	}
	root := stackRoot(t, units(files, ndUnit), enabled(nil, ndUnit))
	d, err := DetectStack(root)
	np := netplanOn(root, true)
	if err != nil || d.Stack != Networkd || np == nil {
		t.Fatalf("DetectStack = %v, netplan %+v, %v", d.Stack, np, err)
	}
	if want := []string{"/lib/netplan/10-lib.yaml", "/run/netplan/50-run.yaml", "/etc/netplan/90-default.yaml"}; !slices.Equal(np.Files, want) || np.Generator != netplanGen || len(np.Notes) != 0 {
		t.Errorf("files %q generator %q notes %q, want %q", np.Files, np.Generator, np.Notes, want)
	}
	var got []string
	for _, e := range np.Entries {
		got = append(got, e.ID+"/"+e.Renderer+"/"+e.Describe())
	}
	want := []string{"eth9/NetworkManager/the link named eth9", "byid/networkd/match MAC 52:54:00:aa:00:01", "all-en/networkd/match name en*", "all-eth/networkd/match name eth*"}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}

	// An image at rest: its /run/netplan does not boot.
	if img := netplanOn(root, false); img == nil || slices.Contains(img.Files, "/run/netplan/50-run.yaml") {
		t.Errorf("image netplan = %+v", img)
	}

	// A masked generator renders nothing; so does netplan without YAML.
	masked := stackRoot(t, units(map[string]string{netplanGen: "", "/etc/netplan/90-default.yaml": catchAll}, ndUnit),
		enabled(map[string]string{"/etc/systemd/system-generators/netplan": "/dev/null"}, ndUnit))
	if np := netplanOn(masked, true); np != nil {
		t.Errorf("masked generator: netplan %+v", np)
	}
	bare := stackRoot(t, units(map[string]string{netplanGen: ""}, ndUnit), enabled(nil, ndUnit))
	if np := netplanOn(bare, true); np != nil {
		t.Errorf("no YAML: netplan %+v", np)
	}
	noGen := stackRoot(t, units(map[string]string{"/etc/netplan/90-default.yaml": catchAll}, ndUnit), enabled(nil, ndUnit))
	if np := netplanOn(noGen, true); np != nil {
		t.Errorf("no generator: netplan %+v", np)
	}

	// A file that cannot be read is a note that names it, not its text.
	bad := stackRoot(t, units(map[string]string{netplanGen: "", "/etc/netplan/01-bad.yaml": "network: [secret: {"}, ndUnit), enabled(nil, ndUnit))
	if bnp := netplanOn(bad, true); bnp == nil || len(bnp.Notes) != 1 || !strings.Contains(bnp.Notes[0], "/etc/netplan/01-bad.yaml") || strings.Contains(bnp.Notes[0], "secret") {
		t.Errorf("bad file: %+v", bnp)
	}
}

// A key YAML types as other than a string (an entry ID 1, a key true)
// made its whole mapping decode as another type, and ParseNetplan saw no
// ethernets at all: the catch-all beside it went unsaid. netplan reads
// every key as a scalar.
func TestParseNetplanKeysOfAnyType(t *testing.T) {
	for _, doc := range []string{
		"network:\n  ethernets:\n    1: {dhcp4: true}\n    all-en: {match: {name: 'en*'}}\n",
		"network:\n  true: x\n  ethernets:\n    all-en: {match: {name: 'en*', 2: x}}\n",
		"1: x\nnetwork:\n  ethernets:\n    all-en: {match: {name: 'en*'}}\n",
	} {
		ents, err := stacks.ParseNetplan("/etc/netplan/k.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		i := slices.IndexFunc(ents, func(e stacks.NetplanEntry) bool { return e.ID == "all-en" })
		if i < 0 || !ents[i].CatchAll() || !ents[i].Matches("52:54:00:00:00:01", "enp0s3") {
			t.Errorf("%q: entries %+v, want the catch-all all-en", doc, ents)
		}
	}
	ents, _ := stacks.ParseNetplan("/etc/netplan/k.yaml", []byte("network:\n  ethernets:\n    1: {dhcp4: true}\n"))
	if len(ents) != 1 || ents[0].ID != "1" || !ents[0].Matches("", "1") {
		t.Errorf("entries %+v, want the link named 1", ents)
	}
}

func TestNetplanEntryMatches(t *testing.T) {
	ents, err := stacks.ParseNetplan("/etc/netplan/x.yaml", []byte(`network:
  version: 2
  renderer: NetworkManager
  ethernets:
    renderer: networkd
    all-en: {match: {name: "en*"}}
    anything: {match: {}}
    byid: {match: {macaddress: "52:54:00:00:00:01", name: "ens*"}, renderer: NetworkManager}
    bydriver: {match: {driver: [virtio_net, e1000]}}
    eth0: {dhcp4: true}
    odd: [1, 2]
    badglob: {match: {name: "[en"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		mac   string
		names []string
	}
	cases := map[string]struct {
		catchAll bool
		yes, no  []tc
	}{
		"all-en":   {true, []tc{{"", []string{"eth0", "enp0s3"}}}, []tc{{"", []string{"eth0"}}}},
		"anything": {true, []tc{{"52:54:00:00:00:09", []string{"x"}}}, nil},
		"byid":     {false, []tc{{"52:54:00:00:00:01", []string{"ens4"}}}, []tc{{"52:54:00:00:00:01", []string{"eth0"}}, {"52:54:00:00:00:02", []string{"ens4"}}}},
		"bydriver": {true, []tc{{"", []string{"eth0"}}}, nil},
		"eth0":     {false, []tc{{"", []string{"eth0"}}}, []tc{{"", []string{"eth1"}}}},
		"badglob":  {true, []tc{{"", []string{"[en"}}}, []tc{{"", []string{"en0"}}}},
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.ID)
		c, ok := cases[e.ID]
		if !ok {
			t.Errorf("unexpected entry %q", e.ID)
			continue
		}
		if e.CatchAll() != c.catchAll {
			t.Errorf("%s: CatchAll = %v", e.ID, e.CatchAll())
		}
		for _, y := range c.yes {
			if !e.Matches(y.mac, y.names...) {
				t.Errorf("%s (%s) does not match %s %q", e.ID, e.Describe(), y.mac, y.names)
			}
		}
		for _, n := range c.no {
			if e.Matches(n.mac, n.names...) {
				t.Errorf("%s (%s) matches %s %q", e.ID, e.Describe(), n.mac, n.names)
			}
		}
		want := "networkd"
		if e.ID == "byid" {
			want = "NetworkManager"
		}
		if e.Renderer != want {
			t.Errorf("%s: renderer %s, want %s", e.ID, e.Renderer, want)
		}
	}
	if len(ids) != len(cases) {
		t.Errorf("entries %q", ids)
	}
}

// networkdFirstMatch is networkd's choice of .network file for a link
// (systemd.network(5)): the files of /etc, /run and /usr/lib sorted by
// name together (a name in /etc hides the same name in /run), the first
// whose [Match] matches. It knows the keys the files of this test use:
// Name= (globs, alternative names too) and MACAddress=.
func networkdFirstMatch(t *testing.T, dirs []string, mac string, names ...string) string {
	t.Helper()
	byName := map[string]string{}
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if _, seen := byName[e.Name()]; !seen && strings.HasSuffix(e.Name(), ".network") {
				byName[e.Name()] = filepath.Join(d, e.Name())
			}
		}
	}
	var order []string
	for n := range byName {
		order = append(order, n)
	}
	slices.Sort(order)
	for _, n := range order {
		b, err := os.ReadFile(byName[n])
		if err != nil {
			t.Fatal(err)
		}
		ok, section := true, ""
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(l, "[") {
				section = l
				continue
			}
			k, v, _ := strings.Cut(l, "=")
			if section != "[Match]" {
				continue
			}
			switch k {
			case "Name":
				ok = ok && slices.ContainsFunc(strings.Fields(v), func(p string) bool {
					return slices.ContainsFunc(names, func(n string) bool { return globMatch(p, n) })
				})
			case "MACAddress":
				ok = ok && slices.ContainsFunc(strings.Fields(v), func(m string) bool { return strings.EqualFold(m, mac) })
			case "Type":
				ok = ok && v == "ether"
			}
		}
		if ok {
			return n
		}
	}
	return ""
}

// On a netplan image whose /etc/netplan has a catch-all, networkd gives an
// owned NIC seedkeeper's file, not netplan's (netplan's
// 10-netplan-all-en.network sorted before 10-seedkeeper-eth0.network and
// took the NIC through its alternative name enp0s3: DHCP the metadata did
// not ask for, and the static address removed). netplan generate is the
// oracle of what netplan writes, when it is installed.
func TestNetworkdFilesComeBeforeNetplans(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run/systemd/network")
	if np, err := exec.LookPath("netplan"); err == nil {
		os.MkdirAll(filepath.Join(root, "etc/netplan"), 0o755)
		if err := os.WriteFile(filepath.Join(root, "etc/netplan/90-default.yaml"), []byte(catchAll), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(np, "generate", "--root-dir", root).CombinedOutput(); err != nil {
			t.Fatalf("netplan generate: %v\n%s", err, out)
		}
	} else {
		t.Log("netplan is not installed (apt-get install netplan.io): using the files netplan 0.106 writes")
		os.MkdirAll(run, 0o755)
		os.WriteFile(filepath.Join(run, "10-netplan-all-en.network"), []byte("[Match]\nName=en*\n\n[Network]\nDHCP=yes\n"), 0o644)
		os.WriteFile(filepath.Join(run, "10-netplan-all-eth.network"), []byte("[Match]\nName=eth*\n\n[Network]\nDHCP=ipv4\n"), 0o644)
	}
	if ents, _ := os.ReadDir(run); len(ents) == 0 {
		t.Fatal("netplan wrote no networkd file")
	}
	c := mustParse(t, "version: 2\nethernets:\n  eth0:\n    match: {macaddress: '52:54:00:12:34:56'}\n    set-name: eth0\n    addresses: [192.0.2.10/24]\n")
	files, err := renderNetworkd(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(run, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []string{filepath.Join(root, "etc/systemd/network"), run, filepath.Join(root, "usr/lib/systemd/network")}
	if got := networkdFirstMatch(t, dirs, "52:54:00:12:34:56", "eth0", "enp0s3", "ens4"); got != "05-seedkeeper-eth0.network" {
		t.Errorf("networkd gives the owned eth0 (altnames enp0s3, ens4) %q, want seedkeeper's file", got)
	}
	// A NIC seedkeeper does not own still gets netplan's.
	if got := networkdFirstMatch(t, dirs, "52:54:00:00:00:99", "eth1", "enp0s4"); !strings.HasPrefix(got, "10-netplan-") {
		t.Errorf("networkd gives the foreign eth1 %q, want netplan's", got)
	}
}

// With netplan's NetworkManager renderer, its catch-all is a profile that
// matches every en* device with no autoconnect-priority (0);
// seedkeeper's profile of an owned NIC matches it by MAC with a higher
// one, so NetworkManager activates seedkeeper's.
func TestNetworkManagerProfilesOutrankNetplans(t *testing.T) {
	np, err := exec.LookPath("netplan")
	if err != nil {
		t.Skip("netplan is not installed: apt-get install netplan.io to compare with what it writes")
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc/netplan"), 0o755)
	doc := strings.Replace(catchAll, "version: 2\n", "version: 2\n  renderer: NetworkManager\n", 1)
	if err := os.WriteFile(filepath.Join(root, "etc/netplan/90-default.yaml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(np, "generate", "--root-dir", root).CombinedOutput(); err != nil {
		t.Fatalf("netplan generate: %v\n%s", err, out)
	}
	dir := filepath.Join(root, nmConnectionDir)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("netplan wrote no keyfile: %v", err)
	}
	c := mustParse(t, "version: 2\nethernets:\n  eth0:\n    match: {macaddress: '52:54:00:12:34:56'}\n    set-name: eth0\n    dhcp4: true\n")
	ours, _, err := renderNetworkManager(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	prio := func(b []byte) int {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "autoconnect-priority="); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("autoconnect-priority=%s", v)
				}
				return n
			}
		}
		return 0 // NetworkManager's default
	}
	for n, b := range ours {
		if !strings.Contains(strings.ToLower(string(b)), "mac-address=52:54:00:12:34:56") {
			t.Errorf("%s does not match the NIC by MAC:\n%s", n, b)
		}
		for _, e := range ents {
			theirs, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if prio(theirs) >= prio(b) {
				t.Errorf("netplan's %s has autoconnect-priority %d, not below %s's %d", e.Name(), prio(theirs), n, prio(b))
			}
		}
	}
}

// An image root is input: a link in its /etc/netplan is followed inside
// the root only (an absolute target names the image's file, not the
// host's), and what is not a regular file (a FIFO) is a note, never a
// blocking open; the other files are still read.
func TestDetectNetplanOnAnImageStaysInTheRoot(t *testing.T) {
	root := stackRoot(t, units(map[string]string{netplanGen: "", "/etc/netplan/90-default.yaml": catchAll}, ndUnit), enabled(nil, ndUnit))
	outside := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(outside, []byte("network: {ethernets: {host-entry: {match: {name: 'x*'}}}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	np := filepath.Join(root, "etc/netplan")
	if err := os.Symlink(outside, filepath.Join(np, "10-abs.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../.."+outside, filepath.Join(np, "11-rel.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(np, "12-fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	info := netplanOn(root, false)
	if info == nil {
		t.Fatal("no netplan found on the image")
	}
	var ids []string
	for _, e := range info.Entries {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []string{"all-en", "all-eth"}) {
		t.Errorf("entries %q: the host's file was read through a link, or the image's lost", ids)
	}
	if len(info.Notes) != 3 {
		t.Errorf("notes %q, want one for each link and the FIFO", info.Notes)
	}
}

// netplan's directories are read within one aggregate bound as well as
// each file's: YAML files past it are not read, and a note says so,
// naming the file and the bound; the entries read before it stand.
func TestDetectNetplanAggregateBound(t *testing.T) {
	line := "# " + strings.Repeat("x", 77) + "\n"
	pad := strings.Repeat(line, (fsutil.SmallFile-4096)/len(line))
	files := map[string]string{netplanGen: "", "/etc/netplan/00-first.yaml": catchAll}
	for i := range fsutil.ConfigSetTotal/len(pad) + 1 {
		files[fmt.Sprintf("/etc/netplan/%02d-pad.yaml", i+10)] = pad
	}
	files["/etc/netplan/99-late.yaml"] = "network: {version: 2, ethernets: {late: {dhcp4: true}}}"
	root := stackRoot(t, units(files, ndUnit), enabled(nil, ndUnit))
	info := netplanOn(root, true)
	if info == nil {
		t.Fatal("no netplan found")
	}
	var ids []string
	for _, e := range info.Entries {
		ids = append(ids, e.ID)
	}
	if slices.Contains(ids, "late") || !slices.Contains(ids, "all-en") {
		t.Errorf("entries %q: want those before the bound only", ids)
	}
	if !slices.ContainsFunc(info.Notes, func(n string) bool {
		return strings.Contains(n, "aggregate bound") && strings.Contains(n, fmt.Sprint(fsutil.ConfigSetTotal))
	}) {
		t.Errorf("notes %q do not name the aggregate bound", info.Notes)
	}
}
