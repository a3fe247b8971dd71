package apply

import (
	"maps"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Stacked links (bonds, VLANs, bridges) are owned when a bond or bridge has
// every member owned, a VLAN the link it is on, and a link of that name
// that exists already is one seedkeeper made and holds nothing foreign;
// the renderers follow this verdict (Plan.Owns). A NIC seedkeeper does not own is never enslaved,
// and a link of the configured name that is not of the configured kind
// (or, for a VLAN, not on the configured link with the configured ID) is
// left alone. Parameters are set when the link is created; those of a
// link that exists already are not changed live.

// planStacked decides which bonds, VLANs and bridges of cfg are owned,
// plans their creation, their ports and their state, and returns them (in
// an order where a link comes after the links it is built on) for the
// address and route planning. own are the owned NICs.
func (p *Plan) planStacked(cfg *netcfg.Config, live []Link, own []*owned) []*owned {
	s := &stackPlanner{p: p, cfg: cfg, live: live, byID: map[string]*owned{}, byName: map[string]*Link{},
		state: map[string]int{}, masterOf: map[string]string{}}
	for _, o := range own {
		s.byID[o.ifc.ID] = o
	}
	for i := range live {
		s.byName[live[i].Name] = &live[i]
	}
	// A NIC the plan renames gives up its name and takes another.
	for _, o := range own {
		if o.name != o.link.Name {
			if s.byName[o.link.Name] == o.link {
				delete(s.byName, o.link.Name)
			}
			s.byName[o.name] = o.link
		}
	}
	configured := map[string]bool{}
	for i := range cfg.Interfaces {
		ifc := &cfg.Interfaces[i]
		if isStacked(ifc) {
			configured[ifc.LinkName()] = true
		}
		s.visit(ifc)
	}
	for _, name := range slices.Sorted(maps.Keys(p.receipt.Stacked)) {
		if !configured[name] && !p.part {
			p.notef("%s: in the receipt but no longer configured; left as it is", name)
		}
	}
	return s.out
}

func isStacked(ifc *netcfg.Interface) bool {
	return ifc.Kind != netcfg.Physical && ifc.Kind != ""
}

type stackPlanner struct {
	p      *Plan
	cfg    *netcfg.Config
	live   []Link
	byID   map[string]*owned // owned links by configuration ID
	byName map[string]*Link  // live links by the name they have after renames
	// state is 1 while an entry is being decided, 2 once it is.
	state map[string]int
	// masterOf maps a member's configuration ID to its bond or bridge.
	masterOf map[string]string
	out      []*owned
}

// visit returns the owned link of ifc, deciding a stacked entry (after the
// entries it is built on) the first time it is asked.
func (s *stackPlanner) visit(ifc *netcfg.Interface) *owned {
	if !isStacked(ifc) {
		return s.byID[ifc.ID]
	}
	switch s.state[ifc.ID] {
	case 1:
		s.p.notef("%s: its links form a loop; not applied live", label(ifc))
		return nil
	case 2:
		return s.byID[ifc.ID]
	}
	s.state[ifc.ID] = 1
	o := s.decide(ifc)
	s.state[ifc.ID] = 2
	if o != nil {
		s.byID[ifc.ID] = o
		s.out = append(s.out, o)
		s.p.Owned = append(s.p.Owned, ifc.ID)
	}
	return o
}

// decide plans one stacked entry whose dependencies are decided, in four
// phases: the links it is built on, its parameters, the live link of its
// name, and the operations. Any phase can refuse it (with a note): it is
// then not owned.
func (s *stackPlanner) decide(ifc *netcfg.Interface) *owned {
	name := ifc.LinkName()
	if !netcfg.ValidLinkName(name) {
		s.p.notef("%s: not a link name (1 to 15 of A-Z a-z 0-9 . _ -); not applied live", label(ifc))
		return nil
	}
	// The MTU is set once the link has its ports: see rank.
	spec := &LinkSpec{Kind: ifc.Kind, Name: name, MAC: normMAC(ifc.MAC)}
	parent, members, ok := s.builtOn(ifc, spec)
	if !ok || !s.params(ifc, spec, members) {
		return nil
	}
	l, ok := s.existing(ifc, spec, parent, members)
	if !ok {
		return nil
	}
	return s.planOps(ifc, spec, l, members)
}

// builtOn decides the links ifc is built on: a VLAN's parent (set in
// spec), a bond's or bridge's members. Each must be owned.
func (s *stackPlanner) builtOn(ifc *netcfg.Interface, spec *LinkSpec) (parent *owned, members []*owned, ok bool) {
	p, name := s.p, spec.Name
	switch ifc.Kind {
	case netcfg.VLAN:
		l := s.cfg.Lookup(ifc.VLANLink)
		if l == nil {
			p.notef("%s: its link %s is not configured; not applied live", name, ifc.VLANLink)
			return nil, nil, false
		}
		if parent = s.visit(l); parent == nil {
			p.notef("%s: its link %s is not applied live, so neither is it", name, ifc.VLANLink)
			return nil, nil, false
		}
		spec.Parent, spec.VLANID = parent.name, ifc.VLANID
	case netcfg.Bond, netcfg.Bridge:
		if len(ifc.Links) == 0 {
			p.notef("%s: a %s without members is not applied live", name, ifc.Kind)
			return nil, nil, false
		}
		for _, id := range ifc.Links {
			m := s.cfg.Lookup(id)
			if m == nil {
				p.notef("%s: member %s is not configured; not applied live", name, id)
				return nil, nil, false
			}
			mo := s.visit(m)
			if mo == nil {
				p.notef("%s: member %s is not owned by seedkeeper; not applied live", name, id)
				return nil, nil, false
			}
			if other, ok := s.masterOf[id]; ok {
				p.notef("%s: member %s is a member of %s already; not applied live", name, id, other)
				return nil, nil, false
			}
			members = append(members, mo)
		}
	default:
		p.notef("%s: %s links are not applied live", name, ifc.Kind)
		return nil, nil, false
	}
	return parent, members, true
}

// params reads a bond's or bridge's parameters into spec; a parameter the
// live apply cannot set refuses the link, one it does not set is noted.
func (s *stackPlanner) params(ifc *netcfg.Interface, spec *LinkSpec, members []*owned) bool {
	p, name := s.p, spec.Name
	var skipped []string
	var err error
	switch ifc.Kind {
	case netcfg.Bond:
		spec.Bond, skipped, err = bondParams(ifc.Params)
	case netcfg.Bridge:
		spec.Bridge, skipped, err = bridgeParams(ifc.Params)
	}
	if err != nil {
		p.notef("%s: %v; not applied live", name, err)
		return false
	}
	if len(skipped) > 0 {
		p.notef("%s: parameters not applied live: %s", name, strings.Join(skipped, ", "))
	}
	if b := spec.Bond; b != nil && b.Primary != "" {
		switch {
		case !slices.ContainsFunc(members, func(m *owned) bool { return m.ifc.ID == b.Primary || m.name == b.Primary }):
			p.notef("%s: parameter primary: not one of its members; not applied live", name)
			b.Primary = ""
		case b.Mode != 1 && b.Mode != 5 && b.Mode != 6:
			p.notef("%s: parameter primary: only active-backup, balance-tlb and balance-alb bonds have one; not applied live", name)
			b.Primary = ""
		}
	}
	return true
}

// existing returns the live link of the entry's name (nil when there is
// none: the plan creates it); ok is false when that link is not one the
// entry may own: another kind, a VLAN on another link, or a link
// seedkeeper did not make or that has what is not ours (see adoptable).
func (s *stackPlanner) existing(ifc *netcfg.Interface, spec *LinkSpec, parent *owned, members []*owned) (l *Link, ok bool) {
	p, name := s.p, spec.Name
	l = s.byName[name]
	if l == nil {
		return nil, true
	}
	switch {
	case !l.Stacked || l.Kind != string(ifc.Kind):
		kind := l.Kind
		if !l.Stacked || kind == "" {
			kind = "network interface"
		}
		p.notef("%s: the name is taken by a %s link; not applied live", name, kind)
		return nil, false
	case ifc.Kind == netcfg.VLAN && (parent.link == nil || l.Parent != parent.link.Index || l.VLANID != ifc.VLANID):
		p.notef("%s: a VLAN of that name exists on another link or with another ID; left alone", name)
		return nil, false
	case !s.adoptable(l, members):
		return nil, false
	case spec.Bond != nil && spec.Bond.Mode >= 0 && l.BondMode >= 0 && l.BondMode != spec.Bond.Mode:
		p.notef("%s: the live bond's mode is %s, the configuration's %s; a bond's parameters are set when it is created, not changed live",
			name, bondModeNames[l.BondMode%len(bondModeNames)], bondModeNames[spec.Bond.Mode])
	}
	return l, true
}

// adoptable reports whether live link l, of the entry's name and kind, may
// be adopted: only when seedkeeper made it, as the receipt says. The
// metadata cannot hand seedkeeper a link someone else made (a docker0
// bridge with its own port and address is never enslaved into, nor given
// an MTU, an address or a route). Ports and addresses a person adds to a
// link seedkeeper made stay theirs: nothing is removed that the receipt
// does not list.
//
// The link must be the one seedkeeper made (the ifindex the receipt
// holds), not one made later under the name of a deleted one.
//
// A receipt of an earlier version did not say which links seedkeeper
// made, only what it added to them (and one may say "made" without the
// index): such an entry stands for "made" only
// when the link holds nothing else, no port but the entry's members and
// no address but those seedkeeper added (the kernel's IPv6 link-local
// ones aside).
func (s *stackPlanner) adoptable(l *Link, members []*owned) bool {
	p, name := s.p, l.Name
	prior := p.receipt.Stacked[name]
	switch {
	case prior.Made && prior.Index == l.Index:
		return true
	case prior.Made && prior.Index != 0:
		p.notef("%s: the %s seedkeeper made under that name is gone, and another one has it; left alone", name, l.Kind)
		return false
	case prior.empty():
		p.notef("%s: a %s of that name exists that seedkeeper did not make; left alone", name, l.Kind)
		return false
	}
	for i := range s.live {
		port := &s.live[i]
		if port.Master != l.Index || slices.ContainsFunc(members, func(m *owned) bool { return m.link != nil && m.link.Index == port.Index }) {
			continue
		}
		p.notef("%s: it has a port seedkeeper does not own (%s), and the receipt does not say seedkeeper made it; left alone", name, port.Name)
		return false
	}
	for _, a := range l.Addresses {
		a = normPrefix(a)
		// Not "or the configuration names it": the configuration is the
		// metadata's, and naming a foreign bridge's own address must not
		// make the bridge look like one seedkeeper made.
		if a.Addr().IsLinkLocalUnicast() || slices.Contains(prior.Addresses, a) {
			continue
		}
		p.notef("%s: it has an address seedkeeper did not add, and the receipt does not say seedkeeper made it; left alone", name)
		return false
	}
	return true
}

// planOps plans the creation of the link (when l is nil), its MTU, its
// members' enslaving and its state, and returns it as owned.
func (s *stackPlanner) planOps(ifc *netcfg.Interface, spec *LinkSpec, l *Link, members []*owned) *owned {
	p, name := s.p, spec.Name
	o := &owned{ifc: ifc, link: l, kind: ifc.Kind, name: name}
	if l == nil {
		p.add(o, Op{Kind: CreateLink, Spec: spec})
	}
	if ifc.MTU > 0 && (l == nil || l.MTU != ifc.MTU) {
		p.add(o, Op{Kind: SetMTU, MTU: ifc.MTU})
	}
	if ifc.Kind == netcfg.Bond {
		// A bond gives its MTU to its members as they join: theirs would
		// be set, then undone, at every apply.
		for _, m := range members {
			if m.kind == "" && m.ifc.MTU > 0 && m.ifc.MTU != ifc.MTU {
				p.notef("%s: mtu %d not applied: a bond member takes its bond's (%s)", m.name, m.ifc.MTU, name)
			}
			p.Ops = slices.DeleteFunc(p.Ops, func(op Op) bool {
				return op.Kind == SetMTU && op.LinkKind == "" && m.kind == "" && op.MAC == m.link.MAC
			})
		}
	}
	for _, m := range members {
		s.masterOf[m.ifc.ID] = ifc.ID
		if l != nil && m.link != nil && m.link.Master == l.Index {
			continue
		}
		op := Op{Kind: SetMaster, Master: name, MasterKind: ifc.Kind}
		if b := spec.Bridge; b != nil {
			op.Port = &PortParams{Cost: portParam(b.PortCost, m), Priority: portParam(b.PortPriority, m)}
		}
		if b := spec.Bond; b != nil && b.Primary != "" {
			op.Primary = b.Primary == m.ifc.ID || b.Primary == m.name
		}
		p.add(m, op)
	}
	if l == nil || !l.Up {
		p.add(o, Op{Kind: LinkUp})
	}
	return o
}

// portParam is a member's per-port bridge setting, given by its
// configuration ID or its link name, or -1.
func portParam(m map[string]int, o *owned) int {
	if v, ok := m[o.ifc.ID]; ok {
		return v
	}
	if v, ok := m[o.name]; ok {
		return v
	}
	return -1
}
