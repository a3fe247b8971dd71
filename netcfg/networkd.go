package netcfg

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// networkdFiles renders every owned link of the plan (Config.Plan, the
// global DNS placed among them) as systemd-networkd files for
// /run/systemd/network/: file name → content. Each link gets
// 05-seedkeeper-<id>.network; bonds, bridges and VLANs also get a .netdev.
//
//   - Physical links are matched by MAC address (with Type=ether, so that a
//     bond or VLAN that inherits the MAC does not match too; by the
//     permanent one when the configuration gives the link a new MAC), by
//     name or glob where the configuration has no MAC, and by driver if
//     it asks.
//   - [Network] has KeepConfiguration=static: networkd keeps the
//     addresses and routes seedkeeper applied live when it takes the link.
//   - [Link] carries the MTU, the MAC a link is given and, for an
//     optional link, RequiredForOnline=no; [DHCPv4] and [DHCPv6] the
//     DHCP overrides networkd has; [RoutingPolicyRule] the link's rules;
//     a bridge member's [Bridge] its path cost and port priority.
//   - Bond and bridge members get Bond=/Bridge= and no addresses of their
//     own; a VLAN's parent gets VLAN=. Only a master or VLAN that is
//     itself rendered is named: a member of a bond that is not owned gets
//     its own plain configuration, so no file names a link no file
//     defines.
//   - Global DNS goes on every owned link that can reach a default router
//     (a static gateway, DHCP or SLAAC), or on every link with addresses
//     if none can. What each link carries (a member's addresses, the
//     link of a global route) is Config.Plan's decision, the live
//     apply's too.
//
// The output is deterministic: same configuration, same bytes.
func networkdFiles(all []*LinkPlan) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, lp := range all {
		base := networkdBase(lp.ID)
		if _, dup := files[base+".network"]; dup {
			return nil, fmt.Errorf("render networkd: two links map to file %s.network", base)
		}
		b, err := renderNetwork(lp)
		if err != nil {
			return nil, fmt.Errorf("render networkd: %s.network: %w", base, err)
		}
		files[base+".network"] = b
		if lp.Kind != Physical {
			if b, err = renderNetdev(lp.Interface); err != nil {
				return nil, fmt.Errorf("render networkd: %s.netdev: %w", base, err)
			}
			files[base+".netdev"] = b
		}
	}
	return files, nil
}

// maxIDInName is the longest ID used as it is in a file name; longer
// ones are cut and get a hash, keeping every name far below NAME_MAX.
const maxIDInName = 64

// networkdBase is the file name, without extension, of the networkd files
// of the entry with this ID: 05-seedkeeper-<id> (see fileBase).
//
// networkd reads the files of /etc, /run and /usr/lib together, sorted by
// name, and a link gets the first whose [Match] matches it (its name
// globs match alternative names too). "05-" sorts before every file
// netplan generates ("10-netplan-*", among them an image's catch-all
// DHCP on en* or eth*) and before the "10-" seedkeeper itself used
// before, so an owned NIC gets seedkeeper's file. A person's own file of
// the same name in /etc still replaces it.
func networkdBase(id string) string { return networkdPrefix + fileBase(id) }

// networkdPrefix begins the name of every networkd file seedkeeper
// writes; legacyNetworkdPrefix began them before, and such a file is
// still seedkeeper's to replace and remove.
const (
	networkdPrefix       = "05-"
	legacyNetworkdPrefix = "10-"
)

// fileBase names the files and profiles of the entry with this ID:
// seedkeeper-<id> when the ID is a short run of letters, digits, '.', '-'
// and '_'; otherwise (an ID with other characters, or a long one) its
// safe prefix and a hash of the whole ID, so that the name is never too
// long and two IDs that differ only in unsafe characters do not share
// it. The '~' before the hash never occurs in a plain name, so a hashed
// name cannot equal one.
func fileBase(id string) string {
	safe := fileSafe(id)
	if safe == id && len(id) <= maxIDInName && id != "." && id != ".." {
		return "seedkeeper-" + id
	}
	h := sha256.Sum256([]byte(id))
	if len(safe) > maxIDInName-16 {
		safe = safe[:maxIDInName-16]
	}
	return "seedkeeper-" + safe + "~" + hex.EncodeToString(h[:6])
}

