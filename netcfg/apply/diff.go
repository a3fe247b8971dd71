package apply

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Allowlist reports whether seedkeeper may manage a NIC run by the given
// kernel driver. A nil Allowlist allows nothing.
type Allowlist func(driver string) bool

// Drivers returns the Allowlist of exactly the named drivers. With no names
// it allows nothing.
func Drivers(names ...string) Allowlist {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" {
			set[n] = true
		}
	}
	return func(driver string) bool { return set[driver] }
}

// Allows reports whether driver is allowed; an empty driver never is.
func (a Allowlist) Allows(driver string) bool {
	return a != nil && driver != "" && a(driver)
}

// Link is the live state of one link, as read from the kernel.
type Link struct {
	Index int
	Name  string
	// AltNames are the link's alternative names: the kernel counts them
	// as taken, as it does names.
	AltNames []string
	// MAC is lower-case and colon-separated: the permanent address when
	// the kernel reports one (a bond member's current address is the
	// bond's), else the current one.
	MAC string
	// Stacked is true for links built on others (VLAN, bond, bridge,
	// macvlan, ...): they carry a NIC's MAC but are never the NIC.
	Stacked bool
	// Kind is the kernel's link type ("bond", "vlan", "bridge", "veth",
	// "device" for a plain NIC, ...); "" when unknown.
	Kind string
	// Master is the index of the bond or bridge the link is a port of, 0
	// for none; Parent the index of the link a VLAN is on.
	Master int
	Parent int
	// VLANID is a VLAN's ID; BondMode a bond's mode in the kernel's
	// numbering (-1 unknown).
	VLANID   int
	BondMode int
	MTU      int
	// Up is the administrative state (IFF_UP); OperUp the operational one.
	Up     bool
	OperUp bool
	// Driver comes from ETHTOOL_GDRVINFO and is read only for links the
	// configuration selects; "" when unknown.
	Driver string
	// Addresses and Routes are read only for owned links. Routes carry
	// Table 0 for the main table.
	Addresses []netip.Prefix
	Routes    []netcfg.Route
	// Rules are the kernel's policy routing rules, read only for owned
	// links. A rule belongs to no link: every owned link carries the
	// same list, and the plan compares a link's configured rules with it.
	Rules []netcfg.Rule
}

// normMAC returns s in lower-case colon form, or "" when it is not a MAC.
func normMAC(s string) string {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return ""
	}
	return hw.String()
}

// selects reports whether the configured interface ifc, whose MAC in
// normal form is mac, selects live link l, ignoring drivers. An entry with a MAC matches by MAC only; one without
// matches by match.name (a glob), else by its name or ID. A link that
// already carries the name the entry asks for matches too, so a second run
// after a rename still finds it.
func selects(ifc *netcfg.Interface, mac string, l *Link) bool {
	if ifc.Kind != netcfg.Physical && ifc.Kind != "" || l.Stacked {
		return false
	}
	if ifc.MAC != "" {
		return mac == l.MAC && mac != ""
	}
	if ifc.Name != "" && l.Name == ifc.Name {
		return true
	}
	if ifc.MatchName != "" {
		ok, err := path.Match(ifc.MatchName, l.Name)
		return err == nil && ok
	}
	if ifc.MatchDriver != "" {
		return false // driver-only matches are not applied live
	}
	return ifc.ID != "" && l.Name == ifc.ID
}

