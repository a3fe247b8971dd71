package apply

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// The live apply and the three stacks' files are four views of one
// decision per link (netcfg.Config.Plan): what each link carries. These
// tests render the conformance corpora and the parser's fixtures through
// all four and compare, link by link, the addresses, routes and rules
// each configures. A stack that does not render a link (NetworkManager
// and ifupdown leave bonds, bridges, VLANs and their links to the others)
// says so in its skipped list and configures nothing on it.

// viewCorpus are the documents the four views are compared on.
var viewCorpus = []string{
	"../../testdata/netcfg/valid/*.yaml",
	"../testdata/conformance/*.yaml",
	"../testdata/conformance/v1/*.yaml",
}

// linkFacts is what one view configures on one link, each fact as a
// string in one form for all views.
type linkFacts struct {
	addrs, routes, rules []string
	mtu                  string
}

// sort puts the facts in order, each once: a fact given twice (two
// forms of one route) is one fact.
func (f *linkFacts) sort() {
	f.addrs = slices.Compact(slices.Sorted(slices.Values(f.addrs)))
	f.routes = slices.Compact(slices.Sorted(slices.Values(f.routes)))
	f.rules = slices.Compact(slices.Sorted(slices.Values(f.rules)))
}

func (f linkFacts) String() string {
	return fmt.Sprintf("addresses %q routes %q rules %q mtu %q", f.addrs, f.routes, f.rules, f.mtu)
}

func (f linkFacts) equal(g linkFacts) bool {
	return slices.Equal(f.addrs, g.addrs) && slices.Equal(f.routes, g.routes) && slices.Equal(f.rules, g.rules) && f.mtu == g.mtu
}

// factRoute is a route in the form every view is compared in: the
// kernel's (normRoute).
func factRoute(r netcfg.Route) string {
	r = normRoute(r)
	if r.Via.IsUnspecified() {
		// A gateway of 0.0.0.0 or :: is none: NetworkManager's
		// keyfile says so with it.
		r.Via = netip.Addr{}
	}
	return fmt.Sprintf("%s via %s metric %d table %d onlink %t", r.To, r.Via, r.Metric, r.Table, r.OnLink)
}

func factRule(r netcfg.Rule) string { return normRule(r).String() }

// fakeLinks are live NICs for the physical entries of cfg the live plan
// can select: each with the entry's MAC (or a made-up one) and the name
// that selects it, of an allowed driver.
func fakeLinks(cfg *netcfg.Config) []Link {
	var live []Link
	for i, ifc := range cfg.Interfaces {
		if ifc.Kind != netcfg.Physical {
			continue
		}
		mac := ifc.MAC
		if mac == "" {
			mac = fmt.Sprintf("02:00:00:00:01:%02x", i)
		}
		name := ifc.ID
		switch {
		case ifc.MAC != "":
			name = fmt.Sprintf("ens%d", i+3)
		case ifc.Name != "":
			name = ifc.Name
		case strings.ContainsAny(ifc.MatchName, "*?["):
			continue
		case ifc.MatchName != "":
			name = ifc.MatchName
		}
		if !netcfg.ValidLinkName(name) || slices.ContainsFunc(live, func(l Link) bool { return l.Name == name || l.MAC == normMAC(mac) }) {
			continue
		}
		drv := "virtio_net"
		if ifc.MatchDriver != "" {
			drv = ifc.MatchDriver
		}
		live = append(live, Link{Index: 10 + i, Name: name, MAC: normMAC(mac), Kind: "device", Driver: drv, Up: true})
	}
	return live
}