// checkFileNames refuses a configuration in which two entries would
// share networkd files: that must be found before anything is applied,
// not when the files are written after the live apply.
func (c *Config) checkFileNames() error {
	seen := make(map[string]int, len(c.Interfaces))
	for i := range c.Interfaces {
		base := networkdBase(c.Interfaces[i].ID)
		if prev, dup := seen[base]; dup {
			return &FieldError{Msg: fmt.Sprintf("interfaces %d and %d would share the networkd file name %s", prev, i, base)}
		}
		seen[base] = i
	}
	return nil
}

func hasDefaultRoute(ifc *Interface) bool {
	for _, r := range ifc.Routes {
		if r.To.Bits() == 0 && r.Via.IsValid() {
			return true
		}
	}
	return false
}

func containsAddr(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Masked().Contains(a) {
			return true
		}
	}
	return false
}

// fileSafe keeps a file name to letters, digits, '.', '-' and '_'.
func fileSafe(id string) string {
	b := []byte(id)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// ini writes INI sections in the order they are opened. Every value is
// checked as it is written (see checkINIValue); the first refusal is kept
// in err and nothing the file holds is used.
type ini struct {
	bytes.Buffer
	err error
}

func (w *ini) section(name string) {
	w.WriteString("\n[" + name + "]\n")
}

func (w *ini) kv(k, v string) {
	if err := checkINIValue(v); err != nil {
		w.fail(fmt.Errorf("%s: %w", k, err))
		return
	}
	w.WriteString(k + "=" + v + "\n")
}

// comment writes a comment line whose text comes from the configuration.
func (w *ini) comment(text string) {
	if err := checkINIValue(text); err != nil {
		w.fail(fmt.Errorf("comment: %w", err))
		return
	}
	w.WriteString("# " + text + "\n")
}

func (w *ini) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *ini) result() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return w.Bytes(), nil
}

// checkINIValue refuses what would change the structure of a systemd INI
// file rather than be one value: a line break or any other control or
// separator character (CheckLine), a backslash at the end (systemd joins
// the next line to it), white space at either end (dropped on reading)
// and the empty value (it resets a list setting).
func checkINIValue(v string) error {
	if err := CheckLine(v); err != nil {
		return err
	}
	switch {
	case v == "":
		return errors.New("empty value")
	case strings.HasSuffix(v, "\\"):
		return errors.New("ends in a backslash")
	case strings.TrimSpace(v) != v:
		return errors.New("white space at either end")
	}
	return nil
}

// renderNetwork writes the .network file of one link as the plan has
// it: its [Match], [Link], [Network], a member's [Bridge], and a link's
// DHCP clients, routes and rules.
func renderNetwork(lp *LinkPlan) ([]byte, error) {
	w := &ini{}
	w.WriteString(Header + "\n")
	writeMatch(w, lp.Interface)
	writeLink(w, lp.Interface)
	w.section("Network")
	// seedkeeper applies these addresses and routes live before networkd
	// takes the link (at boot, and when a NIC is hot-added while networkd
	// runs). Without this, networkd (252, Debian 12) takes them for
	// foreign ones, removes them and adds them again as its own: a moment
	// in which the NIC has no address, seen on a hot-added NIC. Static
	// configuration another program or a person added stays too;
	// seedkeeper removes what it added itself (the receipt).
	w.kv("KeepConfiguration", "static")
	if lp.Kind != Physical {
		// As netplan: a bond, bridge or VLAN is configured before it
		// has carrier (a bridge without ports never has one).
		w.kv("ConfigureWithoutCarrier", "yes")
	}
	if lp.Master != nil {
		writeMember(w, lp)
		return w.result()
	}
	writeNetwork(w, lp)
	for _, vl := range lp.VLANs {
		w.kv("VLAN", vl.LinkName())
	}
	writeDHCPClients(w, lp.Interface)
	writeRoutes(w, lp)
	writeRules(w, lp.Rules)
	return w.result()
}

