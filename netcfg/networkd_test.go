package netcfg

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// iniFile is a parsed networkd file: sections in order, each a list of
// key=value pairs.
type iniFile []iniSection

type iniSection struct {
	name string
	kv   [][2]string
}

// get returns every value of key in every section called sec.
func (f iniFile) get(sec, key string) []string {
	var out []string
	for _, s := range f {
		if s.name != sec {
			continue
		}
		for _, kv := range s.kv {
			if kv[0] == key {
				out = append(out, kv[1])
			}
		}
	}
	return out
}

// parseINI checks the syntax systemd's config parser accepts: comments,
// [Section] headers, Key=Value lines with a key of letters and digits,
// no key before the first section, no empty section.
func parseINI(b []byte) (iniFile, error) {
	var f iniFile
	key := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") || len(line) < 3 {
				return nil, fmt.Errorf("line %d: bad section header %q", n, line)
			}
			if len(f) > 0 && len(f[len(f)-1].kv) == 0 {
				return nil, fmt.Errorf("line %d: section [%s] is empty", n, f[len(f)-1].name)
			}
			f = append(f, iniSection{name: line[1 : len(line)-1]})
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || !key.MatchString(k) || strings.TrimSpace(v) != v || v == "" {
				return nil, fmt.Errorf("line %d: bad assignment %q", n, line)
			}
			if len(f) == 0 {
				return nil, fmt.Errorf("line %d: assignment before any section", n)
			}
			f[len(f)-1].kv = append(f[len(f)-1].kv, [2]string{k, v})
		}
	}
	if len(f) > 0 && len(f[len(f)-1].kv) == 0 {
		return nil, fmt.Errorf("section [%s] is empty", f[len(f)-1].name)
	}
	return f, sc.Err()
}

func renderAll(t *testing.T) map[string]map[string][]byte {
	t.Helper()
	out := map[string]map[string][]byte{}
	for _, f := range validFixtures(t) {
		files, err := renderNetworkd(f.parse(t), nil)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		out[f.name] = files
	}
	return out
}

func TestRenderNetworkdINI(t *testing.T) {
	for fixture, files := range renderAll(t) {
		for name, content := range files {
			if !strings.HasPrefix(string(content), Header+"\n") {
				t.Errorf("%s/%s: no header line", fixture, name)
			}
			f, err := parseINI(content)
			if err != nil {
				t.Errorf("%s/%s: %v\n%s", fixture, name, err, content)
				continue
			}
			switch filepath.Ext(name) {
			case ".network":
				if len(f.get("Match", "MACAddress"))+len(f.get("Match", "Name"))+len(f.get("Match", "Driver")) == 0 {
					t.Errorf("%s/%s: [Match] matches everything", fixture, name)
				}
				if len(f.get("Network", "DHCP")) != 1 {
					t.Errorf("%s/%s: want one DHCP=", fixture, name)
				}
			case ".netdev":
				if len(f.get("NetDev", "Name")) != 1 || len(f.get("NetDev", "Kind")) != 1 {
					t.Errorf("%s/%s: [NetDev] needs Name= and Kind=", fixture, name)
				}
			default:
				t.Errorf("%s: unexpected file %s", fixture, name)
			}
		}
	}
}

func TestRenderNetworkdContent(t *testing.T) {
	c := fixture{data: readFixture(t, "valid/proxmox-static-dual.yaml")}.parse(t)
	files, err := renderNetworkd(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	eth0, err := parseINI(files["05-seedkeeper-eth0.network"])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sec, key string
		want     []string
	}{
		{"Match", "MACAddress", []string{"bc:24:11:aa:bb:01"}},
		{"Match", "Name", nil}, // matched by MAC only
		{"Network", "Address", []string{"192.0.2.10/24", "2001:db8::10/64"}},
		{"Network", "DHCP", []string{"no"}},
		{"Network", "DNS", []string{"192.0.2.53", "192.0.2.54"}},
		{"Network", "Domains", []string{"example.lan"}},
		{"Route", "Gateway", []string{"192.0.2.1", "2001:db8::1"}},
		{"Route", "GatewayOnLink", nil},
	} {
		if got := eth0.get(tc.sec, tc.key); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("eth0 [%s] %s = %q, want %q", tc.sec, tc.key, got, tc.want)
		}
	}
	eth1, err := parseINI(files["05-seedkeeper-eth1.network"])
	if err != nil {
		t.Fatal(err)
	}
	if got := eth1.get("Network", "DHCP"); !reflect.DeepEqual(got, []string{"ipv4"}) {
		t.Errorf("eth1 DHCP = %q", got)
	}
	if got := eth1.get("Network", "IPv6AcceptRA"); !reflect.DeepEqual(got, []string{"yes"}) {
		t.Errorf("eth1 IPv6AcceptRA = %q (ipv6_slaac)", got)
	}
	// Global DNS goes on both links: each can reach a router.
	if got := eth1.get("Network", "DNS"); len(got) != 2 {
		t.Errorf("eth1 DNS = %q", got)
	}

	// Only owned links are rendered.
	files, err = renderNetworkd(c, func(i *Interface) bool { return i.MAC == "bc:24:11:aa:bb:02" })
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files["05-seedkeeper-eth1.network"] == nil {
		t.Errorf("owned filter: got files %v", keys(files))
	}
}

