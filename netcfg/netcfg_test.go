package netcfg

import (
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/netcfg/golden")

const fixtures = "../testdata/netcfg"

// fixture is one valid input: a cloud-init document, or an sdc case.
type fixture struct {
	name   string // file name
	data   []byte
	smarts bool // an sdc case (testdata/netcfg/sdc)
}

func validFixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	for _, dir := range []string{"valid", "sdc"} {
		paths, err := filepath.Glob(filepath.Join(fixtures, dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fixture{name: filepath.Base(p), data: b, smarts: dir == "sdc"})
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d fixtures found in %s", len(out), fixtures)
	}
	return out
}

// sdcCase is the JSON layout of a testdata/netcfg/sdc file.
type sdcCase struct {
	Nics      json.RawMessage `json:"nics"`
	Routes    json.RawMessage `json:"routes"`
	Resolvers json.RawMessage `json:"resolvers"`
	DNSDomain string          `json:"dns_domain"`
}

func (f fixture) parse(t testing.TB) *Config {
	t.Helper()
	var c *Config
	var err error
	if f.smarts {
		var sc sdcCase
		if err := json.Unmarshal(f.data, &sc); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		c, err = FromSmartOS(sc.Nics, sc.Routes, sc.Resolvers, sc.DNSDomain)
	} else {
		c, err = Parse(f.data)
	}
	if err != nil {
		t.Fatalf("%s: %v", f.name, err)
	}
	return c
}

// isV2 reports whether the fixture is a v2 document (whose IDs and
// selectors v1 cannot always express).
func (f fixture) isV2() bool { return strings.HasPrefix(f.name, "v2-") }

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }
func ips(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, ip(s))
	}
	return out
}
func boolp(b bool) *bool { return &b }

func TestParseProxmoxStaticDual(t *testing.T) {
	c := fixture{name: "proxmox-static-dual.yaml", data: readFixture(t, "valid/proxmox-static-dual.yaml")}.parse(t)
	want := &Config{
		Interfaces: []Interface{
			{
				ID: "eth0", Kind: Physical, Name: "eth0", MAC: "bc:24:11:aa:bb:01",
				Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("2001:db8::10/64")},
				Routes: []Route{
					{To: pfx("0.0.0.0/0"), Via: ip("192.0.2.1")},
					{To: pfx("::/0"), Via: ip("2001:db8::1")},
				},
			},
			{ID: "eth1", Kind: Physical, Name: "eth1", MAC: "bc:24:11:aa:bb:02", DHCP4: true, SLAAC: true},
		},
		DNS: DNS{Nameservers: ips("192.0.2.53", "192.0.2.54"), Search: []string{"example.lan"}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%+v\nwant\n%+v", c, want)
	}
}

func TestParseV1Reference(t *testing.T) {
	c := fixture{data: readFixture(t, "valid/v1-reference-all.yaml")}.parse(t)
	if len(c.Interfaces) != 6 {
		t.Fatalf("got %d interfaces, want 6", len(c.Interfaces))
	}
	i1 := c.Lookup("interface1")
	wantI1 := Interface{
		ID: "interface1", Kind: Physical, Name: "interface1", MAC: "00:11:22:33:44:56",
		DHCP4: true, DHCPMetric: 200,
		Addresses: []netip.Prefix{pfx("10.184.225.122/30")},
		Routes:    []Route{{To: pfx("10.176.0.0/12"), Via: ip("10.184.225.121")}},
	}
	if !reflect.DeepEqual(*i1, wantI1) {
		t.Errorf("interface1 = %+v, want %+v", *i1, wantI1)
	}
	i0 := c.Lookup("interface0")
	if i0.MTU != 9000 || !reflect.DeepEqual(i0.DNS, DNS{Nameservers: ips("192.168.23.2"), Search: []string{"exemplary.maas"}}) {
		t.Errorf("interface0 = %+v", *i0)
	}
	bond := c.Lookup("bond0")
	if bond.Kind != Bond || !reflect.DeepEqual(bond.Links, []string{"gbe0", "gbe1"}) || bond.Params["mode"] != "active-backup" {
		t.Errorf("bond0 = %+v", *bond)
	}
	vlan := c.Lookup("eth0.101")
	if vlan.Kind != VLAN || vlan.VLANID != 101 || vlan.VLANLink != "eth0" || vlan.MTU != 1500 {
		t.Errorf("eth0.101 = %+v", *vlan)
	}
	br := c.Lookup("br0")
	if !reflect.DeepEqual(br.Params, map[string]string{"stp": "off", "forward-delay": "1"}) {
		t.Errorf("br0 params = %v", br.Params)
	}
	wantGlobal := []Route{{To: pfx("192.168.24.0/24"), Via: ip("192.168.24.1"), Metric: 3}}
	if !reflect.DeepEqual(c.Routes, wantGlobal) {
		t.Errorf("global routes = %v, want %v", c.Routes, wantGlobal)
	}
	if !reflect.DeepEqual(c.DNS, DNS{Nameservers: ips("192.168.23.2", "8.8.8.8"), Search: []string{"exemplary"}}) {
		t.Errorf("global DNS = %+v", c.DNS)
	}
}

