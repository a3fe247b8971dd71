package netcfg

import (
	"bufio"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// proxmoxV1 is the network-config Proxmox VE writes for net0 static (v4
// and v6), net1 DHCP + SLAAC, and the host's resolvers.
const proxmoxV1 = `version: 1
config:
    - type: physical
      name: eth0
      mac_address: 'bc:24:11:aa:bb:01'
      subnets:
      - type: static
        address: '192.0.2.10'
        netmask: '255.255.255.0'
        gateway: '192.0.2.1'
      - type: static6
        address: '2001:db8::10/64'
        gateway: '2001:db8::1'
    - type: physical
      name: eth1
      mac_address: 'bc:24:11:aa:bb:02'
      subnets:
      - type: dhcp4
      - type: ipv6_slaac
    - type: nameserver
      address:
      - '192.0.2.53'
      search:
      - 'example.lan'
`

// renderNetworkd is what the networkd stack renders for the owned links
// (Stack.Render): its files.
func renderNetworkd(c *Config, owned func(*Interface) bool) (map[string][]byte, error) {
	sf, err := Networkd.Render(Detection{Stack: Networkd}, c, owned)
	if err != nil {
		return nil, err
	}
	return sf.Files, nil
}

// renderNetworkManager is what the NetworkManager stack renders for the
// owned links (Stack.Render): the keyfiles, and the links skipped.
func renderNetworkManager(c *Config, owned func(*Interface) bool) (map[string][]byte, []string, error) {
	sf, err := NetworkManager.Render(Detection{Stack: NetworkManager}, c, owned)
	if err != nil {
		return nil, nil, err
	}
	return sf.Files, sf.Skipped, nil
}

// renderIfupdown is what the ifupdown stack renders for the owned links
// (Stack.Render): the stanza file, and the links skipped.
func renderIfupdown(c *Config, owned func(*Interface) bool) ([]byte, []string, error) {
	sf, err := Ifupdown.Render(Detection{Stack: Ifupdown, Dir: "/etc/network/interfaces.d"}, c, owned)
	if err != nil {
		return nil, nil, err
	}
	return sf.Files[ifupdownFile], sf.Skipped, nil
}

// nmConf is the NetworkManager drop-in of the owned links, a view of
// their plan.
func nmConf(c *Config, owned func(*Interface) bool) []byte {
	plans, links, _ := physicalPlan(c, owned)
	return renderNMConf(plans, links)
}

func mustParse(t testing.TB, doc string) *Config {
	t.Helper()
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRenderNetworkManagerProxmox(t *testing.T) {
	files, skipped, err := renderNetworkManager(mustParse(t, proxmoxV1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	want := map[string]string{
		"seedkeeper-eth0.nmconnection": Header + `

[connection]
id=seedkeeper-eth0
uuid=` + nmUUID("eth0") + `
type=ethernet
autoconnect=true
autoconnect-priority=100

[ethernet]
mac-address=BC:24:11:AA:BB:01

[ipv4]
method=manual
address1=192.0.2.10/24
route1=0.0.0.0/0,192.0.2.1
dns=192.0.2.53;
dns-search=example.lan;

[ipv6]
method=manual
address1=2001:db8::10/64
route1=::/0,2001:db8::1
addr-gen-mode=eui64
`,
		"seedkeeper-eth1.nmconnection": Header + `

[connection]
id=seedkeeper-eth1
uuid=` + nmUUID("eth1") + `
type=ethernet
autoconnect=true
autoconnect-priority=100

[ethernet]
mac-address=BC:24:11:AA:BB:02

[ipv4]
method=auto
dns=192.0.2.53;
dns-search=example.lan;

[ipv6]
method=auto
addr-gen-mode=eui64
`,
	}
	if len(files) != len(want) {
		t.Fatalf("files %d, want %d", len(files), len(want))
	}
	for name, body := range want {
		if got := string(files[name]); got != body {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, body)
		}
	}
	if u := nmUUID("eth0"); len(u) != 36 || u[14] != '5' || u == nmUUID("eth1") {
		t.Errorf("uuid %q", u)
	}
}

func TestRenderIfupdownProxmox(t *testing.T) {
	b, skipped, err := renderIfupdown(mustParse(t, proxmoxV1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	want := Header + `

allow-hotplug eth0
auto eth0
iface eth0 inet manual
    up ip link set dev eth0 up
    up ip -4 addr replace 192.0.2.10/24 dev eth0
    up ip -4 route replace 0.0.0.0/0 via 192.0.2.1 dev eth0
    down ip -4 addr del 192.0.2.10/24 dev eth0 || true
    dns-nameservers 192.0.2.53
    dns-search example.lan
iface eth0 inet6 manual
    up ip link set dev eth0 up
    up ip -6 addr replace 2001:db8::10/64 dev eth0
    up ip -6 route replace ::/0 via 2001:db8::1 dev eth0
    down ip -6 addr del 2001:db8::10/64 dev eth0 || true

allow-hotplug eth1
auto eth1
iface eth1 inet dhcp
    dns-nameservers 192.0.2.53
    dns-search example.lan
iface eth1 inet6 auto
`
	if string(b) != want {
		t.Errorf("got:\n%s\nwant:\n%s", b, want)
	}
}

func TestRenderStacksSkipStackedLinks(t *testing.T) {
	c := mustParse(t, `version: 2
ethernets:
  e0: {match: {macaddress: "52:54:00:00:00:01"}}
  e1: {match: {macaddress: "52:54:00:00:00:02"}}
  e2: {match: {macaddress: "52:54:00:00:00:03"}, dhcp4: true}
bonds:
  bond0: {interfaces: [e0, e1], addresses: [192.0.2.5/24]}
`)
	_, skipped, err := renderNetworkManager(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skipped, []string{"e0", "e1", "bond0"}) {
		t.Errorf("NetworkManager skipped %v", skipped)
	}
	b, skipped, err := renderIfupdown(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skipped, []string{"e0", "e1", "bond0"}) {
		t.Errorf("ifupdown skipped %v", skipped)
	}
	if !strings.Contains(string(b), "iface e2 inet dhcp\n") || strings.Contains(string(b), "bond0") {
		t.Errorf("ifupdown:\n%s", b)
	}
}

// A name with a line break would start a new key (keyfile) or a new
// stanza (ifupdown) that the metadata did not ask for.
func TestRenderStacksRefuseLineBreaks(t *testing.T) {
	// A link whose name is not one is left out (and reported skipped),
	// not the whole file.
	c := &Config{Interfaces: []Interface{{ID: "x", Kind: Physical, Name: "eth0\nauto evil", DHCP4: true},
		{ID: "y", Kind: Physical, Name: "eth1", DHCP4: true}}}
	if b, skipped, err := renderIfupdown(c, nil); err != nil || !slices.Equal(skipped, []string{"x"}) ||
		strings.Contains(string(b), "evil") || !strings.Contains(string(b), "iface eth1 inet dhcp\n") {
		t.Errorf("ifupdown: err %v, skipped %q:\n%s", err, skipped, b)
	}
	c = &Config{Interfaces: []Interface{{ID: "x\n[vpn]", Kind: Physical, DHCP4: true}}}
	if _, _, err := renderNetworkManager(c, nil); err == nil || strings.Contains(err.Error(), "vpn") && !strings.Contains(err.Error(), `\n`) {
		t.Errorf("NetworkManager: err %v", err)
	}
	c = &Config{Interfaces: []Interface{{ID: "x", Kind: Physical, DHCP4: true, DNS: DNS{Search: []string{"a.example\nb"}, Nameservers: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}}}}
	if _, _, err := renderNetworkManager(c, nil); err == nil {
		t.Error("NetworkManager: a search domain with a line break was written")
	}
	if _, _, err := renderIfupdown(c, nil); err == nil {
		t.Error("ifupdown: a search domain with a line break was written")
	}
}

// parseKeyfile reads a GKeyFile back as NetworkManager would: section →
// key → value. It fails the test on a line it could not read.
func parseKeyfile(t *testing.T, b []byte) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	sec := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			sec = l[1 : len(l)-1]
			if out[sec] != nil {
				t.Fatalf("section %s twice", sec)
			}
			out[sec] = map[string]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || sec == "" {
				t.Fatalf("unreadable keyfile line %q", l)
			}
			if _, dup := out[sec][k]; dup {
				t.Fatalf("key %s twice in [%s]", k, sec)
			}
			out[sec][k] = v
		}
	}
	return out
}

// FuzzRenderStacksParseBack renders fuzzed names, search domains and MACs
// for both stacks: the writers either refuse the input or write files that
// read back to exactly the values given.
func FuzzRenderStacksParseBack(f *testing.F) {
	f.Add("eth0", "example.lan", "52:54:00:aa:bb:cc", true)
	f.Add("eth1\n[vpn]", "a;b", "", false)
	f.Add("e 0", " lead", "", true)
	f.Add("x#y", `back\slash`, "52:54:00:00:00:01", false)
	f.Fuzz(func(t *testing.T, name, search, mac string, dhcp bool) {
		ifc := Interface{ID: name, Kind: Physical, Name: name, MAC: mac, DHCP4: dhcp,
			DNS: DNS{Search: []string{search}, Nameservers: []netip.Addr{netip.MustParseAddr("192.0.2.53")}}}
		if !dhcp {
			ifc.Addresses = []netip.Prefix{netip.MustParsePrefix("192.0.2.10/24")}
		}
		c := &Config{Interfaces: []Interface{ifc}}
		if files, _, err := renderNetworkManager(c, nil); err == nil {
			for _, b := range files {
				kf := parseKeyfile(t, b)
				if got := kf["connection"]["id"]; got != fileBase(name) {
					t.Fatalf("id read back as %q, want %q", got, fileBase(name))
				}
				if got := kf["ipv4"]["dns-search"]; got != search+";" {
					t.Fatalf("dns-search read back as %q, want %q", got, search+";")
				}
				if mac != "" && kf["ethernet"]["mac-address"] != strings.ToUpper(mac) {
					t.Fatalf("mac-address read back as %q", kf["ethernet"]["mac-address"])
				}
			}
		} else if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error with a line break: %q", err)
		}
		b, skipped, err := renderIfupdown(c, nil)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error with a line break: %q", err)
			}
			return
		}
		if slices.Contains(skipped, name) {
			if ValidLinkName(name) {
				t.Fatalf("a valid name %q skipped", name)
			}
			if b := string(b); b != Header+"\n" {
				t.Fatalf("a skipped link written:\n%s", b)
			}
			return
		}
		// Read back: every line is a comment, blank, a stanza head or an
		// indented option, and the stanza heads name exactly the link.
		var heads []string
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			switch {
			case l == "" || strings.HasPrefix(l, "#"):
			case strings.HasPrefix(l, "    "):
				if f := strings.Fields(l); f[0] == "dns-search" && (len(f) != 2 || f[1] != search) {
					t.Fatalf("dns-search read back as %q, want %q", f[1:], search)
				}
			default:
				f := strings.Fields(l)
				if len(f) < 2 || f[1] != name {
					t.Fatalf("stanza line %q does not name %q", l, name)
				}
				heads = append(heads, f[0])
			}
		}
		if len(heads) < 3 {
			t.Fatalf("stanzas %v", heads)
		}
	})
}

