package apply

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Kind says what an Op does. A plan runs renames first, then MTUs, link
// creation, enslaving, links up, removals, and additions last (see rank).
type Kind int

// The operations a Plan can contain.
const (
	Rename Kind = iota + 1
	SetMTU
	LinkUp
	RemoveRoute
	RemoveAddress
	AddAddress
	AddRoute
	// CreateLink makes a bond, VLAN or bridge (Op.Spec).
	CreateLink
	// SetMaster makes a link a port of a bond or bridge (Op.Master).
	SetMaster
	// AddRule and RemoveRule add and remove a policy routing rule
	// (Op.Rule), planned with the link whose configuration has it.
	AddRule
	RemoveRule
	// DelAltName gives up an alternative name (Op.NewName) seedkeeper
	// gave the link at an earlier rename, so that another link can take
	// it as its name.
	DelAltName
)

// rank is the place of an operation in a plan: by its kind, except that a
// stacked link's MTU is set once it has its ports (a bridge made with an
// MTU takes its ports' smallest as they join, a bond gives its own to its
// members), in planning order, a link before the links on top of it (a
// VLAN's MTU cannot exceed its link's).
func rank(op Op) int {
	switch op.Kind {
	case DelAltName:
		return -1 // before the rename that takes the name
	case Rename:
		return 0
	case SetMTU:
		if op.LinkKind != "" {
			return 4
		}
		return 1
	case CreateLink:
		return 2
	case SetMaster:
		return 3
	case LinkUp:
		return 5
	case RemoveRoute:
		return 6
	case RemoveAddress:
		return 7
	case AddAddress:
		return 8
	case RemoveRule:
		return 6 // with the other removals
	}
	return 9
}

// Op is one change to one owned link.
type Op struct {
	Kind Kind
	// MAC identifies a NIC; Apply refuses to act when the link at Index
	// no longer has this MAC.
	MAC   string
	Index int
	// LinkKind is set for an operation on a stacked link (a bond, VLAN or
	// bridge), which has no MAC of its own: Apply finds it by Name and
	// refuses to act when the link of that name is of another kind.
	LinkKind netcfg.Kind
	// Name is the link's name when the operation runs (after any rename
	// planned before it).
	Name string

	NewName string       // Rename
	MTU     int          // SetMTU
	Address netip.Prefix // AddAddress, RemoveAddress
	Route   netcfg.Route // AddRoute, RemoveRoute
	Rule    netcfg.Rule  // AddRule, RemoveRule
	Spec    *LinkSpec    // CreateLink
	// Master and MasterKind name the bond or bridge of a SetMaster; Port
	// is what a bridge port is set to, and Primary makes the link its
	// bond's primary.
	Master     string
	MasterKind netcfg.Kind
	Port       *PortParams
	Primary    bool

	// keepName is set on a Rename from a link's name as the plan found
	// it, when no link of the plan takes that name: Apply keeps the old
	// name as an alternative name of the link, so that what was written
	// under it before the rename still finds the NIC (netplan's generator
	// names the links systemd-networkd-wait-online waits for as they
	// were called when it ran, before boot renamed them; wait-online,
	// networkd and udev match alternative names too).
	keepName bool
	// wasUp is set on a Rename of a link that is up: the kernel renames
	// only links that are down, so Apply takes it down and up again.
	wasUp bool
	// ifMissing is set on an AddRoute of a route that was there when the
	// plan was made but that removing an address may take with it: the
	// route is added again only if it is gone.
	ifMissing bool
}