func TestParseV2Reference(t *testing.T) {
	var got []*Config
	for _, name := range []string{"v2-reference.yaml", "v2-reference-wrapped.yaml", "v2-reference.json", "v2-reference-wrapped.json"} {
		got = append(got, fixture{name: name, data: readFixture(t, "valid/"+name)}.parse(t))
	}
	for i := 1; i < len(got); i++ {
		if !reflect.DeepEqual(got[0], got[i]) {
			t.Errorf("variant %d differs:\n%+v\n%+v", i, got[0], got[i])
		}
	}
	c := got[0]
	ids := []string{}
	for _, ifc := range c.Interfaces {
		ids = append(ids, ifc.ID)
	}
	if want := []string{"net0", "net1", "bond0", "br0", "eth0.100"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("IDs = %v, want %v", ids, want)
	}
	net0 := Interface{
		ID: "net0", Kind: Physical, Name: "eth0", MAC: "bc:24:11:aa:bb:01", MTU: 1500,
		Addresses: []netip.Prefix{pfx("192.0.2.10/24"), pfx("2001:db8::10/64")},
		Routes: []Route{
			{To: pfx("0.0.0.0/0"), Via: ip("192.0.2.1")},
			{To: pfx("::/0"), Via: ip("2001:db8::1")},
		},
		DNS: DNS{Nameservers: ips("192.0.2.53"), Search: []string{"example.lan"}},
	}
	if !reflect.DeepEqual(c.Interfaces[0], net0) {
		t.Errorf("net0 = %+v\nwant %+v", c.Interfaces[0], net0)
	}
	bond := c.Lookup("bond0")
	if !reflect.DeepEqual(bond.Params, map[string]string{"mode": "802.3ad", "mii-monitor-interval": "100"}) || bond.Name != "bond0" {
		t.Errorf("bond0 = %+v", *bond)
	}
	if m := c.Members(c.Lookup("br0")); len(m) != 1 || m[0] != bond {
		t.Errorf("Members(br0) = %v", m)
	}
	if got := c.Master(c.Lookup("net1")); got != bond {
		t.Errorf("Master(net1) = %v", got)
	}
	if v := c.VLANs(c.Lookup("net0")); len(v) != 1 || v[0].ID != "eth0.100" {
		t.Errorf("VLANs(net0) = %v", v)
	}
}

