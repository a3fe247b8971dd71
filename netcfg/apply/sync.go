package apply

import (
	"context"
	"fmt"
	"slices"

	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// SyncOptions says how Sync brings the links to a configuration.
type SyncOptions struct {
	// Receipt is the path of the receipt of what seedkeeper added. It is
	// locked for the whole sync (unless DryRun with no Locked step),
	// read before the plan, and saved after the apply.
	Receipt string
	// Allow is the driver allowlist.
	Allow Allowlist
	// Only, when not nil, limits the changes to the interfaces with these
	// MACs (see Only) and to the bonds, VLANs and bridges built on them;
	// Synced.Whole still plans the whole configuration, for what is owned.
	Only []string
	// DryRun plans and changes nothing (no apply, no receipt saved).
	DryRun bool
	// Expect, when set, is the Digest of the plan that was read (a dry
	// run's): when the plan made here, under the receipt's lock, is
	// another, Sync changes nothing and returns it with an error
	// wrapping ErrPlanChanged.
	Expect string
	// Namespace is the network namespace to work in; 0 or less is the
	// calling thread's own.
	Namespace netns.NsHandle
	// Locked, when set, runs after the apply and the receipt save, with the
	// receipt still locked: the place for work that must agree with the
	// plan (rendering persistent files for the owned links).
	Locked func(ctx context.Context, s *Synced) error
}

// Synced is what Sync planned and did.
type Synced struct {
	// Plan is what was applied (or, with DryRun, would be).
	Plan *Plan
	// Whole is the plan of the whole configuration: Plan itself unless
	// SyncOptions.Only is set. Its Owned and OwnedMAC say what is owned.
	Whole *Plan
	// Result is what the apply did; nil with DryRun.
	Result *Result
}

// Sync is the one apply sequence every caller shares (boot, the hotplug
// daemon, "seedkeeper net"): open the namespace, lock the receipt, load
// it, read the live links once, plan, apply, save the receipt, run the
// Locked step. An unreadable receipt fails the sync rather than forgetting
// what to clean up. When some operations fail the others still run; the
// error then wraps ErrPartial and the Synced is complete. On other errors
// the Synced holds what was done before the error (possibly nil).
func Sync(ctx context.Context, cfg *netcfg.Config, o SyncOptions) (*Synced, error) {
	var h *Handle
	var err error
	if o.Namespace > 0 {
		h, err = OpenAt(o.Namespace)
	} else {
		h, err = Open()
	}
	if err != nil {
		return nil, err
	}
	defer h.Close()
	if !o.DryRun || o.Locked != nil {
		unlock, err := LockReceipt(o.Receipt)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	rc, err := LoadReceipt(o.Receipt)
	if err != nil {
		return nil, fmt.Errorf("%w (it records what seedkeeper added; move it aside to start afresh, and seedkeeper forgets what to clean up)", err)
	}
	s := &Synced{}
	if cfg == nil {
		s.Plan = Diff(nil, nil, o.Allow, rc)
	} else {
		live, err := h.read(ctx, cfg, o.Allow)
		if err != nil {
			return nil, fmt.Errorf("reading live network: %w", err)
		}
		if o.Only != nil {
			s.Whole = Diff(cfg, live, o.Allow, rc)
			if above := stackedAbove(cfg, s.Whole, o.Only); len(above) > 0 {
				s.Plan = s.Whole.only(o.Only, above, rc)
			} else {
				s.Plan = diff(Only(cfg, o.Only), live, o.Allow, rc, true)
			}
		} else {
			s.Plan = Diff(cfg, live, o.Allow, rc)
		}
	}
	if s.Whole == nil {
		s.Whole = s.Plan
	}
	var applyErr error
	if !o.DryRun {
		if err := checkExpected(s.Plan, o.Expect); err != nil {
			return s, err
		}
		s.Result, applyErr = h.Apply(ctx, s.Plan)
		if _, err := s.Result.Receipt.Save(o.Receipt); err != nil {
			return s, fmt.Errorf("saving the receipt: %w", err)
		}
	}
	if o.Locked != nil {
		if err := o.Locked(ctx, s); err != nil {
			return s, err
		}
	}
	return s, applyErr
}

// stackedAbove returns the names of the owned stacked links of the whole
// plan that are built, directly or not, on a NIC with one of macs: a bond
// a hot-added NIC completes, the VLANs on it, a bridge over those.
func stackedAbove(cfg *netcfg.Config, whole *Plan, macs []string) map[string]bool {
	set := map[string]bool{}
	for _, m := range macs {
		set[normMAC(m)] = true
	}
	owned := map[string]bool{}
	for _, id := range whole.Owned {
		owned[id] = true
	}
	var on func(ifc *netcfg.Interface, depth int) bool
	on = func(ifc *netcfg.Interface, depth int) bool {
		switch {
		case depth > len(cfg.Interfaces):
			return false
		case !isStacked(ifc):
			return set[whole.OwnedMAC[ifc.ID]]
		case ifc.Kind == netcfg.VLAN:
			l := cfg.Lookup(ifc.VLANLink)
			return l != nil && on(l, depth+1)
		}
		return slices.ContainsFunc(cfg.Members(ifc), func(m *netcfg.Interface) bool { return on(m, depth+1) })
	}
	above := map[string]bool{}
	for i := range cfg.Interfaces {
		if ifc := &cfg.Interfaces[i]; isStacked(ifc) && owned[ifc.ID] && on(ifc, 0) {
			above[ifc.LinkName()] = true
		}
	}
	return above
}

// only is the part of the plan that touches the NICs with the given MACs
// and the stacked links above them (enslaving other members into those
// too: a bond a hot-added NIC completes gets all its members). The
// receipt entries of every other link are those of rc.
func (p *Plan) only(macs []string, above map[string]bool, rc *Receipt) *Plan {
	set := map[string]bool{}
	for _, m := range macs {
		set[normMAC(m)] = true
	}
	out := &Plan{Notes: p.Notes, Owned: p.Owned, OwnedMAC: p.OwnedMAC, OwnedName: p.OwnedName, OwnedAltNames: p.OwnedAltNames, Absent: p.Absent, receipt: p.receipt.clone()}
	// An alternative name another link gives up for a rename of the
	// part goes with it.
	freed := map[string]bool{}
	for _, op := range p.Ops {
		if op.Kind == Rename && set[op.MAC] {
			freed[op.NewName] = true
		}
	}
	for _, op := range p.Ops {
		if op.Kind == DelAltName {
			if freed[op.NewName] {
				out.Ops = append(out.Ops, op)
			}
			continue
		}
		if op.LinkKind == "" && set[op.MAC] || op.LinkKind != "" && above[op.Name] || op.Kind == SetMaster && above[op.Master] {
			out.Ops = append(out.Ops, op)
		}
	}
	prior := rc.clone()
	restore(out.receipt.Links, prior.Links, set)
	restore(out.receipt.Stacked, prior.Stacked, above)
	return out
}

// restore makes the entries of next whose key is not in touched those of
// prior: the links a partial plan does not touch keep what they had.
func restore(next, prior map[string]Added, touched map[string]bool) {
	for k := range next {
		if !touched[k] {
			delete(next, k)
		}
	}
	for k, a := range prior {
		if !touched[k] {
			next[k] = a
		}
	}
}

// Only returns a copy of cfg that keeps, of its interfaces, those whose
// MAC is one of macs, and all of its global routes and DNS. Applied, it
// touches only those NICs: links the copy does not mention are not owned,
// and their receipt entries are kept as they are.
func Only(cfg *netcfg.Config, macs []string) *netcfg.Config {
	if cfg == nil {
		return nil
	}
	want := make(map[string]bool, len(macs))
	for _, m := range macs {
		want[normMAC(m)] = true
	}
	out := &netcfg.Config{Routes: cfg.Routes, DNS: cfg.DNS}
	for _, i := range cfg.Interfaces {
		if m := normMAC(i.MAC); m != "" && want[m] {
			out.Interfaces = append(out.Interfaces, i)
		}
	}
	return out
}
