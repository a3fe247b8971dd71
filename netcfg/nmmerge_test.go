package netcfg

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nmBinary finds a NetworkManager binary that runs here, for its
// --print-config (which reads the configuration, prints it merged and
// exits; the daemon is never started). scripts/test-deps.sh extracts the
// Debian package into /var/cache/seedkeeper-test/network-manager rather
// than installing it, so that nothing starts NetworkManager on the
// machine's own network.
func nmBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{
		os.Getenv("SEEDKEEPER_NETWORKMANAGER"),
		"/var/cache/seedkeeper-test/network-manager/usr/sbin/NetworkManager",
		"/usr/sbin/NetworkManager",
	} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if out, err := exec.Command(p, "--version").CombinedOutput(); err != nil {
			t.Skipf("NetworkManager at %s does not run here (%v: %s); run scripts/test-deps.sh as root", p, err, out)
		}
		return p
	}
	t.Skip("needs NetworkManager's --print-config: run scripts/test-deps.sh as root (it extracts the Debian package network-manager, which is never started), or set SEEDKEEPER_NETWORKMANAGER")
	return ""
}

// nmPrintConfig runs NetworkManager --print-config over an image's
// NetworkManager.conf, /usr/lib/NetworkManager/conf.d and
// /etc/NetworkManager/conf.d, with seedkeeper's drop-ins beside the
// image's in conf.d (NetworkManager reads the three directories as one
// list sorted by file name; /run/NetworkManager/conf.d, where seedkeeper
// writes, is built into the binary and is the machine's own). It returns
// the merged configuration, section → key → value.
func nmPrintConfig(t *testing.T, bin string, image map[string]string, ours map[string][]byte) map[string]map[string]string {
	t.Helper()
	if _, err := os.Stat("/run/NetworkManager/conf.d"); err == nil {
		t.Skip("this machine has /run/NetworkManager/conf.d, which NetworkManager --print-config would read as well")
	}
	root := t.TempDir()
	for p, s := range image {
		writeTestFile(t, filepath.Join(root, p), []byte(s))
	}
	for p, b := range ours {
		writeTestFile(t, filepath.Join(root, "etc/NetworkManager/conf.d", filepath.Base(p)), b)
	}
	state := t.TempDir()
	cmd := exec.Command(bin,
		"--config="+filepath.Join(root, "etc/NetworkManager/NetworkManager.conf"),
		"--config-dir="+filepath.Join(root, "etc/NetworkManager/conf.d"),
		"--system-config-dir="+filepath.Join(root, "usr/lib/NetworkManager/conf.d"),
		"--intern-config="+filepath.Join(state, "intern.conf"),
		"--state-file="+filepath.Join(state, "state"),
		"--print-config")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("NetworkManager --print-config: %v\n%s", err, out)
	}
	conf := map[string]map[string]string{}
	var sec string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			sec = l[1 : len(l)-1]
			conf[sec] = map[string]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || sec == "" {
				t.Fatalf("--print-config line %q", l)
			}
			conf[sec][k] = v
		}
	}
	t.Logf("NetworkManager --print-config:\n%s", out)
	return conf
}

func writeTestFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// nmList splits a NetworkManager list value (device specs are separated
// by "," or ";").
func nmList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' })
}

// The drop-ins seedkeeper writes into NetworkManager's conf.d
// (50-seedkeeper.conf and 50-seedkeeper-ahead.conf) never replace a
// setting of the image: rendered against an image whose own files set
// every key they write, NetworkManager's own merge keeps the image's
// value and adds seedkeeper's. The image's no-auto-default=* is RHEL's
// NetworkManager-config-server (00-server.conf): written with "=", the
// drop-in replaced it, and every NIC seedkeeper does not own got an
// automatic DHCP connection again.
func TestNMConfKeepsImageSettings(t *testing.T) {
	bin := nmBinary(t)
	c := &Config{Interfaces: []Interface{
		{ID: "a", Kind: Physical, MAC: "bc:24:11:aa:bb:01"},
		{ID: "b", Kind: Physical, MAC: "bc:24:11:aa:bb:02"},
		{ID: "lan", Kind: Physical, MAC: "bc:24:11:aa:bb:03", DHCP4: true},
		{ID: "late", Kind: Physical, MAC: "bc:24:11:aa:bb:05", DHCP4: true},
		{ID: "bond0", Kind: Bond, Links: []string{"a", "b"}},
	}}
	owned := func(i *Interface) bool { return i.ID != "late" }
	sf, err := NetworkManager.Render(Detection{Stack: NetworkManager}, c, owned)
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := NetworkManager.RenderAhead(c, owned, func(i *Interface) bool { return i.ID == "late" }, []string{"virtio_net"})
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string][]byte{}
	for p, b := range sf.Extra {
		ours[p] = b
	}
	for p, b := range ahead.Extra {
		ours[p] = b
	}
	if ours[nmConfFile] == nil || ours[nmAheadConfFile] == nil {
		t.Fatalf("rendered drop-ins %v; want both %s and %s", slices.Sorted(maps.Keys(ours)), nmConfFile, nmAheadConfFile)
	}
	image := map[string]string{
		"usr/lib/NetworkManager/conf.d/00-server.conf": "[main]\nno-auto-default=*\n",
		"etc/NetworkManager/NetworkManager.conf": "[main]\nplugins=keyfile\n\n[keyfile]\nunmanaged-devices=interface-name:docker0\n\n" +
			"[device]\nkeep-configuration=yes\nallowed-connections=except:origin:nm-initrd-generator\n",
		"etc/NetworkManager/conf.d/10-image.conf": "[device-image]\nmatch-device=interface-name:eth9\nkeep-configuration=yes\n",
	}
	got := nmPrintConfig(t, bin, image, ours)

	nad := nmList(got["main"]["no-auto-default"])
	for _, want := range []string{"*", "mac:bc:24:11:aa:bb:01", "mac:bc:24:11:aa:bb:02", "mac:bc:24:11:aa:bb:03"} {
		if !slices.Contains(nad, want) {
			t.Errorf("[main] no-auto-default = %q: %s missing", got["main"]["no-auto-default"], want)
		}
	}
	um := nmList(got["keyfile"]["unmanaged-devices"])
	for _, want := range []string{"interface-name:docker0", "mac:bc:24:11:aa:bb:01", "interface-name:bond0"} {
		if !slices.Contains(um, want) {
			t.Errorf("[keyfile] unmanaged-devices = %q: %s missing", got["keyfile"]["unmanaged-devices"], want)
		}
	}
	if got["main"]["plugins"] != "keyfile" {
		t.Errorf("[main] plugins = %q; want the image's keyfile", got["main"]["plugins"])
	}
	if d := got["device"]; d["keep-configuration"] != "yes" || d["allowed-connections"] != "except:origin:nm-initrd-generator" {
		t.Errorf("[device] = %v; want the image's keep-configuration and allowed-connections", d)
	}
	if d := got["device-image"]; d["match-device"] != "interface-name:eth9" || d["keep-configuration"] != "yes" {
		t.Errorf("[device-image] = %v; want the image's section as it is", d)
	}
	// seedkeeper's own sections are read, and match only its NICs.
	if d := got["device-seedkeeper"]; d["match-device"] != "mac:bc:24:11:aa:bb:03" || d["keep-configuration"] != "no" {
		t.Errorf("[device-seedkeeper] = %v", d)
	}
	if d := got["device-seedkeeper-ahead"]; d["match-device"] != "mac:bc:24:11:aa:bb:05" || d["keep-configuration"] != "no" {
		t.Errorf("[device-seedkeeper-ahead] = %v", d)
	}
}