func TestParseV2Match(t *testing.T) {
	c := fixture{data: readFixture(t, "valid/v2-match-setname.yaml")}.parse(t)
	lan := c.Lookup("lan")
	if lan.MAC != "bc:24:11:aa:bb:0a" || lan.Name != "lan0" || lan.MatchName != "" {
		t.Errorf("lan = %+v", *lan)
	}
	wantRoutes := []Route{
		{To: pfx("0.0.0.0/0"), Via: ip("10.1.0.1")},
		{To: pfx("172.16.0.0/12"), Via: ip("10.1.0.254"), Metric: 50, Table: 100},
	}
	if !reflect.DeepEqual(lan.Routes, wantRoutes) {
		t.Errorf("lan routes = %v", lan.Routes)
	}
	st := c.Lookup("storage")
	if st.MatchName != "enp7s*" || st.MatchDriver != "ixgbe" || st.Name != "stor0" || st.MTU != 9000 ||
		!st.DHCP4 || st.DHCPMetric != 300 || st.AcceptRA == nil || *st.AcceptRA {
		t.Errorf("storage = %+v", *st)
	}
	ens3 := c.Lookup("ens3")
	if ens3.MatchName != "ens3" || ens3.Name != "" || ens3.LinkName() != "ens3" || !ens3.DHCP6 || !*ens3.AcceptRA {
		t.Errorf("ens3 = %+v", *ens3)
	}
	if got, want := c.MACs(), []string{"bc:24:11:aa:bb:0a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("MACs = %v, want %v", got, want)
	}
	if got := c.ByMAC("BC-24-11-AA-BB-0A"); got != lan {
		t.Errorf("ByMAC = %v", got)
	}
	if got := c.ByMAC("bc:24:11:aa:bb:0b"); got != nil {
		t.Errorf("ByMAC(unknown) = %v", got)
	}
}

func TestParseV1Variants(t *testing.T) {
	c := fixture{data: readFixture(t, "valid/v1.json")}.parse(t)
	want := Interface{
		ID: "ens3", Kind: Physical, Name: "ens3", MAC: "52:54:00:ab:cd:ef", MTU: 1450,
		Addresses: []netip.Prefix{pfx("10.20.30.40/24"), pfx("fd00::40/64")},
		DHCP6:     true,
		Routes: []Route{
			{To: pfx("0.0.0.0/0"), Via: ip("10.20.30.1")},
			{To: pfx("10.99.0.0/16"), Via: ip("10.20.30.254"), Metric: 10},
		},
	}
	if !reflect.DeepEqual(c.Interfaces[0], want) {
		t.Errorf("got  %+v\nwant %+v", c.Interfaces[0], want)
	}
	w := fixture{data: readFixture(t, "valid/v1-wrapped.yaml")}.parse(t)
	eth0 := w.Interfaces[0]
	if !eth0.SLAAC || !eth0.DHCP6 || eth0.AcceptRA == nil || !*eth0.AcceptRA ||
		!reflect.DeepEqual(eth0.DNS, DNS{Nameservers: ips("1.1.1.1"), Search: []string{"example.net"}}) {
		t.Errorf("wrapped eth0 = %+v", eth0)
	}
	if len(w.DNS.Nameservers) != 0 {
		t.Errorf("interface nameserver leaked into global DNS: %+v", w.DNS)
	}
}

func TestParseBareNameserver(t *testing.T) {
	// Proxmox writes "- type: nameserver" with no keys when neither the VM
	// nor the host has resolvers (cloud-init.md §5.2).
	c := fixture{data: readFixture(t, "valid/proxmox-dhcp-bare-nameserver.yaml")}.parse(t)
	if len(c.DNS.Nameservers) != 0 || len(c.DNS.Search) != 0 || len(c.Interfaces) != 1 || !c.Interfaces[0].DHCP4 {
		t.Errorf("got %+v", c)
	}
	c = fixture{data: readFixture(t, "valid/proxmox-dhcp4-dhcp6.yaml")}.parse(t)
	if !c.Interfaces[0].DHCP4 || !c.Interfaces[0].DHCP6 || c.Interfaces[0].SLAAC {
		t.Errorf("got %+v", c.Interfaces[0])
	}
}