func TestRenderNetworkdMembership(t *testing.T) {
	c := &Config{
		Interfaces: []Interface{
			{ID: "e0", Kind: Physical, MAC: "02:00:00:00:00:01", Name: "eth0"},
			{ID: "e1", Kind: Physical, MAC: "02:00:00:00:00:02", Name: "eth1"},
			{ID: "bond0", Kind: Bond, Name: "bond0", Links: []string{"e0", "e1"}, MTU: 9000,
				Params: map[string]string{"mode": "1", "primary": "e1", "mii-monitor-interval": "100", "weird": "x"}},
			{ID: "bond0.42", Kind: VLAN, Name: "bond0.42", VLANID: 42, VLANLink: "bond0",
				Addresses: []netip.Prefix{pfx("10.42.0.5/24")}},
		},
		Routes: []Route{{To: pfx("10.0.0.0/8"), Via: ip("10.42.0.1")}},
		DNS:    DNS{Nameservers: ips("10.42.0.2")},
	}
	files, err := renderNetworkd(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"05-seedkeeper-e1.network": `# Written by seedkeeper; changes will be overwritten.

[Match]
MACAddress=02:00:00:00:00:02
Type=ether

[Network]
KeepConfiguration=static
Bond=bond0
PrimarySlave=yes
DHCP=no
LinkLocalAddressing=no
IPv6AcceptRA=no
`,
		"05-seedkeeper-bond0.netdev": `# Written by seedkeeper; changes will be overwritten.

[NetDev]
Name=bond0
Kind=bond
MTUBytes=9000

[Bond]
MIIMonitorSec=100ms
Mode=active-backup
# not rendered: weird=x
`,
		"05-seedkeeper-bond0.network": `# Written by seedkeeper; changes will be overwritten.

[Match]
Name=bond0

[Link]
MTUBytes=9000

[Network]
KeepConfiguration=static
ConfigureWithoutCarrier=yes
DHCP=no
VLAN=bond0.42
`,
		// No link has a router, so global DNS goes on the one with
		// addresses; the global route goes where its gateway is.
		"05-seedkeeper-bond0.42.network": `# Written by seedkeeper; changes will be overwritten.

[Match]
Name=bond0.42

[Network]
KeepConfiguration=static
ConfigureWithoutCarrier=yes
DHCP=no
Address=10.42.0.5/24
DNS=10.42.0.2

[Route]
Destination=10.0.0.0/8
Gateway=10.42.0.1
`,
	}
	for name, w := range want {
		if got := string(files[name]); got != w {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, w)
		}
	}
	if len(files) != 6 {
		t.Errorf("files: %v", keys(files))
	}
	// Deterministic: rendering again gives the same bytes.
	again, _ := renderNetworkd(c, nil)
	if !reflect.DeepEqual(files, again) {
		t.Error("second render differs")
	}
}