// The drop-in allows on each owned NIC only seedkeeper's profiles: the
// UUIDs of allowed-connections are those of the keyfiles written beside
// it, each bound to its NIC's MAC.
func TestRenderNMConf(t *testing.T) {
	got := string(nmConf(mustParse(t, proxmoxV1), nil))
	files, _, err := renderNetworkManager(mustParse(t, proxmoxV1), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, n := range slices.Sorted(maps.Keys(files)) {
		_, rest, _ := strings.Cut(string(files[n]), "\nuuid=")
		u, _, _ := strings.Cut(rest, "\n")
		mac := strings.ToUpper(map[string]string{"seedkeeper-eth0.nmconnection": "bc:24:11:aa:bb:01", "seedkeeper-eth1.nmconnection": "bc:24:11:aa:bb:02"}[n])
		if u == "" || mac == "" || !strings.Contains(string(files[n]), "\nmac-address="+mac+"\n") {
			t.Fatalf("profile %s: uuid %q, not bound to %q:\n%s", n, u, mac, files[n])
		}
		uuids = append(uuids, "uuid:"+u)
	}
	want := Header + `
[main]
no-auto-default+=mac:bc:24:11:aa:bb:01,mac:bc:24:11:aa:bb:02

[device-seedkeeper]
match-device=mac:bc:24:11:aa:bb:01;mac:bc:24:11:aa:bb:02
keep-configuration=no
allowed-connections=` + strings.Join(uuids, ";") + "\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	sf, err := renderForStack(Detection{Stack: NetworkManager}, mustParse(t, proxmoxV1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(sf.Extra[nmConfFile]) != want {
		t.Errorf("renderForStack extra files: %v", sf.Extra)
	}
	if nmConf(&Config{Interfaces: []Interface{{ID: "x", Kind: Physical, MatchName: "en*"}}}, nil) != nil {
		t.Error("a drop-in for a configuration without MACs")
	}
}