func TestParseDisabled(t *testing.T) {
	for _, name := range []string{"disabled.yaml", "disabled-wrapped.json"} {
		_, err := Parse(readFixture(t, "disabled/"+name))
		if !errors.Is(err, ErrDisabled) {
			t.Errorf("%s: err = %v, want ErrDisabled", name, err)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	errFiles, err := filepath.Glob(filepath.Join(fixtures, "invalid", "*.err"))
	if err != nil || len(errFiles) < 20 {
		t.Fatalf("invalid fixtures: %d, %v", len(errFiles), err)
	}
	for _, ef := range errFiles {
		base := strings.TrimSuffix(ef, ".err")
		inputs, _ := filepath.Glob(base + ".*")
		var input string
		for _, p := range inputs {
			if p != ef {
				input = p
			}
		}
		t.Run(filepath.Base(base), func(t *testing.T) {
			want, err := os.ReadFile(ef)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(input)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(data)
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			if got := err.Error(); got != strings.TrimSpace(string(want)) {
				t.Errorf("error\n got: %s\nwant: %s", got, strings.TrimSpace(string(want)))
			}
		})
	}
}

func TestParseErrorsOther(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty network configuration"},
		{"version: [", "network configuration is not YAML or JSON"},
		{"network: 5", "network: must be a mapping, not a number"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	var fe *FieldError
	_, err := Parse(readFixture(t, "invalid/v1-bad-address.yaml"))
	if !errors.As(err, &fe) || fe.Path != "config[2].subnets[0].address" {
		t.Errorf("not a *FieldError with the path: %#v", err)
	}
}

func TestParseValue(t *testing.T) {
	// VMware guestinfo metadata carries network as a mapping, decoded from
	// JSON: numbers are float64 there.
	var md map[string]any
	doc := `{"instance-id": "i-1", "network": {"version": 2, "ethernets": {"nics": {
	  "match": {"name": "ens*"}, "mtu": 1500, "addresses": ["192.0.2.5/24"], "gateway4": "192.0.2.1"}}}}`
	if err := json.Unmarshal([]byte(doc), &md); err != nil {
		t.Fatal(err)
	}
	c, err := ParseValue(md["network"])
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interfaces) != 1 || c.Interfaces[0].MTU != 1500 || c.Interfaces[0].MatchName != "ens*" ||
		c.Interfaces[0].Routes[0].Via != ip("192.0.2.1") {
		t.Errorf("got %+v", c.Interfaces)
	}
	if _, err := ParseValue(map[string]any{"version": 2.5}); err == nil || err.Error() != "version: not a whole number" {
		t.Errorf("fractional version: %v", err)
	}
}

func TestFromSmartOSDualStack(t *testing.T) {
	c := fixture{name: "dual-stack.json", data: readFixture(t, "sdc/dual-stack.json"), smarts: true}.parse(t)
	// Each sdc:routes entry goes on the nic whose subnet holds its gateway
	// (cloud-init copies them all onto every nic, where the kernel refuses
	// the ones it cannot reach).
	want := &Config{
		Interfaces: []Interface{
			{
				ID: "net0", Kind: Physical, Name: "net0", MAC: "90:b8:d0:ae:64:51", MTU: 1500,
				Addresses: []netip.Prefix{pfx("2001:4800:78ff:1b:be76:4eff:fe06:96b3/64"), pfx("8.12.42.51/24"), pfx("8.12.42.52/24")},
				// The primary gateways go on the first v6 and first v4 address.
				Routes: []Route{
					{To: pfx("::/0"), Via: ip("2001::1")},
					{To: pfx("0.0.0.0/0"), Via: ip("8.12.42.1")},
					{To: pfx("3.0.0.0/8"), Via: ip("8.12.42.3")},
				},
			},
			{
				// Not primary: its gateway is ignored; it gets the
				// sdc:routes entry whose gateway is on its subnet.
				ID: "net1", Kind: Physical, Name: "net1", MAC: "90:b8:d0:a5:ff:cd", MTU: 8500,
				Addresses: []netip.Prefix{pfx("192.168.128.93/22")},
				Routes:    []Route{{To: pfx("192.168.1.1/32"), Via: ip("192.168.128.93")}},
			},
		},
		DNS: DNS{Nameservers: ips("8.8.8.8", "8.8.4.4"), Search: []string{"example.com"}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%+v\nwant\n%+v", c, want)
	}
}

func TestFromSmartOSCases(t *testing.T) {
	load := func(name string) *Config {
		return fixture{name: name, data: readFixture(t, "sdc/"+name), smarts: true}.parse(t)
	}
	// The gateway comes from the primary nic even when it is not the first.
	c := load("primary-second.json")
	if r := c.Interfaces[0].Routes; len(r) != 1 || r[0].To.Bits() == 0 {
		t.Errorf("net0 routes = %v, want only the sdc route", r)
	}
	if r := c.Interfaces[1].Routes; len(r) != 1 || r[0] != (Route{To: pfx("0.0.0.0/0"), Via: ip("172.16.0.1")}) {
		t.Errorf("net1 routes = %v, want only the default (10.0.0.254 is not on its subnet)", r)
	}
	if len(c.DNS.Search) != 0 {
		t.Errorf("search without sdc:dns_domain: %v", c.DNS.Search)
	}
	// dhcp: DHCPv4, no static subnet, so no gateway; the sdc route has no
	// nic known to reach its gateway and becomes a global route.
	c = load("dhcp.json")
	if i := c.Interfaces[0]; !i.DHCP4 || len(i.Routes) != 0 || len(i.Addresses) != 0 {
		t.Errorf("dhcp = %+v", i)
	}
	if len(c.Routes) != 1 || c.Routes[0].Via != ip("10.0.0.254") {
		t.Errorf("dhcp global routes = %v", c.Routes)
	}
	// addrconf: SLAAC + DHCPv6, never an address called "addrconf".
	c = load("addrconf.json")
	if i := c.Interfaces[0]; !i.SLAAC || !i.DHCP6 || len(i.Addresses) != 1 ||
		!reflect.DeepEqual(i.Routes, []Route{{To: pfx("0.0.0.0/0"), Via: ip("10.0.0.1")}}) {
		t.Errorf("addrconf = %+v", i)
	}
	if !reflect.DeepEqual(c.DNS, DNS{Nameservers: ips("10.0.0.2"), Search: []string{"triton.zone"}}) {
		t.Errorf("DNS = %+v", c.DNS)
	}
	// Nothing at all: an empty configuration.
	c, err := FromSmartOS(nil, []byte(" "), nil, "example.com")
	if err != nil || len(c.Interfaces) != 0 || len(c.DNS.Search) != 0 {
		t.Errorf("empty = %+v, %v", c, err)
	}
}

func TestFromSmartOSErrors(t *testing.T) {
	nic := `{"interface": "net0", "mac": "90:b8:d0:00:00:01", "ips": ["10.0.0.5/24"]}`
	for _, tc := range []struct{ nics, routes, resolvers, want string }{
		{nics: `[{"interface": "net0"`, want: "sdc:nics: invalid JSON: unexpected EOF"},
		{nics: `{"interface": "net0"}`, want: "sdc:nics: must be a list, not a mapping"},
		{nics: `[` + nic + `, {"mac": "90:b8:d0:00:00:02"}]`, want: "sdc:nics[1].interface: missing"},
		{nics: `[` + nic + `, {"interface": "net1", "ips": ["10.0.0.300/24"]}]`, want: `sdc:nics[1].ips[0]: "10.0.0.300/24" is not an IP address`},
		{nics: `[{"interface": "net0", "mac": "nope"}]`, want: `sdc:nics[0].mac: "nope" is not a MAC address`},
		{nics: `[{"interface": "net0", "ips": [5]}]`, want: `sdc:nics[0].ips[0]: must be a string, not a number`},
		{nics: `[{"interface": "net0", "primary": true, "ips": ["10.0.0.5/24"], "gateways": ["10.0.0.x"]}]`, want: `sdc:nics[0].gateways[0]: "10.0.0.x" is not an IP address`},
		{nics: `[` + nic + `,` + nic + `]`, want: `sdc:nics[1].interface: "net0" is already used by sdc:nics[0]`},
		{nics: `[` + nic + `]`, routes: `[{"dst": "10.0.0.0/8"}]`, want: "sdc:routes[0].gateway: missing"},
		{nics: `[` + nic + `]`, routes: `[{"dst": "10.0.0.0/8", "gateway": "10.0.0.1"}`, want: "sdc:routes: invalid JSON: unexpected EOF"},
		{nics: `[` + nic + `]`, resolvers: `["8.8.8.8", "dns.google"]`, want: `sdc:resolvers[1]: "dns.google" is not an IP address`},
		{nics: `[` + nic + `]`, resolvers: `["8.8.8.8"] x`, want: "sdc:resolvers: invalid JSON: data after the array"},
	} {
		_, err := FromSmartOS([]byte(tc.nics), []byte(tc.routes), []byte(tc.resolvers), "")
		if err == nil || err.Error() != tc.want {
			t.Errorf("FromSmartOS(%s, %s, %s)\n got: %v\nwant: %s", tc.nics, tc.routes, tc.resolvers, err, tc.want)
		}
	}
}

// TestMarshalV1RoundTrip: what MarshalV1 writes, Parse reads back to the
// same Config. v2 documents use IDs, globs and tables v1 cannot carry, so
// for them the v1 form must be a fixed point instead.
func TestMarshalV1RoundTrip(t *testing.T) {
	for _, f := range validFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			c := f.parse(t)
			out, err := c.MarshalV1()
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(string(out), "network:") || !strings.HasPrefix(string(out), "version: 1\n") {
				t.Fatalf("not an unwrapped v1 document:\n%s", out)
			}
			back, err := Parse(out)
			if err != nil {
				t.Fatalf("re-parse: %v\n%s", err, out)
			}
			if !f.isV2() && !reflect.DeepEqual(back, c) {
				t.Errorf("round trip differs\n got: %+v\nwant: %+v\n%s", back, c, out)
			}
			again, err := back.MarshalV1()
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(out) {
				t.Errorf("MarshalV1 is not a fixed point:\n%s\n---\n%s", out, again)
			}
		})
	}
}