// writeMatch writes the [Match] section: a stacked link by its name, a
// NIC by its MAC (the one it was made with, when it is to get another),
// else by its name or glob, and by its driver when it asks.
func writeMatch(w *ini, ifc *Interface) {
	w.section("Match")
	switch {
	case ifc.Kind != Physical:
		w.kv("Name", ifc.LinkName())
	case ifc.MAC != "" && ifc.SetMAC != "":
		// The link's MAC is about to change: match the one it was
		// made with.
		w.kv("PermanentMACAddress", ifc.MAC)
		w.kv("Type", "ether")
	case ifc.MAC != "":
		w.kv("MACAddress", ifc.MAC)
		w.kv("Type", "ether")
	case ifc.MatchName != "":
		w.kv("Name", ifc.MatchName)
	case ifc.MatchDriver == "":
		w.kv("Name", ifc.LinkName())
	}
	if ifc.Kind == Physical && ifc.MatchDriver != "" {
		w.kv("Driver", ifc.MatchDriver)
	}
}

// writeLink writes the [Link] section, when the link has one: its MTU,
// the MAC it is given, and RequiredForOnline=no for an optional link.
func writeLink(w *ini, ifc *Interface) {
	setMAC := ifc.SetMAC
	if ifc.Kind != Physical {
		setMAC = ifc.MAC
	}
	if ifc.MTU == 0 && setMAC == "" && !ifc.Optional {
		return
	}
	w.section("Link")
	if ifc.MTU != 0 {
		w.kv("MTUBytes", strconv.Itoa(ifc.MTU))
	}
	if setMAC != "" {
		w.kv("MACAddress", setMAC)
	}
	if ifc.Optional {
		// network-online.target does not wait for it.
		w.kv("RequiredForOnline", "no")
	}
}

// writeMember writes the rest of a bond or bridge member's file: its
// master, no addresses of its own (the plan gives it none), and a
// bridge port's [Bridge] settings.
func writeMember(w *ini, lp *LinkPlan) {
	master := lp.Master
	if master.Kind == Bond {
		w.kv("Bond", master.LinkName())
		if p := master.Params["primary"]; p != "" && (p == lp.ID || p == lp.LinkName()) {
			w.kv("PrimarySlave", "yes")
		}
	} else {
		w.kv("Bridge", master.LinkName())
	}
	w.kv("DHCP", "no")
	w.kv("LinkLocalAddressing", "no")
	w.kv("IPv6AcceptRA", "no")
	for _, vl := range lp.VLANs {
		w.kv("VLAN", vl.LinkName())
	}
	if master.Kind != Bridge {
		return
	}
	cost, prio := portParams(master, lp.Interface)
	if cost != "" || prio != "" {
		w.section("Bridge")
		if cost != "" {
			w.kv("Cost", cost)
		}
		if prio != "" {
			w.kv("Priority", prio)
		}
	}
}

// writeNetwork writes a link's DHCP, router advertisements, addresses
// and DNS in its [Network] section.
func writeNetwork(w *ini, lp *LinkPlan) {
	dhcp := "no"
	switch {
	case lp.DHCP4 && lp.DHCP6:
		dhcp = "yes"
	case lp.DHCP4:
		dhcp = "ipv4"
	case lp.DHCP6:
		dhcp = "ipv6"
	}
	w.kv("DHCP", dhcp)
	if ra, set := acceptRA(lp.Interface); set {
		w.kv("IPv6AcceptRA", yesNo(ra))
	}
	for _, a := range lp.Addresses {
		w.kv("Address", a.String())
	}
	for _, ns := range lp.DNS.Nameservers {
		w.kv("DNS", ns.String())
	}
	for _, d := range lp.DNS.Search {
		if err := checkDomain(d); err != nil {
			w.fail(fmt.Errorf("Domains: %w", err))
		}
	}
	if len(lp.DNS.Search) > 0 {
		w.kv("Domains", strings.Join(lp.DNS.Search, " "))
	}
}