// String describes the operation for a person, for example
// "eth1 (bc:24:11:aa:bb:02): add address 192.0.2.10/24".
func (o Op) String() string {
	var what string
	switch o.Kind {
	case Rename:
		what = "rename " + o.Name + " -> " + o.NewName
	case DelAltName:
		what = "give up alternative name " + o.NewName + " (kept by seedkeeper at a rename, now another link's name)"
	case SetMTU:
		what = fmt.Sprintf("set mtu %d", o.MTU)
	case LinkUp:
		what = "link up"
	case AddAddress:
		what = "add address " + o.Address.String()
	case RemoveAddress:
		what = "remove address " + o.Address.String() + " (added by seedkeeper, no longer configured)"
	case AddRoute:
		what = "add route " + routeString(o.Route)
		if o.ifMissing {
			what += " (again, if removing an address took it)"
		}
	case RemoveRoute:
		what = "remove route " + routeString(o.Route) + " (added by seedkeeper, no longer configured)"
	case CreateLink:
		what = "create"
		if o.Spec != nil && o.Spec.Kind == netcfg.VLAN {
			what = fmt.Sprintf("create on %s id %d", o.Spec.Parent, o.Spec.VLANID)
		}
	case SetMaster:
		what = "enslave to " + o.Master
	case AddRule:
		what = "add rule " + ruleString(o.Rule)
	case RemoveRule:
		what = "remove rule " + ruleString(o.Rule) + " (added by seedkeeper, no longer configured)"
	default:
		what = fmt.Sprintf("unknown operation %d", o.Kind)
	}
	if o.LinkKind != "" {
		return fmt.Sprintf("%s (%s): %s", o.Name, o.LinkKind, what)
	}
	return fmt.Sprintf("%s (%s): %s", o.Name, o.MAC, what)
}

func routeString(r netcfg.Route) string {
	var b strings.Builder
	if r.To.Bits() == 0 {
		b.WriteString("default")
	} else {
		b.WriteString(r.To.String())
	}
	if r.Via.IsValid() {
		b.WriteString(" via " + r.Via.String())
		if r.OnLink {
			b.WriteString(" onlink")
		}
	} else {
		b.WriteString(" on-link")
	}
	if r.Metric != 0 {
		fmt.Fprintf(&b, " metric %d", r.Metric)
	}
	if r.Table != 0 {
		fmt.Fprintf(&b, " table %d", r.Table)
	}
	return b.String()
}

// Plan is the ordered list of operations that bring the owned links to the
// configuration, with notes on what was decided but needs no operation (a
// configured NIC that is not present, a NIC whose driver is not allowed).
type Plan struct {
	Ops   []Op
	Notes []string
	// Owned lists the IDs of the configured interfaces seedkeeper owns:
	// the physical ones that own a live link (MAC or name matched, driver
	// allowed), in config order, then the bonds, bridges and VLANs the
	// plan creates or adopts. It is the one verdict every renderer
	// follows (see Owns and Pinned).
	Owned []string
	// OwnedMAC maps the ID of each owned physical interface to the MAC of
	// the live link it owns (for entries that select by name, the only
	// place the MAC is known).
	OwnedMAC map[string]string
	// OwnedName maps the ID of each owned interface to the name its link
	// has once the plan is applied: the set-name when the rename is
	// planned, else the live name; a stacked link's configured name.
	OwnedName map[string]string
	// OwnedAltNames maps the ID of each owned physical interface to the
	// alternative names its link has once the plan is applied (the live
	// ones, less those the plan gives up, plus an old name a rename
	// keeps): what else networkd, udev and netplan match it by.
	OwnedAltNames map[string][]string
	// Absent lists the IDs of the configured physical interfaces that
	// select no live link (the "not present" notes), in config order,
	// but those whose MAC a link that is not a NIC (a bridge) holds. The
	// plan owns none of them: a stack may only be told to expect
	// them (netcfg.Stack.RenderAhead), and a NIC that appears is owned
	// by the next plan, by the rules of every other one.
	Absent []string

	// receipt is what the next receipt holds if every operation fails:
	// the entries still valid. Apply adds what it adds.
	receipt *Receipt
	// part: planned for a part of the configuration (SyncOptions.Only),
	// which judges nothing outside it.
	part bool
}