// liveFacts are what the live plan adds, by configuration ID.
func liveFacts(p *Plan) map[string]*linkFacts {
	byName := map[string]string{}
	for id, n := range p.OwnedName {
		byName[n] = id
	}
	out := map[string]*linkFacts{}
	for _, id := range p.Owned {
		out[id] = &linkFacts{}
	}
	for _, op := range p.Ops {
		f := out[byName[op.Name]]
		if f == nil {
			continue
		}
		switch {
		case op.Kind == AddAddress:
			f.addrs = append(f.addrs, normPrefix(op.Address).String())
		case op.Kind == AddRoute && !op.ifMissing:
			f.routes = append(f.routes, factRoute(op.Route))
		case op.Kind == AddRule:
			f.rules = append(f.rules, factRule(op.Rule))
		case op.Kind == SetMTU:
			f.mtu = strconv.Itoa(op.MTU)
		}
	}
	return out
}

// networkdFacts reads back the .network files RenderNetworkd wrote.
func networkdFacts(t *testing.T, files map[string][]byte, ids []string) map[string]*linkFacts {
	out := map[string]*linkFacts{}
	for _, id := range ids {
		b, ok := files["05-seedkeeper-"+id+".network"]
		if !ok {
			continue
		}
		f := &linkFacts{}
		out[id] = f
		var sec string
		var kv map[string]string
		flush := func() {
			switch sec {
			case "Route":
				var r netcfg.Route
				if g := kv["Gateway"]; g != "" {
					r.Via = netip.MustParseAddr(g)
					r.To = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
					if r.Via.Is6() {
						r.To = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
					}
				}
				if d := kv["Destination"]; d != "" {
					r.To = netip.MustParsePrefix(d)
				}
				r.Metric, _ = strconv.Atoi(kv["Metric"])
				r.Table, _ = strconv.Atoi(kv["Table"])
				r.OnLink = kv["GatewayOnLink"] == "yes"
				f.routes = append(f.routes, factRoute(r))
			case "RoutingPolicyRule":
				var r netcfg.Rule
				if s := kv["From"]; s != "" {
					r.From = netip.MustParsePrefix(s)
				}
				if s := kv["To"]; s != "" {
					r.To = netip.MustParsePrefix(s)
				}
				r.Table, _ = strconv.Atoi(kv["Table"])
				r.Priority, _ = strconv.Atoi(kv["Priority"])
				r.Mark, _ = strconv.Atoi(kv["FirewallMark"])
				r.TOS, _ = strconv.Atoi(kv["TypeOfService"])
				f.rules = append(f.rules, factRule(r))
			}
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "[") {
				flush()
				sec, kv = strings.Trim(line, "[]"), map[string]string{}
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.HasPrefix(line, "#") {
				continue
			}
			if sec == "Link" && k == "MTUBytes" {
				f.mtu = v
			}
			if sec == "Network" && k == "Address" {
				f.addrs = append(f.addrs, normPrefix(netip.MustParsePrefix(v)).String())
			}
			kv[k] = v
		}
		flush()
	}
	return out
}

// keyfileFacts reads back the profiles RenderNetworkManager wrote.
func keyfileFacts(t *testing.T, files map[string][]byte, ids []string) map[string]*linkFacts {
	out := map[string]*linkFacts{}
	for _, id := range ids {
		b, ok := files["seedkeeper-"+id+".nmconnection"]
		if !ok {
			continue
		}
		f := &linkFacts{}
		out[id] = f
		kv := map[string]string{}
		var sec string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "[") {
				sec = strings.Trim(line, "[]")
				continue
			}
			if k, v, ok := strings.Cut(line, "="); ok {
				kv[sec+"."+k] = v
			}
		}
		for k, v := range kv {
			sec, key, _ := strings.Cut(k, ".")
			if m := kv[sec+".method"]; m == "ignore" || m == "disabled" {
				// NetworkManager configures nothing of the family.
				continue
			}
			switch {
			case k == "ethernet.mtu":
				f.mtu = v
			case strings.HasPrefix(key, "address"):
				f.addrs = append(f.addrs, normPrefix(netip.MustParsePrefix(v)).String())
			case strings.HasPrefix(key, "routing-rule"):
				f.rules = append(f.rules, factRule(parseIPRule(t, strings.Fields(v))))
			case strings.HasPrefix(key, "route") && !strings.HasSuffix(key, "_options") && !strings.HasPrefix(key, "route-"):
				parts := strings.Split(v, ",")
				r := netcfg.Route{To: netip.MustParsePrefix(parts[0])}
				if len(parts) > 1 {
					if gw := netip.MustParseAddr(parts[1]); !gw.IsUnspecified() {
						r.Via = gw
					}
				}
				if len(parts) > 2 {
					r.Metric, _ = strconv.Atoi(parts[2])
				}
				for _, o := range strings.Split(kv[k+"_options"], ",") {
					if n, ok := strings.CutPrefix(o, "table="); ok {
						r.Table, _ = strconv.Atoi(n)
					}
					r.OnLink = r.OnLink || o == "onlink=true"
				}
				f.routes = append(f.routes, factRoute(r))
			}
		}
	}
	return out
}