// candidates returns the indexes into live of the links some physical
// entry of cfg selects: the only links whose driver is worth reading.
func candidates(cfg *netcfg.Config, live []Link) []int {
	macs := configMACs(cfg)
	var out []int
	for i := range live {
		for j := range cfg.Interfaces {
			if selects(&cfg.Interfaces[j], macs[j], &live[i]) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// configMACs returns the MAC of each interface of cfg in normal form.
func configMACs(cfg *netcfg.Config) []string {
	macs := make([]string, len(cfg.Interfaces))
	for j, ifc := range cfg.Interfaces {
		macs[j] = normMAC(ifc.MAC)
	}
	return macs
}

func label(ifc *netcfg.Interface) string {
	switch {
	case ifc.ID != "":
		return ifc.ID
	case ifc.Name != "":
		return ifc.Name
	case ifc.MAC != "":
		return ifc.MAC
	}
	return "(unnamed)"
}

// owned is one configured interface and the live link it owns.
type owned struct {
	ifc *netcfg.Interface
	// link is the live link; nil for a stacked link the plan creates.
	link *Link
	// kind is set for a stacked link (bond, VLAN, bridge), which is known
	// by its name, not by a MAC.
	kind netcfg.Kind
	name string // the name the link has once renames are done
	// flushed is set when the link is renamed while up: taking it down
	// drops its routes and IPv6 addresses.
	flushed bool
	// addrs, routes and rules are what the link carries (netcfg's
	// Config.Plan, the one decision the stacks' files are views of too).
	addrs  []netip.Prefix
	routes []netcfg.Route
	rules  []netcfg.Rule
}

// Diff plans cfg against the live links, keyed by MAC. live must carry the
// driver of every link the configuration selects and the addresses and
// routes of every link it owns (Handle.Plan reads exactly that). rc is the
// receipt of earlier applies (nil for none). A nil cfg is "no network
// configuration" and gives an empty plan. The plan's notes start with what
// the parser left out of the document (cfg.Notes), so that every caller
// reports it where it reports the plan.
func Diff(cfg *netcfg.Config, live []Link, allow Allowlist, rc *Receipt) *Plan {
	return diff(cfg, live, allow, rc, false)
}

// diff is Diff; part says that cfg is a part of the configuration (Only),
// so that a NIC or link of the receipt it does not name is not said to be
// no longer configured.
func diff(cfg *netcfg.Config, live []Link, allow Allowlist, rc *Receipt, part bool) *Plan {
	p := &Plan{receipt: rc.clone(), part: part}
	if cfg == nil {
		p.Notes = append(p.Notes, "no network configuration: leaving the network alone")
		return p
	}
	for _, n := range cfg.Notes {
		p.notef("network config: %s", n)
	}
	p.forgetGoneStacked(live)

	macs := configMACs(cfg)
	sel, claims := p.selectLinks(cfg, live, macs)
	own := p.ownNICs(cfg, live, macs, sel, claims, allow)
	p.planNICs(own, live)
	own = append(own, p.planStacked(cfg, live, own)...)
	for _, o := range own {
		if p.OwnedName == nil {
			p.OwnedName = map[string]string{}
		}
		p.OwnedName[o.ifc.ID] = o.name
	}
	p.planAltNames(own)
	p.assignPlan(cfg, own)
	links := make([]*netcfg.Interface, len(own))
	for i, o := range own {
		links[i] = o.ifc
	}
	// What the live apply leaves to the stack's files (routing rules, an
	// ethernet's new MAC), by link and key.
	for _, n := range netcfg.UnappliedBy("live", links) {
		p.notef("%s", n)
	}

	// Removals of our stale objects first, so a changed address or route
	// never collides with its old self; then additions.
	var adds, addRoutes []Op
	for _, o := range own {
		a, r := p.planObjects(o)
		adds, addRoutes = append(adds, a...), append(addRoutes, r...)
	}
	// Keep the operations in the order of their kinds (removals
	// routes-then-addresses across links), each kind in planning order.
	slices.SortStableFunc(p.Ops, func(a, b Op) int { return rank(a) - rank(b) })
	p.Ops = append(p.Ops, adds...)
	p.Ops = append(p.Ops, addRoutes...)
	return p
}

// selectLinks is the first phase of Diff: which live links each physical
// entry selects (sel, by entry), and which entries select each live link
// (claims, by live index).
func (p *Plan) selectLinks(cfg *netcfg.Config, live []Link, macs []string) (sel [][]int, claims map[int][]int) {
	claims = map[int][]int{}
	sel = make([][]int, len(cfg.Interfaces))
	for j := range cfg.Interfaces {
		ifc := &cfg.Interfaces[j]
		if ifc.Kind != netcfg.Physical && ifc.Kind != "" {
			continue
		}
		if ifc.MAC == "" && ifc.MatchName == "" && ifc.MatchDriver != "" {
			p.notef("%s: matched by driver %s only, not applied live (no MAC or name to own it by)", label(ifc), ifc.MatchDriver)
			continue
		}
		for i := range live {
			if selects(ifc, macs[j], &live[i]) && (ifc.MatchDriver == "" || live[i].Driver == ifc.MatchDriver) {
				sel[j] = append(sel[j], i)
				claims[i] = append(claims[i], j)
			}
		}
	}
	return sel, claims
}

// ownNICs is the second phase of Diff: an entry owns the one live link it
// selects when no other entry selects that link too and its driver is
// allowed. It fills Owned and OwnedMAC, and notes receipt entries the
// configuration no longer speaks about.
func (p *Plan) ownNICs(cfg *netcfg.Config, live []Link, macs []string, sel [][]int, claims map[int][]int, allow Allowlist) []*owned {
	var own []*owned
	mentioned := map[string]bool{} // MACs the configuration speaks about
	for j := range cfg.Interfaces {
		if macs[j] != "" {
			mentioned[macs[j]] = true
		}
		for _, i := range sel[j] {
			mentioned[live[i].MAC] = true
		}
	}
	for j := range cfg.Interfaces {
		ifc := &cfg.Interfaces[j]
		switch {
		case ifc.Kind != netcfg.Physical && ifc.Kind != "":
			continue
		case len(sel[j]) == 0:
			if ifc.MAC == "" && ifc.MatchName == "" && ifc.MatchDriver != "" {
				continue
			}
			p.notef("%s: not present", label(ifc))
			if macs[j] == "" || !slices.ContainsFunc(live, func(l Link) bool { return l.MAC == macs[j] }) {
				// A link that is not a NIC (a bridge) holding the
				// MAC is not ours: no NIC is expected by it.
				p.Absent = append(p.Absent, ifc.ID)
			}
			continue
		case len(sel[j]) > 1:
			var names []string
			for _, i := range sel[j] {
				names = append(names, live[i].Name)
			}
			p.notef("%s: matches %d links (%s); left alone", label(ifc), len(names), strings.Join(names, ", "))
			continue
		}
		l := &live[sel[j][0]]
		if c := claims[sel[j][0]]; len(c) > 1 {
			if c[0] == j {
				p.notef("%s (%s): selected by %d configuration entries; left alone", l.Name, l.MAC, len(c))
			}
			continue
		}
		if !p.allowed(l, allow) {
			continue
		}
		own = append(own, &owned{ifc: ifc, link: l, name: l.Name})
		p.Owned = append(p.Owned, ifc.ID)
		if p.OwnedMAC == nil {
			p.OwnedMAC = map[string]string{}
		}
		p.OwnedMAC[ifc.ID] = l.MAC
	}
	for _, mac := range slices.Sorted(maps.Keys(p.receipt.Links)) {
		if !mentioned[mac] && !p.part {
			p.notef("%s: in the receipt but no longer configured; left as it is", mac)
		}
	}
	return own
}

// planNICs is the third phase of Diff: the owned NICs' names, MTUs and
// state.
func (p *Plan) planNICs(own []*owned, live []Link) {
	p.planRenames(own, live)
	for _, o := range own {
		if o.ifc.MTU > 0 && o.ifc.MTU != o.link.MTU {
			p.add(o, Op{Kind: SetMTU, MTU: o.ifc.MTU})
		}
	}
	for _, o := range own {
		if !o.link.Up {
			p.add(o, Op{Kind: LinkUp})
		}
	}
}

// planObjects is the last phase of Diff, for one owned link: it plans the
// removal of our stale routes and addresses (into p.Ops) and returns the
// additions, and sets the link's receipt entry to what stays ours.
func (p *Plan) planObjects(o *owned) (adds, addRoutes []Op) {
	prior := p.receipt.get(o)
	next := Added{Made: prior.Made, Index: prior.Index}
	if o.link != nil {
		// The alternative names seedkeeper gave that the link still
		// holds: a reboot drops them all.
		for _, n := range prior.AltNames {
			if slices.Contains(o.link.AltNames, n) {
				next.AltNames = append(next.AltNames, n)
			}
		}
	}

	liveAddrs := map[netip.Prefix]bool{}
	for _, a := range o.liveAddresses() {
		if !(o.flushed && a.Addr().Is6()) {
			liveAddrs[normPrefix(a)] = true
		}
	}
	want := map[netip.Prefix]bool{}
	for _, a := range o.addrs {
		a = normPrefix(a)
		if want[a] {
			continue
		}
		want[a] = true
		switch {
		case !liveAddrs[a]:
			adds = append(adds, p.op(o, Op{Kind: AddAddress, Address: a}))
		case slices.Contains(prior.Addresses, a):
			next.Addresses = append(next.Addresses, a)
		}
	}

	// Removing the last IPv4 address of a subnet takes the routes
	// through a gateway in it along: those are added again if gone.
	var removed, kept []netip.Prefix
	for _, a := range prior.Addresses {
		if !want[a] && liveAddrs[a] {
			removed = append(removed, a)
		}
	}
	for a := range liveAddrs {
		if !slices.Contains(removed, a) {
			kept = append(kept, a)
		}
	}
	inSubnet := func(as []netip.Prefix, gw netip.Addr) bool {
		return slices.ContainsFunc(as, func(a netip.Prefix) bool { return a.Masked().Contains(gw) })
	}
	liveRoutes := map[netcfg.Route]bool{}
	if !o.flushed {
		for _, r := range o.liveRoutes() {
			liveRoutes[normRoute(r)] = true
		}
	}
	wantR := map[netcfg.Route]bool{}
	for _, r := range o.routes {
		r = normRoute(r)
		if wantR[r] {
			continue
		}
		wantR[r] = true
		switch {
		case !liveRoutes[r]:
			addRoutes = append(addRoutes, p.op(o, Op{Kind: AddRoute, Route: r}))
			continue
		case slices.Contains(prior.Routes, r):
			next.Routes = append(next.Routes, r)
		}
		if r.Via.Is4() && inSubnet(removed, r.Via) && !inSubnet(kept, r.Via) {
			addRoutes = append(addRoutes, p.op(o, Op{Kind: AddRoute, Route: r, ifMissing: true}))
		}
	}
	for _, r := range prior.Routes {
		if !wantR[r] && liveRoutes[r] {
			p.add(o, Op{Kind: RemoveRoute, Route: r})
		}
	}
	addRoutes = append(addRoutes, p.planRules(o, prior, &next)...)
	for _, a := range removed {
		p.add(o, Op{Kind: RemoveAddress, Address: a})
	}
	p.receipt.setFor(o, next)
	return adds, addRoutes
}

// planRules plans the link's policy routing rules: those the kernel lacks
// are added, and those seedkeeper added for the link that are no longer
// configured are removed; next keeps what stays seedkeeper's.
func (p *Plan) planRules(o *owned, prior Added, next *Added) (adds []Op) {
	var live []netcfg.Rule
	if o.link != nil {
		live = o.link.Rules
	}
	has := func(r netcfg.Rule) bool {
		return slices.ContainsFunc(live, func(l netcfg.Rule) bool { return sameRule(r, l) })
	}
	var want []netcfg.Rule
	for _, r := range o.rules {
		r = normRule(r)
		if slices.Contains(want, r) {
			continue
		}
		want = append(want, r)
		switch {
		case !has(r):
			adds = append(adds, p.op(o, Op{Kind: AddRule, Rule: r}))
		case slices.Contains(prior.Rules, r):
			next.Rules = append(next.Rules, r)
		}
	}
	for _, r := range prior.Rules {
		if !slices.Contains(want, r) && has(r) {
			p.add(o, Op{Kind: RemoveRule, Rule: r})
		}
	}
	return adds
}

// forgetGoneStacked drops the receipt entries of stacked links that no
// longer exist: what seedkeeper made or added to them went with them, and
// a link that comes to carry the name later (after a reboot, made by
// libvirt or docker) is someone else's, never adopted on the strength of
// an entry about another link.
func (p *Plan) forgetGoneStacked(live []Link) {
	for _, name := range slices.Sorted(maps.Keys(p.receipt.Stacked)) {
		if !slices.ContainsFunc(live, func(l Link) bool { return l.Stacked && l.Name == name }) {
			delete(p.receipt.Stacked, name)
			p.notef("%s: in the receipt but gone; forgotten", name)
		}
	}
}

// allowed reports whether the driver of live link l is allowed, noting
// when it is not.
func (p *Plan) allowed(l *Link, allow Allowlist) bool {
	if allow.Allows(l.Driver) {
		return true
	}
	d := strconv.Quote(l.Driver)
	if l.Driver == "" {
		d = "unknown"
	}
	p.notef("%s (%s): driver %s is not allowed; left alone", l.Name, l.MAC, d)
	return false
}

func (p *Plan) notef(format string, args ...any) {
	p.Notes = append(p.Notes, fmt.Sprintf(format, args...))
}

func (p *Plan) op(o *owned, op Op) Op {
	if o.link != nil {
		op.Index = o.link.Index
	}
	if o.kind != "" {
		op.LinkKind = o.kind
	} else {
		op.MAC = o.link.MAC
	}
	if op.Name == "" {
		op.Name = o.name
	}
	return op
}

// liveAddresses and liveRoutes are what the owned link carries now: none
// for a link the plan creates.
func (o *owned) liveAddresses() []netip.Prefix {
	if o.link == nil {
		return nil
	}
	return o.link.Addresses
}

func (o *owned) liveRoutes() []netcfg.Route {
	if o.link == nil {
		return nil
	}
	return o.link.Routes
}

func (p *Plan) add(o *owned, op Op) { p.Ops = append(p.Ops, p.op(o, op)) }

// planAltNames fills OwnedAltNames from the live links and the plan's
// renames.
func (p *Plan) planAltNames(own []*owned) {
	for _, o := range own {
		if o.kind != "" || o.link == nil {
			continue
		}
		alt := slices.Clone(o.link.AltNames)
		for _, op := range p.Ops {
			if op.Index != o.link.Index || op.Kind != Rename && op.Kind != DelAltName {
				continue
			}
			alt = slices.DeleteFunc(alt, func(n string) bool { return n == op.NewName })
			if op.Kind == Rename && op.keepName && !slices.Contains(alt, op.Name) {
				alt = append(alt, op.Name)
			}
		}
		if len(alt) == 0 {
			continue
		}
		if p.OwnedAltNames == nil {
			p.OwnedAltNames = map[string][]string{}
		}
		p.OwnedAltNames[o.ifc.ID] = alt
	}
}

// planRenames orders the renames so that a link gives up a name before
// another takes it, going through a temporary name to break a cycle (two
// NICs swapping names). A name held by a link that is not being renamed
// (a foreign NIC, a bridge) is not taken: the owned link keeps its name,
// with a note, and so do the files rendered for it. The kernel counts
// alternative names as taken too: one seedkeeper gave another link (the
// receipt's) is given up first, any other is a name another link holds.
func (p *Plan) planRenames(own []*owned, live []Link) {
	type rename struct {
		o        *owned
		from, to string
	}
	holder := map[string]int{}      // name -> live index
	altHolder := map[string]*Link{} // alternative name -> live link
	for i, l := range live {
		holder[l.Name] = l.Index
		for _, a := range l.AltNames {
			altHolder[a] = &live[i]
		}
	}
	// freeAlt makes the name a rename wants free of another link's
	// alternative name: only one seedkeeper gave that link (the receipt
	// has it), which it gives up first; any other keeps the owned link's
	// name, as a name another link holds does.
	freeAlt := func(r *rename) bool {
		l := altHolder[r.to]
		if l == nil || l.Index == r.o.link.Index {
			return true // the rename itself gives up the link's own
		}
		if l.MAC == "" || !slices.Contains(p.receipt.Links[l.MAC].AltNames, r.to) {
			return false
		}
		p.Ops = append(p.Ops, Op{Kind: DelAltName, MAC: l.MAC, Index: l.Index, Name: l.Name, NewName: r.to})
		delete(altHolder, r.to)
		return true
	}
	var pending []*rename
	taken := map[string]bool{} // names a rename of the plan gives
	for _, o := range own {
		if o.ifc.Name != "" && o.ifc.Name != o.link.Name {
			r := &rename{o: o, from: o.link.Name, to: o.ifc.Name}
			if !freeAlt(r) {
				p.notef("%s (%s): set-name %s not applied: another link has that name as an alternative name", o.link.Name, o.link.MAC, r.to)
				continue
			}
			pending = append(pending, r)
			taken[o.ifc.Name] = true
			o.name = o.ifc.Name
			o.flushed = o.link.Up
		}
	}
	// ours reports whether the link holds an alternative name seedkeeper
	// gave it: it was renamed by seedkeeper before, and its name now is
	// seedkeeper's, not the one the system gave it.
	ours := func(l *Link) bool {
		return slices.ContainsFunc(p.receipt.Links[l.MAC].AltNames, func(n string) bool { return slices.Contains(l.AltNames, n) })
	}
	emit := func(r *rename, to string) {
		// Only the name the link had when the plan was made is kept, not
		// a temporary one, not one another link is about to take, and
		// not one seedkeeper gave at an earlier rename (the first name
		// is the one kept: what was written under it before boot).
		keep := r.from == r.o.link.Name && !taken[r.from] && !ours(r.o.link)
		p.Ops = append(p.Ops, Op{Kind: Rename, MAC: r.o.link.MAC, Index: r.o.link.Index,
			Name: r.from, NewName: to, wasUp: r.o.link.Up, keepName: keep})
		delete(holder, r.from)
		holder[to] = r.o.link.Index
		r.from = to
	}
	for len(pending) > 0 {
		var blocked []*rename
		for _, r := range pending {
			if idx, taken := holder[r.to]; taken && idx != r.o.link.Index {
				blocked = append(blocked, r)
				continue
			}
			emit(r, r.to)
		}
		if len(blocked) == len(pending) {
			// No progress: free the name the first one wants if a pending
			// rename holds it, otherwise let Apply report the clash.
			r := blocked[0]
			var h *rename
			for _, b := range blocked {
				if holder[r.to] == b.o.link.Index {
					h = b
				}
			}
			if h == nil {
				p.notef("%s (%s): set-name %s not applied: another link has that name", r.o.link.Name, r.o.link.MAC, r.to)
				r.o.name, r.o.flushed = r.from, false
				blocked = blocked[1:]
			} else {
				tmp := fmt.Sprintf("sktmp%d", h.o.link.Index)
				for n := 0; ; n++ {
					if _, taken := holder[tmp]; !taken && altHolder[tmp] == nil {
						break
					}
					tmp = fmt.Sprintf("sktmp%d-%d", h.o.link.Index, n)
				}
				emit(h, tmp)
			}
		}
		pending = blocked
	}
}

// assignPlan gives every owned link what the configuration's plan
// (netcfg.Config.Plan, over the links the plan owns) has it carry: the
// addresses, routes and rules of its own, none on a bond or bridge
// member, and the global routes placed on it; the plan's notes say what
// is left out.
func (p *Plan) assignPlan(cfg *netcfg.Config, own []*owned) {
	plans, notes := cfg.Plan(p.Owns)
	// By entry, not by ID: a configuration built by hand may leave IDs
	// empty.
	of := map[*netcfg.Interface]*netcfg.LinkPlan{}
	for i := range plans {
		of[plans[i].Interface] = &plans[i]
	}
	for _, o := range own {
		if lp := of[o.ifc]; lp != nil {
			o.addrs, o.routes, o.rules = lp.Addresses, lp.Routes, lp.Rules
		}
	}
	for _, n := range notes {
		p.notef("%s", n)
	}
}

// normPrefix unmaps IPv4-in-IPv6 addresses.
func normPrefix(a netip.Prefix) netip.Prefix {
	if a.Addr().Is4In6() && a.Bits() >= 96 {
		return netip.PrefixFrom(a.Addr().Unmap(), a.Bits()-96)
	}
	return a
}

// normRoute gives a route the form the kernel reports: destination masked,
// table 0 for main, metric 1024 for an IPv6 route asked for with metric 0.
func normRoute(r netcfg.Route) netcfg.Route {
	r.To = normPrefix(r.To).Masked()
	r.Via = r.Via.Unmap()
	if r.Table == 254 {
		r.Table = 0
	}
	if r.Metric == 0 && r.To.Addr().Is6() {
		r.Metric = 1024
	}
	return r
}