// writeDHCPClients writes the [DHCPv4] and [DHCPv6] sections of a DHCP
// link.
func writeDHCPClients(w *ini, ifc *Interface) {
	m4, m6 := dhcpMetrics(ifc)
	if ifc.DHCP4 {
		o := ifc.DHCP4Overrides
		if o.UseMTU == nil && ifc.MTU == 0 {
			// netplan's default: the MTU the DHCP server offers
			// is the link's (networkd's own is not to take it);
			// a link's own MTU wins.
			o.UseMTU = &[]bool{true}[0]
		}
		writeDHCP(w, "DHCPv4", o, m4, ifc.DHCPIdentifier, true)
	}
	if ifc.DHCP4 || ifc.DHCP6 {
		o := ifc.DHCP6Overrides
		if !ifc.DHCP6 {
			o = DHCPOverrides{}
		}
		writeDHCP(w, "DHCPv6", o, m6, "", false)
	}
}

// writeRoutes writes a [Route] section for each route the link carries.
func writeRoutes(w *ini, lp *LinkPlan) {
	for _, r := range lp.Routes {
		w.section("Route")
		if r.To.Bits() != 0 || !r.Via.IsValid() {
			w.kv("Destination", r.To.String())
		}
		if r.Via.IsValid() {
			w.kv("Gateway", r.Via.String())
			if r.OnLink {
				// A gateway outside every address (a /32 with a
				// gateway beside it, or a DHCP-only link) is
				// reachable on the link only; networkd assumes so
				// on a link without static addresses, with a
				// warning, so say it (the plan's decision).
				w.kv("GatewayOnLink", "yes")
			}
		} else {
			w.kv("Scope", "link")
		}
		if r.Metric != 0 {
			w.kv("Metric", strconv.Itoa(r.Metric))
		}
		if r.Table != 0 {
			w.kv("Table", strconv.Itoa(r.Table))
		}
	}
}

// writeRules writes a [RoutingPolicyRule] section for each rule.
func writeRules(w *ini, rules []Rule) {
	for _, r := range rules {
		w.section("RoutingPolicyRule")
		if r.From.IsValid() {
			w.kv("From", r.From.String())
		}
		if r.To.IsValid() {
			w.kv("To", r.To.String())
		}
		if r.Table != 0 {
			w.kv("Table", strconv.Itoa(r.Table))
		}
		if r.Priority != 0 {
			w.kv("Priority", strconv.Itoa(r.Priority))
		}
		if r.Mark != 0 {
			w.kv("FirewallMark", strconv.Itoa(r.Mark))
		}
		if r.TOS != 0 {
			w.kv("TypeOfService", strconv.Itoa(r.TOS))
		}
	}
}

// portParams are the path cost and port priority a bridge gives its
// member (v2 parameters path-cost and port-priority, by the member's ID
// or link name), "" where it gives none.
func portParams(bridge, member *Interface) (cost, prio string) {
	get := func(key string) string {
		for _, pair := range strings.Fields(bridge.Params[key]) {
			port, val, _ := strings.Cut(pair, "=")
			if _, err := strconv.Atoi(val); err == nil && (port == member.ID || port == member.LinkName()) {
				return val
			}
		}
		return ""
	}
	return get("path-cost"), get("port-priority")
}

// acceptRA is whether the link takes router advertisements and whether
// the configuration says so (set false: the stack's default). An explicit
// accept-ra wins over what the rest would make of it; without one, SLAAC
// and DHCPv6 need them (DHCPv6 starts from a router advertisement, and the
// IPv6 default route comes from one).
func acceptRA(ifc *Interface) (ra, set bool) {
	switch {
	case ifc.AcceptRA != nil:
		return *ifc.AcceptRA, true
	case ifc.SLAAC || ifc.DHCP6:
		return true, true
	}
	return false, false
}

// dhcpMetricDefault is the metric netplan gives the routes of a DHCP
// link that sets none (networkd's own default is 1024).
const dhcpMetricDefault = 100