func TestMarshalV1Shape(t *testing.T) {
	c := &Config{Interfaces: []Interface{{
		ID: "eth0", Kind: Physical, Name: "eth0", MAC: "11:22:33:44:55:00",
		Addresses: []netip.Prefix{pfx("10.0.0.5/24")},
		Routes: []Route{
			{To: pfx("10.9.0.0/16"), Via: ip("10.0.0.9")},
			{To: pfx("0.0.0.0/0"), Via: ip("10.0.0.1")},
		},
	}}}
	out, err := c.MarshalV1()
	if err != nil {
		t.Fatal(err)
	}
	want := `version: 1
config:
  - type: physical
    name: 'eth0'
    mac_address: '11:22:33:44:55:00'
    subnets:
      - type: static
        address: '10.0.0.5/24'
        routes:
          - {destination: '10.9.0.0/16', gateway: '10.0.0.9'}
          - {destination: '0.0.0.0/0', gateway: '10.0.0.1'}
`
	// The MAC is quoted: PyYAML would read 11:22:33:44:55:00 as a
	// sexagesimal number.
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// TestGolden keeps what MarshalV1 and RenderNetworkd make of every fixture
// in testdata/netcfg/golden, for review; -update rewrites them.
func TestGolden(t *testing.T) {
	for _, f := range validFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			c := f.parse(t)
			v1, err := c.MarshalV1()
			if err != nil {
				t.Fatal(err)
			}
			files, err := RenderNetworkd(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString("=== MarshalV1\n")
			b.Write(v1)
			names := make([]string, 0, len(files))
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				b.WriteString("=== " + n + "\n")
				b.Write(files[n])
			}
			golden := filepath.Join(fixtures, "golden", f.golden())
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update)", err)
			}
			if b.String() != string(want) {
				t.Errorf("output differs from %s (run with -update after checking):\n%s", golden, b.String())
			}
		})
	}
}

func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f fixture) golden() string {
	if f.smarts {
		return "sdc-" + f.name + ".txt"
	}
	return f.name + ".txt"
}
