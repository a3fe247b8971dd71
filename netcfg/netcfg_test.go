package netcfg

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/netcfg/golden and the README's key tables")

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
	// nor the host has resolvers (docs/cloud-init.md, "Proxmox VE").
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

// TestParseInvalid: each fixture has one bad field. A document that cannot
// be read at all is an error; any other bad field leaves out the smallest
// part it belongs to, and the one note says which field and what was left
// out, never the text of the field.
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
			var got string
			switch {
			case err != nil:
				got = err.Error()
			case len(c.Notes) != 1:
				t.Fatalf("accepted with notes %q: %+v", c.Notes, c)
			default:
				got = c.Notes[0]
			}
			if got != strings.TrimSpace(string(want)) {
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
	_, err := Parse(readFixture(t, "invalid/v1-config-not-list.yaml"))
	if !errors.As(err, &fe) || fe.Path != "config" {
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

// TestFromSmartOSErrors: sdc:nics that is not an array is an error; every
// other bad field leaves out the smallest part it belongs to, with one
// note, and the good nic keeps its address.
func TestFromSmartOSErrors(t *testing.T) {
	nic := `{"interface": "net0", "mac": "90:b8:d0:00:00:01", "ips": ["10.0.0.5/24"]}`
	for _, tc := range []struct{ nics, routes, resolvers, want string }{
		{nics: `[{"interface": "net0"`, want: "sdc:nics: invalid JSON: unexpected EOF"},
		{nics: `{"interface": "net0"}`, want: "sdc:nics: must be a list, not a mapping"},
		{nics: `[` + nic + `, {"mac": "90:b8:d0:00:00:02"}]`, want: "sdc:nics[1].interface: missing; the nic left out"},
		{nics: `[` + nic + `, {"interface": "net1", "ips": ["10.0.0.300/24"]}]`, want: `sdc:nics[1].ips[0]: not an IP address; the address left out`},
		{nics: `[` + nic + `, {"interface": "net1", "mac": "nope"}]`, want: `sdc:nics[1].mac: not a MAC address; the nic left out`},
		{nics: `[` + nic + `, {"interface": "net1", "ips": [5]}]`, want: `sdc:nics[1].ips[0]: must be a string, not a number; the address left out`},
		{nics: `[` + nic + `, {"interface": "net1", "primary": true, "ips": ["10.1.0.5/24"], "gateways": ["10.0.0.x"]}]`, want: `sdc:nics[1].gateways[0]: not an IP address; the gateway left out`},
		{nics: `[` + nic + `,` + nic + `]`, want: `sdc:nics[1].interface: the name is already used by sdc:nics[0]; the nic left out`},
		{nics: `[` + nic + `]`, routes: `[{"dst": "10.0.0.0/8"}]`, want: "sdc:routes[0].gateway: missing; the route left out"},
		{nics: `[` + nic + `]`, routes: `[{"dst": "10.0.0.0/8", "gateway": "10.0.0.1"}`, want: "sdc:routes: invalid JSON: unexpected EOF; every route left out"},
		{nics: `[` + nic + `]`, routes: `[{"dst": "10.0.0.0/8", "gateway": "10.0.0.1", "x": "\u0000"}, {"dst": "10.0.0.0/33", "gateway": "10.0.0.1"}]`, want: "sdc:routes[1].dst: a bad prefix length; the route left out"},
		{nics: `[` + nic + `]`, resolvers: `["8.8.8.8", "dns.google"]`, want: `sdc:resolvers[1]: not an IP address; the resolver left out`},
		{nics: `[` + nic + `]`, resolvers: `["8.8.8.8"] x`, want: "sdc:resolvers: invalid JSON: data after the array; every resolver left out"},
	} {
		c, err := FromSmartOS([]byte(tc.nics), []byte(tc.routes), []byte(tc.resolvers), "")
		var got string
		switch {
		case err != nil:
			got = err.Error()
		case len(c.Notes) != 1:
			t.Errorf("FromSmartOS(%s, %s, %s): notes %q", tc.nics, tc.routes, tc.resolvers, c.Notes)
			continue
		default:
			got = c.Notes[0]
			if i := c.ByMAC("90:b8:d0:00:00:01"); i == nil || len(i.Addresses) != 1 {
				t.Errorf("FromSmartOS(%s, %s, %s): the good nic lost its address: %+v", tc.nics, tc.routes, tc.resolvers, c.Interfaces)
			}
		}
		if got != tc.want {
			t.Errorf("FromSmartOS(%s, %s, %s)\n got: %v\nwant: %s", tc.nics, tc.routes, tc.resolvers, got, tc.want)
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

// TestGolden keeps what MarshalV1 and renderNetworkd make of every fixture
// in testdata/netcfg/golden, for review; -update rewrites them.
func TestGolden(t *testing.T) {
	for _, f := range validFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			c := f.parse(t)
			v1, err := c.MarshalV1()
			if err != nil {
				t.Fatal(err)
			}
			files, err := renderNetworkd(c, nil)
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

// TestLinkNamesOneAlphabet: a NIC set-name "e$(>pwn)" reached ifupdown's
// "up ip link set dev ..." lines, which ifupdown runs with sh -c: a
// command run as root at every ifup. Every path by which a name enters
// the model takes it through ValidLinkName; a bad name leaves its link
// out (noted, never quoted), the good link stays, and no renderer writes
// the name.
func TestLinkNamesOneAlphabet(t *testing.T) {
	good := "{type: physical, name: good0, mac_address: '02:00:00:00:00:09', subnets: [{type: dhcp}]}"
	goodV2 := "good0: {match: {macaddress: '02:00:00:00:00:09'}, set-name: good0, dhcp4: true}"
	for _, bad := range []string{"e$(>pwn)", "e`id`", "e;reboot", "e|x", "e&x", "e*", "e?", "e[0]", "e!", "a,b", "a:b", "a=b", "-e", "e f", "e'x", "e\\\\x", "~e", "e#x", "e/x", "..", "averyveryverylongname"} {
		q := "'" + strings.ReplaceAll(bad, "'", "''") + "'"
		for _, doc := range []string{
			"version: 2\nethernets:\n  " + goodV2 + "\n  e0: {match: {macaddress: '02:00:00:00:00:01'}, set-name: " + q + ", dhcp4: true}",
			"version: 2\nethernets:\n  " + goodV2 + "\n  " + q + ": {dhcp4: true}",
			"version: 2\nethernets:\n  " + goodV2 + "\nbonds:\n  " + q + ": {interfaces: [good0], dhcp4: true}",
			"version: 2\nethernets:\n  " + goodV2 + "\nbridges:\n  br0: {interfaces: [" + q + "], dhcp4: true}",
			"version: 2\nethernets:\n  " + goodV2 + "\nvlans:\n  v5: {id: 5, link: " + q + ", dhcp4: true}",
			"version: 1\nconfig:\n- " + good + "\n- {type: physical, name: " + q + ", subnets: [{type: dhcp}]}",
			"version: 1\nconfig:\n- " + good + "\n- {type: bond, name: bond0, bond_interfaces: [" + q + "], subnets: [{type: dhcp}]}",
			"version: 1\nconfig:\n- " + good + "\n- {type: vlan, name: v5, vlan_id: 5, vlan_link: " + q + "}",
		} {
			c, err := Parse([]byte(doc))
			if err != nil {
				t.Fatalf("%s\nthe whole document refused: %v", doc, err)
			}
			checkBadNameLeftOut(t, doc, bad, c)
		}
		nics := `[{"interface": "good0", "mac": "02:00:00:00:00:09", "ips": ["dhcp"]}, {"interface": ` + strconv.Quote(bad) + `, "ips": ["dhcp"]}]`
		c, err := FromSmartOS([]byte(nics), nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		checkBadNameLeftOut(t, nics, bad, c)
	}
}

func checkBadNameLeftOut(t *testing.T, doc, bad string, c *Config) {
	t.Helper()
	// The path names a v2 key as it is (that is where); the message after
	// it never repeats the value.
	if c.Lookup("good0") == nil || len(c.Notes) != 1 || bad != ".." && strings.Contains(c.Notes[0][strings.Index(c.Notes[0], ": "):], bad) {
		t.Errorf("%s\ninterfaces %+v\nnotes %q: want good0 kept and one note that does not quote the name", doc, c.Interfaces, c.Notes)
	}
	files, err := renderNetworkd(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	nm, _, err := renderNetworkManager(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(files, nm)
	ifup, _, err := renderIfupdown(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	files["ifupdown"] = ifup
	for name, b := range files {
		if strings.Contains(string(b), bad) {
			t.Errorf("%s\n%s writes the name:\n%s", doc, name, b)
		}
	}
}

func TestValidLinkName(t *testing.T) {
	for _, s := range []string{"eth0", "ens3", "bond0.100", "br-lan", "wan_1", "a", "123456789012345", "e.", "..."} {
		if !ValidLinkName(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", ".", "..", "-e", "1234567890123456", "e 0", "e\t0", "e/0", "e:0", "e$", "e*", "e,", "e;", "e=", "e'", "e\"", "e`", "e\\", "e(", "e|", "e&", "e<", "e>", "e~", "e#", "e!", "e[", "é", "e\x00"} {
		if ValidLinkName(s) {
			t.Errorf("%q accepted", s)
		}
	}
}

// One unsupported entry (a v1 infiniband NIC) refused the whole document,
// leaving every other NIC unconfigured; it is left out alone, and said.
func TestParseUnsupportedEntryLeftOutAlone(t *testing.T) {
	c, err := Parse([]byte("version: 1\nconfig:\n" +
		"- {type: infiniband, name: ib0, mac_address: 'a0:00:02:20:fe:80:00:00:00:00:00:00:ec:0d:9a:03:00:44:36:8d'}\n" +
		"- {type: physical, name: eth0, mac_address: '52:54:00:00:00:01', subnets: [{type: static, address: 192.0.2.5/24}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if i := c.Lookup("eth0"); i == nil || len(i.Addresses) != 1 || c.Lookup("ib0") != nil {
		t.Errorf("interfaces %+v", c.Interfaces)
	}
	want := []string{"config[0].type: not a type seedkeeper handles (physical, bond, vlan, bridge, nameserver, route or loopback); the entry left out"}
	if !slices.Equal(c.Notes, want) {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
}

// What is left out is told in a bounded list: a document of a thousand
// bad routes gives the first ones and a count, and keeps its good route.
func TestParseNotesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 2\nethernets:\n  eth0:\n    addresses: [192.0.2.5/24]\n    routes:\n    - {to: 10.0.0.0/8, via: 192.0.2.1}\n")
	for range 1000 {
		b.WriteString("    - {to: 10.0.0.0/8, via: 192.0.2.1, metric: -1}\n")
	}
	c, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) != maxNotes+1 || c.Notes[maxNotes] != fmt.Sprintf("and %d more parts left out", 1000-maxNotes) {
		t.Errorf("%d notes, last %q", len(c.Notes), c.Notes[len(c.Notes)-1])
	}
	if r := c.Interfaces[0].Routes; len(r) != 1 {
		t.Errorf("routes %v", r)
	}
}

// One element of a nameserver or search list that is not a string (or
// holds a line break) leaves out that element, not the list: the good
// nameservers and domains beside it stay.
func TestParseBadListElementDegradesAlone(t *testing.T) {
	for _, doc := range []string{
		"version: 2\nethernets: {eth0: {addresses: [192.0.2.5/24], nameservers: {addresses: [192.0.2.53, [x], \"192.0.2.54\\n\"], search: [a.example, {b: c}, \"c\\nd\"]}}}",
		"version: 1\nconfig: [{type: physical, name: eth0, subnets: [{type: static, address: 192.0.2.5/24, dns_nameservers: [192.0.2.53, 7, \"192.0.2.54\\n\"], dns_search: [a.example, [b], \"c\\nd\"]}]}]",
		"version: 1\nconfig: [{type: physical, name: eth0, subnets: [{type: static, address: 192.0.2.5/24}]}, {type: nameserver, address: [192.0.2.53, 7, \"192.0.2.54\\n\"], search: [a.example, [b], \"c\\nd\"]}]",
	} {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		dns := c.DNS
		if i := c.Lookup("eth0"); i != nil && len(i.DNS.Nameservers)+len(i.DNS.Search) > 0 {
			dns = i.DNS
		}
		if !slices.Equal(dns.Nameservers, []netip.Addr{netip.MustParseAddr("192.0.2.53")}) || !slices.Equal(dns.Search, []string{"a.example"}) {
			t.Errorf("%s:\n DNS = %+v, want 192.0.2.53 and a.example kept; notes %q", doc, dns, c.Notes)
		}
		if len(c.Notes) != 4 {
			t.Errorf("%s:\n notes %q, want one per bad element", doc, c.Notes)
		}
	}
}

// Device types seedkeeper does not handle (tunnels, wifis, VRFs and the
// rest of netplan's) were dropped with no word; each such entry is a
// note naming its ID now, and the links seedkeeper handles stay.
func TestParseV2UnhandledSectionsNoted(t *testing.T) {
	c, err := Parse([]byte("version: 2\nethernets: {eth0: {dhcp4: true}}\n" +
		"tunnels: {he0: {mode: sit, remote: 192.0.2.1}, he1: {mode: gre}}\nwifis: {wlan0: {dhcp4: true}}\nvrfs: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Lookup("eth0") == nil || len(c.Interfaces) != 1 {
		t.Errorf("interfaces %+v", c.Interfaces)
	}
	want := []string{
		"tunnels.he0: a device type seedkeeper does not handle; the link left out",
		"tunnels.he1: a device type seedkeeper does not handle; the link left out",
		"wifis.wlan0: a device type seedkeeper does not handle; the link left out",
	}
	if !slices.Equal(c.Notes, want) {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
}