// dhcpMetrics are the route metrics of a DHCP link, as netplan means
// them: the routes of the DHCPv4 lease take the dhcp4 route-metric; the
// IPv6 routes (networkd's [DHCPv6] RouteMetric is the metric of the
// routes router advertisements bring, the IPv6 routes a DHCP link gets)
// the dhcp6 one, else the dhcp4 one; either, when unset, netplan's 100.
func dhcpMetrics(ifc *Interface) (m4, m6 int) {
	m4, m6 = ifc.DHCPMetric, ifc.DHCP6Overrides.RouteMetric
	if !ifc.DHCP6 || m6 == 0 {
		m6 = m4
	}
	if !ifc.DHCP4 {
		m4 = 0
	}
	if m4 == 0 {
		m4 = dhcpMetricDefault
	}
	if m6 == 0 {
		m6 = dhcpMetricDefault
	}
	return m4, m6
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// writeDHCP writes the [DHCPv4] or [DHCPv6] section of the DHCP client's
// settings, when one is not the default: what networkd's section has
// (DHCPv6 has no UseRoutes, UseMTU, SendHostname or Hostname; the stack's
// notes say so).
func writeDHCP(w *ini, sec string, o DHCPOverrides, metric int, clientID string, v4 bool) {
	opened := false
	kv := func(k, v string) {
		if !opened {
			w.section(sec)
			opened = true
		}
		w.kv(k, v)
	}
	if clientID == "mac" {
		kv("ClientIdentifier", "mac")
	}
	if metric != 0 {
		kv("RouteMetric", strconv.Itoa(metric))
	}
	flags := []struct {
		key string
		b   *bool
		v6  bool
	}{
		{"UseDNS", o.UseDNS, true}, {"UseNTP", o.UseNTP, true}, {"UseHostname", o.UseHostname, true},
		{"UseDomains", o.UseDomains, true}, {"UseRoutes", o.UseRoutes, false}, {"UseMTU", o.UseMTU, false},
		{"SendHostname", o.SendHostname, false},
	}
	for _, f := range flags {
		switch {
		case f.b == nil || !v4 && !f.v6:
		case f.key == "UseDomains" && *f.b && o.RouteDomains:
			kv(f.key, "route")
		default:
			kv(f.key, yesNo(*f.b))
		}
	}
	if o.Hostname != "" && v4 {
		kv("Hostname", o.Hostname)
	}
}

// dynamicFor reports whether the link gets addresses of the gateway's
// family from DHCP or SLAAC, which may well contain the gateway.
func dynamicFor(ifc *Interface, gw netip.Addr) bool {
	if gw.Is4() {
		return ifc.DHCP4
	}
	return ifc.DHCP6 || ifc.SLAAC
}

// networkd names for netplan bond parameters; ms: a plain number means
// milliseconds, s: seconds.
var bondKeys = map[string]struct{ key, unit string }{
	"mode":                    {"Mode", ""},
	"lacp-rate":               {"LACPTransmitRate", ""},
	"mii-monitor-interval":    {"MIIMonitorSec", "ms"},
	"min-links":               {"MinLinks", ""},
	"transmit-hash-policy":    {"TransmitHashPolicy", ""},
	"ad-select":               {"AdSelect", ""},
	"arp-interval":            {"ARPIntervalSec", "ms"},
	"arp-ip-target":           {"ARPIPTargets", ""},
	"arp-validate":            {"ARPValidate", ""},
	"arp-all-targets":         {"ARPAllTargets", ""},
	"up-delay":                {"UpDelaySec", "ms"},
	"down-delay":              {"DownDelaySec", "ms"},
	"fail-over-mac-policy":    {"FailOverMACPolicy", ""},
	"gratuitous-arp":          {"GratuitousARP", ""},
	"packets-per-slave":       {"PacketsPerSlave", ""},
	"primary-reselect-policy": {"PrimaryReselectPolicy", ""},
	"resend-igmp":             {"ResendIGMP", ""},
	"learn-packet-interval":   {"LearnPacketIntervalSec", "s"},
	"all-slaves-active":       {"AllSlavesActive", "bool"},
}

var bridgeKeys = map[string]struct{ key, unit string }{
	"stp":           {"STP", "bool"},
	"forward-delay": {"ForwardDelaySec", "s"},
	"hello-time":    {"HelloTimeSec", "s"},
	"max-age":       {"MaxAgeSec", "s"},
	"ageing-time":   {"AgeingTimeSec", "s"},
	"priority":      {"Priority", ""},
}

// bondModes are the numeric bonding modes of the kernel.
var bondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

func renderNetdev(ifc *Interface) ([]byte, error) {
	w := &ini{}
	w.WriteString(Header + "\n")
	w.section("NetDev")
	w.kv("Name", ifc.LinkName())
	w.kv("Kind", string(ifc.Kind))
	if ifc.MTU != 0 {
		w.kv("MTUBytes", strconv.Itoa(ifc.MTU))
	}
	if ifc.MAC != "" {
		w.kv("MACAddress", ifc.MAC)
	}
	switch ifc.Kind {
	case VLAN:
		w.section("VLAN")
		w.kv("Id", strconv.Itoa(ifc.VLANID))
	case Bond:
		writeParams(w, "Bond", ifc.Params, bondKeys)
	case Bridge:
		writeParams(w, "Bridge", ifc.Params, bridgeKeys)
	}
	return w.result()
}

// writeParams writes the parameters networkd knows as section sec, and
// the others as comments.
func writeParams(w *ini, sec string, params map[string]string, keys map[string]struct{ key, unit string }) {
	var skipped []string
	opened := false
	for _, k := range sortedKeys(params) {
		v := params[k]
		nk, ok := keys[k]
		if !ok {
			skipped = append(skipped, k)
			continue
		}
		switch nk.unit {
		case "ms", "s":
			if _, err := strconv.Atoi(v); err == nil {
				v += nk.unit
			}
		case "bool":
			if b, ok := parseBoolText(v); ok {
				v = "no"
				if b {
					v = "yes"
				}
			}
		}
		if nk.key == "Mode" {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(bondModes) {
				v = bondModes[n]
			}
		}
		if !opened {
			w.section(sec)
			opened = true
		}
		w.kv(nk.key, v)
	}
	for _, k := range skipped {
		if k == "primary" || k == "path-cost" || k == "port-priority" {
			continue // rendered on the members, or not at all
		}
		w.comment("not rendered: " + k + "=" + params[k])
	}
}

// RenderResolvConf renders dns as /etc/resolv.conf, for systems that do
// not run systemd-resolved: at most three nameservers (the resolver's
// limit) and one search line. A search domain that is not one (white
// space, a control character: what would add a word or a line) is left
// out; the parsers never produce one.
func RenderResolvConf(dns DNS) []byte {
	var b bytes.Buffer
	b.WriteString(Header + "\n")
	for i, ns := range dedupe(slices.Clone(dns.Nameservers)) {
		if i == 3 {
			break
		}
		b.WriteString("nameserver " + ns.String() + "\n")
	}
	search := slices.DeleteFunc(slices.Clone(dns.Search), func(d string) bool { return checkDomain(d) != nil })
	if s := dedupe(search); len(s) > 0 {
		b.WriteString("search " + strings.Join(s, " ") + "\n")
	}
	return b.Bytes()
}

// view is the part of a configuration a renderer writes: the owned
// interfaces, and the relations among them. A master or VLAN that is not
// owned is not rendered, so it is never named either.
type view struct {
	c     *Config
	owned func(*Interface) bool
	links []*Interface // the owned interfaces, in configuration order
}

func newView(c *Config, owned func(*Interface) bool) *view {
	if owned == nil {
		owned = func(*Interface) bool { return true }
	}
	v := &view{c: c, owned: owned}
	for i := range c.Interfaces {
		if ifc := &c.Interfaces[i]; owned(ifc) {
			v.links = append(v.links, ifc)
		}
	}
	return v
}

// master is the owned bond or bridge that enslaves ifc, or nil.
func (v *view) master(ifc *Interface) *Interface {
	if m := v.c.Master(ifc); m != nil && v.owned(m) {
		return m
	}
	return nil
}

// vlans are the owned VLANs on ifc.
func (v *view) vlans(ifc *Interface) []*Interface {
	var out []*Interface
	for _, vl := range v.c.VLANs(ifc) {
		if v.owned(vl) {
			out = append(out, vl)
		}
	}
	return out
}