// parseIPRule reads a rule in ip-rule(8)'s words, as nmRule writes it.
func parseIPRule(t *testing.T, w []string) netcfg.Rule {
	t.Helper()
	var r netcfg.Rule
	for i := 0; i+1 < len(w); i += 2 {
		n, _ := strconv.Atoi(w[i+1])
		switch w[i] {
		case "priority":
			r.Priority = n
		case "from":
			r.From = netip.MustParsePrefix(w[i+1])
		case "to":
			r.To = netip.MustParsePrefix(w[i+1])
		case "fwmark":
			r.Mark = n
		case "tos":
			r.TOS = n
		case "table":
			r.Table = n
		default:
			t.Fatalf("rule word %q", w[i])
		}
	}
	return r
}

// ifupdownFacts reads back the stanzas RenderIfupdown wrote: the "ip"
// commands of their up and post-up lines.
func ifupdownFacts(t *testing.T, file []byte, byName map[string]string) map[string]*linkFacts {
	out := map[string]*linkFacts{}
	var f *linkFacts
	for _, line := range strings.Split(string(file), "\n") {
		w := strings.Fields(line)
		switch {
		case len(w) >= 2 && w[0] == "iface":
			id := byName[w[1]]
			if out[id] == nil {
				out[id] = &linkFacts{}
			}
			f = out[id]
		case len(w) == 2 && w[0] == "mtu":
			f.mtu = w[1]
		case len(w) >= 4 && (w[0] == "up" || w[0] == "post-up") && w[1] == "ip":
			w = slices.DeleteFunc(w[3:], func(s string) bool { return s == "||" || s == "true" })
			switch {
			case w[0] == "addr" && w[1] == "replace":
				f.addrs = append(f.addrs, normPrefix(netip.MustParsePrefix(w[2])).String())
			case w[0] == "rule" && w[1] == "add":
				f.rules = append(f.rules, factRule(parseIPRule(t, w[2:])))
			case w[0] == "route" && w[1] == "replace":
				r := netcfg.Route{To: netip.MustParsePrefix(w[2])}
				for i := 3; i < len(w); i++ {
					switch w[i] {
					case "via":
						r.Via = netip.MustParseAddr(w[i+1])
					case "metric":
						r.Metric, _ = strconv.Atoi(w[i+1])
					case "table":
						r.Table, _ = strconv.Atoi(w[i+1])
					case "onlink":
						r.OnLink = true
					}
				}
				f.routes = append(f.routes, factRoute(r))
			}
		}
	}
	return out
}