func TestRenderResolvConf(t *testing.T) {
	got := string(RenderResolvConf(DNS{
		Nameservers: ips("192.0.2.53", "2001:db8::53", "192.0.2.53", "192.0.2.54", "192.0.2.55"),
		Search:      []string{"example.lan", "lan"},
	}))
	want := Header + "\nnameserver 192.0.2.53\nnameserver 2001:db8::53\nnameserver 192.0.2.54\nsearch example.lan lan\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestIntegrationNetworkdAccepts loads every rendered file into the real
// systemd-networkd: no tool validates .network files (systemd-analyze
// verify refuses them: "Failed to prepare filename"), but networkd logs
// every unknown key, bad value and dangling Bond=/VLAN= reference when it
// reads its configuration. It runs in private mount and network namespaces
// (unshare -mn), with tmpfs over /run/systemd/network and
// /etc/systemd/network, so the host is untouched.
func TestIntegrationNetworkdAccepts(t *testing.T) {
	testenv.Integration(t)
	networkd := "/lib/systemd/systemd-networkd"
	if _, err := os.Stat(networkd); err != nil {
		t.Skip("needs systemd-networkd (Debian package systemd): run `sudo make test`, which installs it")
	}
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare to run networkd in its own namespaces: run `sudo make test`")
	}
	for fixture, files := range renderAll(t) {
		if len(files) == 0 {
			continue
		}
		t.Run(fixture, func(t *testing.T) {
			if problems := networkdProblems(t, networkd, files); len(problems) > 0 {
				t.Errorf("networkd complained:\n%s", strings.Join(problems, "\n"))
			}
		})
	}
	// The check itself: networkd does report a mistake.
	bad := map[string][]byte{"05-seedkeeper-bad.network": []byte("[Match]\nName=x\n\n[Network]\nAddres=10.0.0.1/24\nVLAN=nope\n")}
	if problems := networkdProblems(t, networkd, bad); len(problems) != 2 {
		t.Errorf("networkd should report the unknown key and the missing VLAN, got %q", problems)
	}
}

// networkdProblems returns the lines networkd logs about the files.
func networkdProblems(t *testing.T, networkd string, files map[string][]byte) []string {
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var problems []string
	for _, line := range strings.Split(runNetworkd(t, networkd, dir), "\n") {
		if strings.Contains(line, "/run/systemd/network/") {
			problems = append(problems, line)
		}
	}
	return problems
}