// String lists the operations one per line, then the notes prefixed "note: ",
// or says "no changes".
func (p *Plan) String() string {
	var b strings.Builder
	for _, op := range p.Ops {
		b.WriteString(op.String() + "\n")
	}
	if len(p.Ops) == 0 {
		b.WriteString("no changes\n")
	}
	for _, n := range p.Notes {
		b.WriteString("note: " + n + "\n")
	}
	return b.String()
}

// Owns reports whether the plan owns the configured interface: the
// "owned" argument of every netcfg renderer.
func (p *Plan) Owns(i *netcfg.Interface) bool { return slices.Contains(p.Owned, i.ID) }

// Pinned returns a copy of cfg for the renderers: every owned NIC is
// selected by the MAC of the live link it owns (not by a name or glob,
// which another NIC may come to carry) and named as the plan leaves it.
// Rendered with Owns, the files describe exactly the links the live plan
// owns, under the names they have.
func (p *Plan) Pinned(cfg *netcfg.Config) *netcfg.Config {
	out := *cfg
	out.Interfaces = slices.Clone(cfg.Interfaces)
	for i := range out.Interfaces {
		ifc := &out.Interfaces[i]
		mac, ok := p.OwnedMAC[ifc.ID]
		if !ok || isStacked(ifc) {
			continue
		}
		ifc.MAC, ifc.MatchName = mac, ""
		if n := p.OwnedName[ifc.ID]; n != "" {
			ifc.Name = n
		}
	}
	return &out
}

// Receipt returns the receipt that stands if no operation of the plan runs.
func (p *Plan) Receipt() *Receipt { return p.receipt.clone() }

// ErrPartial is wrapped by the error Apply returns when some operations
// failed and the others were applied.
var ErrPartial = errors.New("network applied partially")

// OpError is the failure of one operation.
type OpError struct {
	Op  Op
	Err error
}

func (e *OpError) Error() string { return e.Op.String() + ": " + e.Err.Error() }

// Unwrap returns the underlying error, often a syscall.Errno such as
// ENETUNREACH.
func (e *OpError) Unwrap() error { return e.Err }

// OpResult is one operation and its outcome.
type OpResult struct {
	Op  Op
	Err error // nil when the operation succeeded
}

// Result is what Apply did.
type Result struct {
	Ops []OpResult
	// Receipt records what seedkeeper has added to the owned links after
	// this apply; the caller persists it with Save.
	Receipt *Receipt
}

// Failed reports whether any operation failed.
func (r *Result) Failed() bool {
	for _, o := range r.Ops {
		if o.Err != nil {
			return true
		}
	}
	return false
}

// Err returns nil when every operation succeeded, and otherwise an error
// wrapping ErrPartial and an *OpError for each failed operation.
func (r *Result) Err() error {
	var errs []error
	for _, o := range r.Ops {
		if o.Err != nil {
			errs = append(errs, &OpError{Op: o.Op, Err: o.Err})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d of %d operations failed: %w", ErrPartial, len(errs), len(r.Ops), errors.Join(errs...))
}

// ruleString describes a rule in ip-rule(8)'s words.
func ruleString(r netcfg.Rule) string { return r.String() }

// mainTable is the kernel's main routing table, which a rule without a
// table looks up.
const mainTable = 254

// normRule is a configured rule in the form the plan compares and the
// receipt keeps: the main table for none.
func normRule(r netcfg.Rule) netcfg.Rule {
	if r.Table == 0 {
		r.Table = mainTable
	}
	r.From, r.To = r.From.Masked(), r.To.Masked()
	return r
}

// ruleIs4 reports whether the rule is of IPv4 (a rule of neither end is
// not made by the parsers).
func ruleIs4(r netcfg.Rule) bool {
	if r.From.IsValid() {
		return r.From.Addr().Is4()
	}
	return r.To.Addr().Is4()
}

// sameRule reports whether the live rule l is the configured rule r: the
// same selector and table, and the same priority when r names one (the
// kernel gives a rule made without one a priority of its own).
func sameRule(r, l netcfg.Rule) bool {
	pr := l.Priority
	if r.Priority == 0 {
		pr = 0
	}
	l.Priority = pr
	return r == l
}