// viewsDiffer renders cfg through the four views over fake live NICs and
// returns every link on which two of them disagree.
func viewsDiffer(t *testing.T, cfg *netcfg.Config, seen *linkFacts) []string {
	t.Helper()
	p := Diff(cfg, fakeLinks(cfg), func(string) bool { return true }, nil)
	pinned := p.Pinned(cfg)
	byName := map[string]string{}
	for id, n := range p.OwnedName {
		byName[n] = id
	}
	live := liveFacts(p)
	nd, err := netcfg.Networkd.Render(netcfg.Detection{Stack: netcfg.Networkd}, pinned, p.Owns)
	if err != nil {
		return []string{"networkd: " + err.Error()}
	}
	views := map[string]map[string]*linkFacts{"networkd": networkdFacts(t, nd.Files, p.Owned)}
	var skipped = map[string][]string{}
	var nmNotes []string
	if sf, err := netcfg.NetworkManager.Render(netcfg.Detection{Stack: netcfg.NetworkManager}, pinned, p.Owns); err == nil {
		views["NetworkManager"], skipped["NetworkManager"] = keyfileFacts(t, sf.Files, p.Owned), sf.Skipped
		nmNotes = sf.Notes
	}
	if sf, err := netcfg.Ifupdown.Render(netcfg.Detection{Stack: netcfg.Ifupdown, Dir: "/etc/network/interfaces.d"}, pinned, p.Owns); err == nil {
		views["ifupdown"], skipped["ifupdown"] = ifupdownFacts(t, sf.Files["50-seedkeeper"], byName), sf.Skipped
	}
	var out []string
	for _, id := range p.Owned {
		want := live[id]
		want.sort()
		seen.addrs = append(seen.addrs, want.addrs...)
		seen.routes = append(seen.routes, want.routes...)
		seen.rules = append(seen.rules, want.rules...)
		seen.mtu += want.mtu
		for _, v := range slices.Sorted(func(yield func(string) bool) {
			for k := range views {
				if !yield(k) {
					return
				}
			}
		}) {
			got := views[v][id]
			if got == nil && !plainID(id) && v != "ifupdown" {
				continue // its file's name is hashed: not read here
			}
			if got == nil {
				if v == "networkd" || !slices.Contains(skipped[v], id) {
					out = append(out, fmt.Sprintf("%s: %s: no file, and not reported skipped", id, v))
				}
				continue
			}
			got.sort()
			want := want
			if v == "NetworkManager" && slices.Contains(nmNotes, id+": not applied by networkmanager: IPv4 routes and rules on a link without IPv4 addresses or DHCP") {
				// What a profile cannot say is said in a note: the
				// rest must agree.
				w := *want
				w.routes = slices.DeleteFunc(slices.Clone(w.routes), func(r string) bool { return !strings.Contains(strings.Fields(r)[0], ":") })
				w.rules = slices.DeleteFunc(slices.Clone(w.rules), func(r string) bool { return !strings.Contains(r, ":") })
				want = &w
			}
			if !got.equal(*want) {
				out = append(out, fmt.Sprintf("%s: %s configures %v; live: %v", id, v, got, want))
			}
		}
	}
	return out
}

// plainID reports whether the ID is used as it is in a file name.
func plainID(id string) bool {
	return len(id) <= 64 && id != "." && id != ".." && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == ""
}

func TestViewsAgreeOnCorpus(t *testing.T) {
	n := 0
	var seen linkFacts
	for _, g := range viewCorpus {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			t.Fatalf("no documents in %s", g)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := netcfg.Parse(b)
			if err != nil {
				continue // a document the parser refuses renders nothing
			}
			n++
			for _, d := range viewsDiffer(t, cfg, &seen) {
				t.Errorf("%s: %s", f, d)
			}
		}
	}
	// Not a vacuous comparison: the corpus sets each kind of fact.
	if len(seen.addrs) == 0 || len(seen.routes) == 0 || len(seen.rules) == 0 || seen.mtu == "" {
		t.Errorf("the corpus compared no address, route, rule or MTU: %v", seen)
	}
	t.Logf("%d documents through four views: %d addresses, %d routes, %d rules", n, len(seen.addrs), len(seen.routes), len(seen.rules))
}

