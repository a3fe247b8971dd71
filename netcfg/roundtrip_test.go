package netcfg

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readSystemdINI reads a file the way systemd's config parser splits it:
// a line ends at LF, CR or NUL; a line ending in a backslash goes on in
// the next; '#' and ';' start comments. It is strict about the rest so
// that any line a writer did not mean to write shows up: continuation
// lines, keys that are not letters and digits, white space around '=',
// empty values. Comments are kept (the writers put skipped parameters in
// them).
func readSystemdINI(b []byte) (iniFile, []string, error) {
	var f iniFile
	var comments []string
	lines := strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' || r == '\r' || r == 0 })
	for n, line := range lines {
		if strings.HasSuffix(line, `\`) {
			return nil, nil, fmt.Errorf("line %d: continues on the next line", n+1)
		}
		switch {
		case line[0] == '#' || line[0] == ';':
			comments = append(comments, line)
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") || len(line) < 3 {
				return nil, nil, fmt.Errorf("line %d: bad section header %q", n+1, line)
			}
			f = append(f, iniSection{name: line[1 : len(line)-1]})
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || k == "" || strings.TrimSpace(v) != v || v == "" {
				return nil, nil, fmt.Errorf("line %d: bad assignment %q", n+1, line)
			}
			for _, r := range k {
				if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
					return nil, nil, fmt.Errorf("line %d: bad key %q", n+1, k)
				}
			}
			if len(f) == 0 {
				return nil, nil, fmt.Errorf("line %d: assignment before any section", n+1)
			}
			f[len(f)-1].kv = append(f[len(f)-1].kv, [2]string{k, v})
		}
	}
	return f, comments, nil
}

// sections returns the names of the sections, in order.
func (f iniFile) sections() []string {
	var out []string
	for _, s := range f {
		out = append(out, s.name)
	}
	return out
}

// checkNetworkdRoundTrip renders c, reads every file back as systemd
// would, and checks that what the files say is what the model says: the
// files are exactly those of the entries, every entry's selector, link
// settings, addresses, DNS, VLANs, members and parameters come back
// unchanged, and nothing else appears (no section or key a value smuggled
// in).
func checkNetworkdRoundTrip(t *testing.T, c *Config) {
	t.Helper()
	files, err := renderNetworkd(c, nil)
	if err != nil {
		t.Fatalf("renderNetworkd: %v", err)
	}
	want := map[string]bool{}
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		base := networkdBase(ifc.ID)
		if len(base)+len(".network") > 255 {
			t.Fatalf("file name of %d bytes", len(base))
		}
		want[base+".network"] = true
		nf, ncomments, err := readSystemdINI(files[base+".network"])
		if err != nil {
			t.Fatalf("%s.network: %v\n%s", base, err, files[base+".network"])
		}
		if len(ncomments) != 1 || ncomments[0] != Header {
			t.Fatalf("%s.network: comments %q, want the header only", base, ncomments)
		}
		checkNetworkFile(t, c, ifc, nf, base)
		if ifc.Kind == Physical {
			continue
		}
		want[base+".netdev"] = true
		df, dcomments, err := readSystemdINI(files[base+".netdev"])
		if err != nil {
			t.Fatalf("%s.netdev: %v\n%s", base, err, files[base+".netdev"])
		}
		checkNetdevFile(t, ifc, df, dcomments, base)
	}
	for name := range files {
		if !want[name] {
			t.Errorf("unexpected file %s", name)
		}
	}
	if len(files) != len(want) {
		t.Fatalf("%d files, want %d (two entries share a name?)", len(files), len(want))
	}
}

func checkNetworkFile(t *testing.T, c *Config, ifc *Interface, f iniFile, base string) {
	t.Helper()
	k := fileCheck{t: t, f: f, name: base + ".network"}
	for _, s := range f.sections() {
		if !slices.Contains([]string{"Match", "Link", "Network", "DHCPv4", "DHCPv6", "Route", "RoutingPolicyRule", "Bridge"}, s) {
			k.fail("unexpected section [%s]", s)
		}
	}
	k.checkMatch(ifc)
	k.checkLink(ifc)
	if ra, set := acceptRA(ifc); c.Master(ifc) == nil && set && k.one("Network", "IPv6AcceptRA") != yesNo(ra) {
		k.fail("IPv6AcceptRA %q, want %s", k.one("Network", "IPv6AcceptRA"), yesNo(ra))
	}
	if n := len(f.get("RoutingPolicyRule", "Table")) + len(f.get("RoutingPolicyRule", "From")) + len(f.get("RoutingPolicyRule", "To")); c.Master(ifc) == nil && n < len(ifc.RoutingPolicy) {
		k.fail("%d routing rules written, want %d", n, len(ifc.RoutingPolicy))
	}
	var vlans []string
	for _, v := range c.VLANs(ifc) {
		vlans = append(vlans, v.LinkName())
	}
	if got := f.get("Network", "VLAN"); !slices.Equal(got, vlans) {
		k.fail("VLAN=%q, want %q", got, vlans)
	}
	if m := c.Master(ifc); m != nil {
		key := "Bridge"
		if m.Kind == Bond {
			key = "Bond"
		}
		if k.one("Network", key) != m.LinkName() {
			k.fail("%s=%q, want %q", key, k.one("Network", key), m.LinkName())
		}
		if len(f.get("Network", "Address"))+len(f.get("Network", "DNS"))+len(f.get("Route", "Gateway")) > 0 {
			k.fail("a member has addresses, DNS or routes")
		}
		return
	}
	k.checkL3(c, ifc)
}

// fileCheck checks one rendered file, failing the test with its name
// and content.
type fileCheck struct {
	t    *testing.T
	f    iniFile
	name string
}

func (k fileCheck) fail(format string, args ...any) {
	k.t.Helper()
	k.t.Fatalf("%s: %s\n%+v", k.name, fmt.Sprintf(format, args...), k.f)
}

// one is the value of a key given at most once, "" when it is not.
func (k fileCheck) one(sec, key string) string {
	k.t.Helper()
	v := k.f.get(sec, key)
	if len(v) > 1 {
		k.fail("%s.%s given %d times", sec, key, len(v))
	}
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// checkMatch checks the selector of a .network file.
func (k fileCheck) checkMatch(ifc *Interface) {
	k.t.Helper()
	switch {
	case ifc.Kind != Physical:
		if k.one("Match", "Name") != ifc.LinkName() {
			k.fail("Match.Name %q, want %q", k.one("Match", "Name"), ifc.LinkName())
		}
	case ifc.MAC != "" && ifc.SetMAC != "":
		if k.one("Match", "PermanentMACAddress") != ifc.MAC {
			k.fail("Match.PermanentMACAddress %q, want %q", k.one("Match", "PermanentMACAddress"), ifc.MAC)
		}
	case ifc.MAC != "":
		if k.one("Match", "MACAddress") != ifc.MAC {
			k.fail("Match.MACAddress %q, want %q", k.one("Match", "MACAddress"), ifc.MAC)
		}
	case ifc.MatchName != "":
		if k.one("Match", "Name") != ifc.MatchName {
			k.fail("Match.Name %q, want %q", k.one("Match", "Name"), ifc.MatchName)
		}
	}
	if ifc.Kind == Physical && k.one("Match", "Driver") != ifc.MatchDriver {
		k.fail("Match.Driver %q, want %q", k.one("Match", "Driver"), ifc.MatchDriver)
	}
}

// checkLink checks the [Link] section of a .network file.
func (k fileCheck) checkLink(ifc *Interface) {
	k.t.Helper()
	if mtu := k.one("Link", "MTUBytes"); mtu != "" && mtu != strconv.Itoa(ifc.MTU) || mtu == "" && ifc.MTU != 0 {
		k.fail("Link.MTUBytes %q, want %d", mtu, ifc.MTU)
	}
	setMAC := ifc.SetMAC
	if ifc.Kind != Physical {
		setMAC = ifc.MAC
	}
	if got := k.one("Link", "MACAddress"); got != setMAC {
		k.fail("Link.MACAddress %q, want %q", got, setMAC)
	}
	if got, want := k.one("Link", "RequiredForOnline"), map[bool]string{true: "no"}[ifc.Optional]; got != want {
		k.fail("Link.RequiredForOnline %q, want %q", got, want)
	}
}

// checkL3 checks the addresses, DNS and routes of a link that is no
// member.
func (k fileCheck) checkL3(c *Config, ifc *Interface) {
	k.t.Helper()
	f := k.f
	var addrs []netip.Prefix
	for _, a := range f.get("Network", "Address") {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			k.fail("Address %q: %v", a, err)
		}
		addrs = append(addrs, p)
	}
	if !slices.Equal(addrs, ifc.Addresses) {
		k.fail("addresses %v, want %v", addrs, ifc.Addresses)
	}
	allNS := slices.Concat(ifc.DNS.Nameservers, c.DNS.Nameservers)
	for _, d := range f.get("Network", "DNS") {
		a, err := netip.ParseAddr(d)
		if err != nil || !slices.Contains(allNS, a) {
			k.fail("DNS %q is not one of the configuration's", d)
		}
	}
	for _, ns := range ifc.DNS.Nameservers {
		if !slices.Contains(f.get("Network", "DNS"), ns.String()) {
			k.fail("DNS %s missing", ns)
		}
	}
	words := strings.Fields(k.one("Network", "Domains"))
	for _, w := range words {
		if !slices.Contains(ifc.DNS.Search, w) && !slices.Contains(c.DNS.Search, w) {
			k.fail("search domain %q is not one of the configuration's", w)
		}
	}
	for _, d := range ifc.DNS.Search {
		if !slices.Contains(words, d) {
			k.fail("search domain %q missing", d)
		}
	}
	if n := len(f.get("Route", "Gateway")) + len(f.get("Route", "Scope")); n < len(ifc.Routes) {
		k.fail("%d routes written, want at least %d", n, len(ifc.Routes))
	}
}

func checkNetdevFile(t *testing.T, ifc *Interface, f iniFile, comments []string, base string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s.netdev: %s\n%+v\n%q", base, fmt.Sprintf(format, args...), f, comments)
	}
	if got := f.get("NetDev", "Name"); len(got) != 1 || got[0] != ifc.LinkName() {
		fail("NetDev.Name %q, want %q", got, ifc.LinkName())
	}
	if got := f.get("NetDev", "Kind"); len(got) != 1 || got[0] != string(ifc.Kind) {
		fail("NetDev.Kind %q, want %q", got, ifc.Kind)
	}
	sec, keys := "", map[string]struct{ key, unit string }(nil)
	allowed := []string{"NetDev"}
	switch ifc.Kind {
	case VLAN:
		allowed = append(allowed, "VLAN")
		if got := f.get("VLAN", "Id"); len(got) != 1 || got[0] != strconv.Itoa(ifc.VLANID) {
			fail("VLAN.Id %q, want %d", got, ifc.VLANID)
		}
	case Bond:
		sec, keys = "Bond", bondKeys
	case Bridge:
		sec, keys = "Bridge", bridgeKeys
	}
	if sec != "" {
		allowed = append(allowed, sec)
	}
	for _, s := range f.sections() {
		if !slices.Contains(allowed, s) {
			fail("unexpected section [%s]", s)
		}
	}
	// Every parameter comes back: a known one as its networkd key (its
	// value as the model has it, or with its unit, or spelled as
	// networkd wants a boolean or bond mode), any other one as a comment
	// holding name=value unchanged.
	var wantComments []string
	nkeys := 0
	for name, v := range ifc.Params {
		nk, ok := keys[name]
		if !ok {
			if name != "primary" && name != "path-cost" && name != "port-priority" {
				wantComments = append(wantComments, "# not rendered: "+name+"="+v)
			}
			continue
		}
		nkeys++
		got := f.get(sec, nk.key)
		if len(got) != 1 {
			fail("%s.%s given %d times, want once", sec, nk.key, len(got))
		}
		g := got[0]
		b, isBool := parseBoolText(v)
		switch {
		case g == v, g == v+nk.unit:
		case nk.unit == "bool" && isBool && g == map[bool]string{true: "yes", false: "no"}[b]:
		case nk.key == "Mode" && slices.Contains(bondModes, g) && v == strconv.Itoa(slices.Index(bondModes, g)):
		default:
			fail("%s.%s=%q, want %q", sec, nk.key, g, v)
		}
	}
	if sec != "" {
		for _, s := range f {
			if s.name == sec && len(s.kv) != nkeys {
				fail("[%s] has %d keys, want %d", sec, len(s.kv), nkeys)
			}
		}
	}
	wantComments = append(wantComments, Header)
	slices.Sort(wantComments)
	got := slices.Sorted(slices.Values(comments))
	if !slices.Equal(got, wantComments) {
		fail("comments %q, want %q", got, wantComments)
	}
}

// TestNetworkdRoundTrip: every fixture renders to files that read back,
// as systemd splits them, to the same model.
func TestNetworkdRoundTrip(t *testing.T) {
	for _, fx := range validFixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			checkNetworkdRoundTrip(t, fx.parse(t))
		})
	}
}

// lineBreaks are every character some reader takes as the end of a line,
// or that a line-oriented file must not hold.
var lineBreaks = []string{"\n", "\r", "\x00", "\v", "\f", "\u0085", "\u2028", "\u2029", "\t", "\x1b", "\x7f"}

// TestParseRefusesLineBreaks: a "\n" in a bond
// parameter value added [Network] and Kind= to the .netdev file. The
// field that holds one is left out (noted, never quoted); nothing written
// holds it.
func TestParseRefusesLineBreaks(t *testing.T) {
	for _, lb := range lineBreaks {
		for _, doc := range []string{
			"version: 2\nethernets: {e0: {}}\nbonds: {bond0: {interfaces: [e0], parameters: {mode: \"active-backup%s[Network]\"}}}",
			"version: 2\nethernets: {e0: {}}\nbonds: {bond0: {interfaces: [e0], parameters: {\"x%s[Network]\": 1}}}",
			"version: 2\nethernets: {e0: {}}\nbridges: {br0: {interfaces: [e0], parameters: {path-cost: {\"e0%sKind=x\": 5}}}}",
			"version: 1\nconfig: [{type: bond, name: bond0, params: {bond-mode: \"1%sKind=dummy\"}}]",
			"version: 2\nethernets: {e0: {match: {driver: \"virtio%sx\"}}}",
			"version: 2\nethernets: {e0: {match: {name: \"e*%sx\"}}}",
			"version: 2\nethernets: {e0: {nameservers: {search: [\"a%sb\"]}}}",
			"version: 2\nethernets: {\"e%s0\": {match: {macaddress: '02:00:00:00:00:01'}, set-name: e0}}",
		} {
			src := fmt.Sprintf(doc, strconv.Quote(lb)[1:len(strconv.Quote(lb))-1])
			c, err := Parse([]byte(src))
			if err != nil {
				t.Errorf("%q: the whole document refused: %v", src, err)
				continue
			}
			if len(c.Notes) != 1 || strings.Contains(c.Notes[0], lb) {
				t.Errorf("%q: notes %q, want one that does not quote the character", src, c.Notes)
			}
			files, err := renderNetworkd(c, nil)
			if err != nil {
				t.Errorf("%q: render: %v", src, err)
			}
			for name, b := range files {
				if lb != "\n" && strings.Contains(string(b), lb) || strings.Contains(string(b), "Kind=x") || strings.Contains(string(b), "Kind=dummy") || strings.Count(string(b), "[Network]") > 1 {
					t.Errorf("%q: %s holds what the bad field said:\n%s", src, name, b)
				}
			}
		}
	}
}

// TestRenderRefusesLineBreaks: the writer holds the rule on its own, for
// a model built by hand (or by a parser that forgot it).
func TestRenderRefusesLineBreaks(t *testing.T) {
	for _, lb := range append(slices.Clone(lineBreaks), "\\") {
		for name, c := range map[string]*Config{
			"param value": {Interfaces: []Interface{{ID: "bond0", Kind: Bond, Params: map[string]string{"mode": "1" + lb + "Kind=x"}}}},
			"param name":  {Interfaces: []Interface{{ID: "bond0", Kind: Bond, Params: map[string]string{"x" + lb + "[Network]": "1"}}}},
			"driver":      {Interfaces: []Interface{{ID: "e0", Kind: Physical, MatchDriver: "v" + lb + "DHCP=yes"}}},
			"match name":  {Interfaces: []Interface{{ID: "e0", Kind: Physical, MatchName: "e0" + lb + "DHCP=yes"}}},
			"search":      {Interfaces: []Interface{{ID: "e0", Kind: Physical, DHCP4: true, DNS: DNS{Search: []string{"a" + lb + "b"}}}}},
		} {
			if lb == "\\" && name != "param value" && name != "param name" {
				continue // a backslash inside a value is harmless; only one at the end is not
			}
			if lb == "\\" {
				c.Interfaces[0].Params = map[string]string{"mode": "1\\"}
			}
			files, err := renderNetworkd(c, nil)
			if err == nil {
				t.Errorf("%s with %q rendered:\n%s", name, lb, files)
			}
		}
	}
}

func TestRenderResolvConfDropsBadSearch(t *testing.T) {
	for _, lb := range append(slices.Clone(lineBreaks), " ") {
		out := RenderResolvConf(DNS{
			Nameservers: []netip.Addr{netip.MustParseAddr("10.0.0.2")},
			Search:      []string{"good.example", "bad" + lb + "nameserver 6.6.6.6"},
		})
		want := Header + "\nnameserver 10.0.0.2\nsearch good.example\n"
		if string(out) != want {
			t.Errorf("with %q:\n%s\nwant\n%s", lb, out, want)
		}
	}
}

// TestNetworkdFileNames: an ID over ~230 bytes made the file name too long
// only when it was written, after the live apply, and two IDs that sanitise
// alike shared one file.
func TestNetworkdFileNames(t *testing.T) {
	long := strings.Repeat("a", 300)
	doc := fmt.Sprintf("version: 2\nethernets:\n  %s: {match: {macaddress: '02:00:00:00:00:01'}, set-name: e0, dhcp4: true}\n"+
		"  \"a b\": {match: {macaddress: '02:00:00:00:00:02'}, set-name: e1, dhcp4: true}\n"+
		"  a_b: {match: {macaddress: '02:00:00:00:00:03'}, set-name: e2, dhcp4: true}\n"+
		"  \"..\": {match: {macaddress: '02:00:00:00:00:04'}, set-name: e3, dhcp4: true}\n", long)
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	files, err := renderNetworkd(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("%d files, want 4: %v", len(files), slices.Collect(func(yield func(string) bool) {
			for k := range files {
				yield(k)
			}
		}))
	}
	for name := range files {
		if len(name) > 100 || strings.ContainsAny(name, "/ ") || strings.HasPrefix(name, ".") {
			t.Errorf("file name %q", name)
		}
	}
	if files["05-seedkeeper-a_b.network"] == nil {
		t.Errorf("a safe ID lost its plain file name")
	}
	checkNetworkdRoundTrip(t, c)
}

func TestCheckFileNamesRefusesCollision(t *testing.T) {
	c := &Config{Interfaces: []Interface{{ID: "e0"}, {ID: "e1"}}}
	c.Interfaces[1].ID = "e0" // the parsers refuse a repeated ID; the check holds anyway
	if err := c.checkFileNames(); err == nil {
		t.Fatal("two entries with one file name accepted")
	}
}

func TestParseRefusesAliasExpansion(t *testing.T) {
	// Aliases make a small document stand for a huge one.
	var b strings.Builder
	b.WriteString("version: 2\nx: &big " + strings.Repeat("y", 64<<10) + "\nethernets:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  e%d: {set-name: n%d, match: {macaddress: '02:00:00:00:%02x:%02x'}, nameservers: {search: [*big]}}\n", i, i, i/256, i%256)
	}
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases are expanded") {
		t.Fatalf("Parse = %v; want the expansion refused", err)
	}
}

// FuzzRenderBond feeds arbitrary parameter names and values, and a
// driver and search domain, straight to the writers: what they write
// must read back to the same model, or they must refuse.
func FuzzRenderBond(f *testing.F) {
	f.Add("mode", "active-backup", "virtio_net", "example.com")
	f.Add("x\n[Network]", "1\\", "v\rDHCP=yes", "a\u2028b")
	f.Add("mii-monitor-interval", "100", "e1000*", "~.")
	f.Fuzz(func(t *testing.T, name, value, driver, search string) {
		c := &Config{Interfaces: []Interface{
			{ID: "e0", Kind: Physical, MAC: "02:00:00:00:00:01", MatchDriver: driver},
			{ID: "bond0", Kind: Bond, Name: "bond0", Links: []string{"e0"}, DHCP4: true,
				Params: map[string]string{name: value}, DNS: DNS{Search: []string{search}}},
		}}
		if _, err := renderNetworkd(c, nil); err != nil {
			return
		}
		checkNetworkdRoundTrip(t, c)
		rc := RenderResolvConf(c.Interfaces[1].DNS)
		for _, line := range strings.FieldsFunc(string(rc), func(r rune) bool { return r == '\n' || r == '\r' || r == 0 }) {
			if line != Header && line != "search "+search {
				t.Fatalf("resolv.conf line %q", line)
			}
		}
	})
}