// runNetworkd starts networkd on the files in dir and returns its log once
// it has read its configuration and enumerated the links.
func runNetworkd(t *testing.T, networkd, dir string) string {
	t.Helper()
	script := `set -e
for d in /run/systemd/network /etc/systemd/network; do
	[ -d "$d" ] || mkdir -p "$d"
	mount -t tmpfs tmpfs "$d"
done
cp "$1"/* /run/systemd/network/
exec "$2"`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--net", "--propagation", "private", "sh", "-c", script, "sh", dir, networkd)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_TARGET=console", "SYSTEMD_LOG_LEVEL=info")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	for {
		if s := out.String(); strings.Contains(s, "Enumeration completed") {
			return s
		}
		select {
		case err := <-exited:
			exited <- err // for the deferred wait
			t.Fatalf("networkd exited (%v) before reading its configuration:\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("networkd did not finish reading its configuration:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A renderer never names a master or a VLAN it does not also define: the
// owned member of a bond that is not owned gets its own plain file, and
// an owned NIC under a VLAN that is not owned gets no VLAN= line.
func TestRenderNetworkdNamesOnlyWhatItDefines(t *testing.T) {
	c := &Config{Interfaces: []Interface{
		{ID: "e0", Kind: Physical, MAC: "52:54:00:00:00:01", Addresses: []netip.Prefix{netip.MustParsePrefix("192.0.2.5/24")}},
		{ID: "e1", Kind: Physical, MAC: "52:54:00:00:00:02"},
		{ID: "bond0", Kind: Bond, Name: "bond0", Links: []string{"e0", "e1"}, DHCP4: true},
		{ID: "v5", Kind: VLAN, Name: "e0.5", VLANLink: "e0", VLANID: 5},
	}}
	files, err := renderNetworkd(c, func(i *Interface) bool { return i.ID == "e0" })
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	b := string(files["05-seedkeeper-e0.network"])
	if strings.Contains(b, "Bond=") || strings.Contains(b, "VLAN=") || !strings.Contains(b, "Address=192.0.2.5/24\n") {
		t.Errorf("e0:\n%s", b)
	}
}

// A bond or bridge parameter goes into a .netdev file as text (or, when
// networkd has no key for it, into a comment there): a name or value
// outside the parameter alphabet is left out alone, with a note, and the
// other parameters stay.
func TestParamsSafeAlphabet(t *testing.T) {
	doc := "version: 2\nethernets: {eth0: {}, eth1: {}}\nbonds: {bond0: {interfaces: [eth0, eth1], parameters: {" +
		"mode: active-backup, transmit-hash-policy: 'layer2 $(reboot)', 'x\u202ey': 1, lacp-rate: 'fast', bond-xmit-hash-policy: layer3+4, ad-select: \"stable\u00a0x\", up-delay: '`id`', " +
		"arp-ip-target: [10.0.0.1, 'fe80::1'], mii-monitor-interval: 100}}}"
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	b := c.Lookup("bond0")
	want := map[string]string{"mode": "active-backup", "arp-ip-target": "10.0.0.1 fe80::1", "mii-monitor-interval": "100",
		"lacp-rate": "fast", "transmit-hash-policy": "layer3+4"}
	if !maps.Equal(b.Params, want) {
		t.Errorf("params = %q, want %q", b.Params, want)
	}
	if len(c.Notes) != 4 {
		t.Errorf("notes = %q, want one per bad parameter", c.Notes)
	}
	files, err := renderNetworkd(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		if i := strings.IndexAny(string(f), "$`\u202e\u00a0"); i >= 0 {
			t.Errorf("%s holds %q:\n%s", name, f[i:i+1], f)
		}
	}
}

// TestRenderNetworkdNetplanDefaults: a DHCP link gets what netplan gives
// it when the document says nothing (route metric 100 for the lease's
// routes and the router advertisements' ones, the server's MTU unless
// the link has its own), a set metric wins, and a bond, bridge or VLAN
// is configured without carrier.
func TestRenderNetworkdNetplanDefaults(t *testing.T) {
	no := false
	cases := []struct {
		name string
		ifc  Interface
		want map[[2]string][]string // section, key: values (nil: absent)
	}{
		{"dhcp4", Interface{ID: "e", Kind: Physical, MAC: "02:00:00:00:00:01", DHCP4: true},
			map[[2]string][]string{
				{"DHCPv4", "RouteMetric"}: {"100"}, {"DHCPv4", "UseMTU"}: {"yes"},
				{"DHCPv6", "RouteMetric"}: {"100"}, {"Network", "ConfigureWithoutCarrier"}: nil,
			}},
		{"dhcp4 metric and mtu", Interface{ID: "e", Kind: Physical, MAC: "02:00:00:00:00:01", DHCP4: true, DHCPMetric: 200, MTU: 1400},
			map[[2]string][]string{
				{"DHCPv4", "RouteMetric"}: {"200"}, {"DHCPv4", "UseMTU"}: nil, {"DHCPv6", "RouteMetric"}: {"200"},
			}},
		{"use-mtu false", Interface{ID: "e", Kind: Physical, MAC: "02:00:00:00:00:01", DHCP4: true, DHCP4Overrides: DHCPOverrides{UseMTU: &no}},
			map[[2]string][]string{{"DHCPv4", "UseMTU"}: {"no"}}},
		{"dhcp6", Interface{ID: "e", Kind: Physical, MAC: "02:00:00:00:00:01", DHCP6: true, DHCP6Overrides: DHCPOverrides{RouteMetric: 300, UseDNS: &no}},
			map[[2]string][]string{
				{"DHCPv4", "RouteMetric"}: nil, {"DHCPv4", "UseMTU"}: nil,
				{"DHCPv6", "RouteMetric"}: {"300"}, {"DHCPv6", "UseDNS"}: {"no"},
			}},
		{"dhcp4, dhcp6 metric unset", Interface{ID: "e", Kind: Physical, MAC: "02:00:00:00:00:01", DHCP4: true, DHCP6: true, DHCPMetric: 50},
			map[[2]string][]string{{"DHCPv4", "RouteMetric"}: {"50"}, {"DHCPv6", "RouteMetric"}: {"50"}}},
		{"static", Interface{ID: "e", Kind: Physical, MAC: "02:00:00:00:00:01", Addresses: []netip.Prefix{pfx("192.0.2.5/24")}},
			map[[2]string][]string{{"DHCPv4", "RouteMetric"}: nil, {"DHCPv6", "RouteMetric"}: nil}},
		{"bridge", Interface{ID: "br0", Kind: Bridge, Name: "br0", Addresses: []netip.Prefix{pfx("192.0.2.5/24")}},
			map[[2]string][]string{{"Network", "ConfigureWithoutCarrier"}: {"yes"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files, err := renderNetworkd(&Config{Interfaces: []Interface{tc.ifc}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parseINI(files["05-seedkeeper-"+tc.ifc.ID+".network"])
			if err != nil {
				t.Fatal(err)
			}
			for sk, want := range tc.want {
				if got := f.get(sk[0], sk[1]); !reflect.DeepEqual(got, want) {
					t.Errorf("[%s] %s = %q, want %q", sk[0], sk[1], got, want)
				}
			}
		})
	}
}