// With keep-configuration=no NetworkManager disconnects a matched device
// it has no profile for and cleans its configuration up: the bond, VLAN
// and bridge seedkeeper made live, and the bond's members, would lose
// their addresses and ports. They are unmanaged instead; a NIC not owned
// is not named at all (NetworkManager's defaults stand for it).
func TestRenderNMConfStacked(t *testing.T) {
	c := &Config{Interfaces: []Interface{
		{ID: "a", Kind: Physical, MAC: "bc:24:11:aa:bb:01"},
		{ID: "b", Kind: Physical, MAC: "bc:24:11:aa:bb:02"},
		{ID: "lan", Kind: Physical, MAC: "bc:24:11:aa:bb:03", DHCP4: true},
		{ID: "other", Kind: Physical, MAC: "bc:24:11:aa:bb:04", DHCP4: true},
		{ID: "bond0", Kind: Bond, Links: []string{"a", "b"}},
		{ID: "v100", Kind: VLAN, Name: "bond0.100", VLANLink: "bond0", VLANID: 100},
		{ID: "br0", Kind: Bridge, Links: []string{"v100"}},
	}}
	owned := func(i *Interface) bool { return i.ID != "other" }
	want := Header + `
[main]
no-auto-default+=mac:bc:24:11:aa:bb:01,mac:bc:24:11:aa:bb:02,mac:bc:24:11:aa:bb:03

[keyfile]
unmanaged-devices+=mac:bc:24:11:aa:bb:01;mac:bc:24:11:aa:bb:02;interface-name:bond0;interface-name:bond0.100;interface-name:br0

[device-seedkeeper]
match-device=mac:bc:24:11:aa:bb:03
keep-configuration=no
allowed-connections=uuid:` + nmUUID("lan") + `
`
	if got := string(nmConf(c, owned)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// allowed-connections names only profiles renderNetworkManager writes:
// a NIC it writes none for (an entry of no kind, which renderNMConf
// took for a physical one) is not restricted to a UUID no profile has,
// which would leave it with no connection at all.
func TestRenderNMConfAllowsOnlyWrittenProfiles(t *testing.T) {
	c := &Config{Interfaces: []Interface{
		{ID: "eth0", Kind: Physical, MAC: "52:54:00:00:00:01", DHCP4: true},
		{ID: "eth1", MAC: "52:54:00:00:00:02", DHCP4: true},
	}}
	files, _, err := renderNetworkManager(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(nmConf(c, nil))
	_, allowed, _ := strings.Cut(conf, "\nallowed-connections=")
	allowed, _, _ = strings.Cut(allowed, "\n")
	_, devices, _ := strings.Cut(conf, "\nmatch-device=")
	devices, _, _ = strings.Cut(devices, "\n")
	for _, spec := range strings.Split(allowed, ";") {
		if !slices.ContainsFunc(slices.Collect(maps.Values(files)), func(b []byte) bool {
			return strings.Contains(string(b), "\nuuid="+strings.TrimPrefix(spec, "uuid:")+"\n")
		}) {
			t.Errorf("allowed-connections has %s, the UUID of no profile written (%q):\n%s", spec, slices.Sorted(maps.Keys(files)), conf)
		}
	}
	for _, spec := range strings.Split(devices, ";") {
		mac := strings.ToUpper(strings.TrimPrefix(spec, "mac:"))
		if !slices.ContainsFunc(slices.Collect(maps.Values(files)), func(b []byte) bool { return strings.Contains(string(b), "\nmac-address="+mac+"\n") }) {
			t.Errorf("match-device has %s, which no profile written is bound to:\n%s", spec, conf)
		}
	}
}