// viewCases are what the corpora do not hold: a bond or bridge member
// with addresses, routes and rules of its own, global routes no link
// reaches, and global routes on a bond.
var viewCases = map[string]string{
	"member-addresses": `
network:
  version: 2
  ethernets:
    eth0:
      match: {macaddress: "bc:24:11:aa:bb:01"}
      addresses: [192.0.2.10/24]
      routes: [{to: 198.51.100.0/24, via: 192.0.2.1}]
      routing-policy: [{from: 192.0.2.0/24, table: 101}]
    eth1:
      match: {macaddress: "bc:24:11:aa:bb:02"}
      addresses: [192.0.2.11/24]
    eth2:
      match: {macaddress: "bc:24:11:aa:bb:03"}
      addresses: [203.0.113.5/24]
  bonds:
    bond0:
      interfaces: [eth0, eth1]
      addresses: [192.0.2.20/24]
  bridges:
    br0:
      interfaces: [eth2]
      dhcp4: true
`,
	"v1-global-route-unreachable": `
version: 1
config:
- type: physical
  name: eth0
  mac_address: "bc:24:11:aa:bb:01"
  subnets: [{type: static, address: 192.0.2.10/24}]
- type: physical
  name: eth1
  mac_address: "bc:24:11:aa:bb:02"
  subnets: [{type: dhcp}]
- type: route
  destination: 198.51.100.0/24
  gateway: 203.0.113.1
- type: route
  destination: 203.0.113.0/24
  gateway: 192.0.2.1
`,
	"v1-global-route-on-bond": `
version: 1
config:
- type: physical
  name: eth0
  mac_address: "bc:24:11:aa:bb:01"
- type: physical
  name: eth1
  mac_address: "bc:24:11:aa:bb:02"
- type: physical
  name: eth2
  mac_address: "bc:24:11:aa:bb:03"
  subnets: [{type: static, address: 203.0.113.5/24}]
- type: bond
  name: bond0
  bond_interfaces: [eth0, eth1]
  subnets: [{type: static, address: 192.0.2.10/24}]
- type: route
  destination: 198.51.100.0/24
  gateway: 192.0.2.1
`,
	"dhcp-route-outside": `
network:
  version: 2
  ethernets:
    eth0:
      match: {macaddress: "bc:24:11:aa:bb:01"}
      dhcp4: true
      routes: [{to: 198.51.100.0/24, via: 10.9.9.1}]
    eth1:
      match: {macaddress: "bc:24:11:aa:bb:02"}
      dhcp4: true
      addresses: [192.0.2.10/24]
      routes: [{to: 203.0.113.0/24, via: 10.9.9.1}, {to: 198.51.100.0/24, via: 192.0.2.1}]
`,
	"dhcp-only-global-route": `
version: 1
config:
- type: physical
  name: eth0
  mac_address: "bc:24:11:aa:bb:01"
  subnets: [{type: dhcp}]
- type: route
  destination: 198.51.100.0/24
  gateway: 10.0.0.1
`,
}

func TestViewsAgreeOnCases(t *testing.T) {
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range viewCases {
			if !yield(k) {
				return
			}
		}
	}) {
		cfg, err := netcfg.Parse([]byte(viewCases[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, d := range viewsDiffer(t, cfg, &linkFacts{}) {
			t.Errorf("%s: %s", name, d)
		}
	}
}

// FuzzViewsAgree holds the four views to one decision on any document
// the parser takes.
func FuzzViewsAgree(f *testing.F) {
	for _, doc := range viewCases {
		f.Add([]byte(doc))
	}
	for _, g := range viewCorpus {
		files, _ := filepath.Glob(g)
		for _, fn := range files {
			if b, err := os.ReadFile(fn); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := netcfg.Parse(b)
		if err != nil {
			return
		}
		for _, d := range viewsDiffer(t, cfg, &linkFacts{}) {
			t.Error(d)
		}
	})
}
