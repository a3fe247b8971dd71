package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/unit"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// NetResult is what the network step did, for the log and the status file.
type NetResult struct {
	Action    string   `json:"action"` // applied, planned, skipped, failed
	Reason    string   `json:"reason,omitempty"`
	Allowlist string   `json:"allowlist"`
	Owned     []string `json:"owned,omitempty"`
	Ops       []string `json:"ops,omitempty"`
	Failed    []string `json:"failed,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	Rendered  []string `json:"rendered,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	Reloaded  bool     `json:"networkd_reloaded,omitempty"`
	// Stack is the network stack rendered for, and why.
	Stack string `json:"stack,omitempty"`
	// files are the files rendered, for reloadStack.
	files *netcfg.StackFiles
	// altNames are the plan's alternative names of each owned NIC
	// (apply.Plan.OwnedAltNames), by interface ID.
	altNames map[string][]string
	// Links are the kernel names of the owned links, stacked ones
	// included, for the steps that look at their addresses.
	Links []string `json:"links,omitempty"`
	// Netplan says, when netplan renders at boot, which of its entries
	// also match a NIC seedkeeper owns, and which file of seedkeeper's
	// the stack gives that NIC instead.
	Netplan []string `json:"netplan,omitempty"`
	// ResolvConf says what happened to /etc/resolv.conf.
	ResolvConf string `json:"resolv_conf,omitempty"`
}

// Partial reports whether some operation failed.
func (r *NetResult) Partial() bool { return len(r.Failed) > 0 }

// networkStep brings the owned NICs to cfg through apply.Sync: plan
// against the live links, apply when live is true (otherwise only report
// the plan), remember what was added in the receipt, and render the
// networkd files for the owned links under the root. A nil cfg leaves the
// network alone.
func (e *Env) networkStep(ctx context.Context, cfg *netcfg.Config, allow hotplug.Allowlist, live bool) (*NetResult, error) {
	res := &NetResult{Allowlist: allow.String()}
	if cfg == nil {
		res.Action, res.Reason = "skipped", "the metadata has no network configuration; leaving the network alone"
		e.Log.Info("network: " + res.Reason)
		return res, nil
	}
	// The receipt is written by its plain path: under a root, no link or
	// mount may lie on the way to it.
	if err := fsutil.NoLinkOnTheWayIn(string(e.Root), path.Dir(ReceiptPath)); err != nil {
		res.Action, res.Reason = "failed", "the network receipt: "+err.Error()
		return res, fmt.Errorf("network: %w", err)
	}
	recorded := false
	record := func(s *apply.Synced) {
		if recorded || s == nil || s.Plan == nil {
			return
		}
		recorded = true
		p := s.Plan
		res.Owned = p.Owned
		for _, id := range slices.Sorted(maps.Keys(p.OwnedName)) {
			res.Links = append(res.Links, p.OwnedName[id])
		}
		res.Notes = p.Notes
		for _, n := range p.Notes {
			e.Log.Info("network: " + n)
		}
		if s.Result == nil {
			res.Action, res.Reason = "planned", "not applied: --network plan, or --root without --network apply"
			for _, o := range p.Ops {
				res.Ops = append(res.Ops, o.String())
				e.Log.Info("network: would " + o.String())
			}
			return
		}
		res.Action = "applied"
		for _, o := range s.Result.Ops {
			if o.Err != nil {
				res.Failed = append(res.Failed, fmt.Sprintf("%s: %v", o.Op, o.Err))
				e.Log.Warn("network: "+o.Op.String()+" failed", "err", o.Err)
				continue
			}
			res.Ops = append(res.Ops, o.Op.String())
			e.Log.Info("network: " + o.Op.String())
		}
		if len(p.Ops) == 0 {
			e.Log.Info("network: no changes")
		}
	}
	s, err := apply.Sync(ctx, cfg, apply.SyncOptions{
		Receipt:   e.Root.Path(ReceiptPath),
		Allow:     allow.Allows,
		DryRun:    !live,
		Namespace: netns.NsHandle(e.Netns),
		Locked: func(ctx context.Context, s *apply.Synced) error {
			record(s)
			// A plan on the machine itself changes nothing, not even the
			// files networkd would read; under --root the files are only
			// a preview.
			if !live && e.Root.IsReal() {
				return nil
			}
			return e.render(ctx, cfg, s.Whole, allow, res, live)
		},
	})
	record(s)
	if err != nil && !errors.Is(err, apply.ErrPartial) {
		if s == nil {
			res.Action, res.Reason = "failed", err.Error()
		}
		return res, fmt.Errorf("network: %w", err)
	}
	return res, nil
}

// render writes the files of the interfaces the plan owns, as the plan
// has them (apply.Plan.Pinned: every owned NIC matched by the MAC of its
// link, so that no file can come to configure another NIC), with those
// of the configured NICs that are not present, matched so that only a NIC
// of an allowed driver can take them (netcfg.Stack.RenderAhead), and asks
// a running stack to reload when they changed and the change is live.
func (e *Env) render(ctx context.Context, cfg *netcfg.Config, p *apply.Plan, allow hotplug.Allowlist, res *NetResult, live bool) error {
	pinned := p.Pinned(cfg)
	res.altNames = p.OwnedAltNames
	aw := awaited{absent: func(i *netcfg.Interface) bool { return slices.Contains(p.Absent, i.ID) }, drivers: allow.Drivers()}
	changed, err := e.renderNetworkd(pinned, p.Owns, aw, res)
	if err != nil {
		return err
	}
	if err := e.writeResolvConf(pinned, p.Owned, res); err != nil {
		return err
	}
	if changed && live && e.Root.IsReal() {
		res.Reloaded = e.reloadStack(ctx, res.files)
	}
	return nil
}

// awaited are the configured NICs that are not present, and the drivers
// a NIC that appears may have, for the files written ahead of it.
type awaited struct {
	absent  func(*netcfg.Interface) bool
	drivers []string
}

// renderNetworkd writes the files of the owned interfaces (the live plan's
// verdict, bonds, bridges and VLANs included) for the network stack the
// image runs (netcfg.DetectStack; networkd when none is detected, as
// before), those written ahead of the awaited NICs too, and removes the
// files of ours in the stack's places that are no longer wanted.
func (e *Env) renderNetworkd(cfg *netcfg.Config, owned func(*netcfg.Interface) bool, aw awaited, res *NetResult) (bool, error) {
	root := e.Root.Path("/")
	det, err := netcfg.DetectStack(root)
	if err != nil {
		return false, fmt.Errorf("network: %w", err)
	}
	if det.Stack == nil {
		det.Stack, det.Reason = netcfg.Networkd, det.Reason+"; networkd files written for when it starts"
	}
	for _, n := range det.Notes {
		// A masked unit, a unit without its program: why another
		// stack was not chosen, for the status too.
		e.Log.Info("network: " + n)
		res.Notes = append(res.Notes, n)
	}
	res.Stack = det.Stack.Name + " (" + det.Reason + ")"
	sf, err := det.Stack.Render(det, cfg, owned)
	if err != nil {
		return false, fmt.Errorf("network: rendering %s files: %w", det.Stack, err)
	}
	if sf.Dir != "" {
		if err := e.addAhead(det, cfg, owned, aw, sf, res); err != nil {
			return false, err
		}
	}
	res.files = sf
	res.Netplan = netplanNotes(root, det, cfg, owned, res.altNames)
	for _, n := range res.Netplan {
		e.Log.Info("network: " + n)
	}
	if len(sf.Skipped) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("not rendered for %s: %s", det.Stack, strings.Join(sf.Skipped, ", ")))
	}
	for _, n := range sf.Notes {
		e.Log.Info("network: " + n)
		res.Notes = append(res.Notes, n)
	}
	if sf.Dir == "" {
		res.Notes = append(res.Notes, sf.Note)
		e.Log.Info("network: " + det.Stack.Name + ": " + sf.Note)
		return false, nil
	}
	// Every file to write, by system path.
	want := map[string][]byte{}
	for n, b := range sf.Files {
		want[path.Join(sf.Dir, n)] = b
	}
	maps.Copy(want, sf.Extra)
	places, err := stacks.Of(det.Stack.Name).Places(root)
	if err != nil {
		return false, fmt.Errorf("network: %w", err)
	}
	// Files are written, listed and removed by plain paths below: under
	// a root, no link or mount may lie on the way to them.
	dirs := map[string]bool{}
	for p := range want {
		dirs[path.Dir(p)] = true
	}
	for _, pl := range places {
		dirs[pl.Dir] = true
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := fsutil.NoLinkOnTheWayIn(string(e.Root), d); err != nil {
			return false, fmt.Errorf("network: %w", err)
		}
	}
	// Never list, read or remove through a link planted in its place.
	for _, pl := range places {
		if err := fsutil.NotLinked(e.Root.Path(pl.Dir)); err != nil {
			return false, fmt.Errorf("network: %w", err)
		}
	}
	changed := false
	for _, p := range slices.Sorted(maps.Keys(want)) {
		mode := sf.Mode
		if path.Dir(p) != sf.Dir {
			mode = 0o644
		}
		if e.someoneElses(places, p) {
			n := p + " is not seedkeeper's (no seedkeeper header): left as it is, not rendered"
			e.Log.Warn("network: " + n)
			res.Notes = append(res.Notes, n)
			continue
		}
		c, err := fsutil.WriteFile(e.Root.Path(p), want[p], mode)
		if err != nil {
			return changed, fmt.Errorf("network: %w", err)
		}
		if path.Dir(p) == sf.Dir {
			res.Rendered = append(res.Rendered, path.Base(p))
		} else {
			res.Rendered = append(res.Rendered, p)
		}
		changed = changed || c
	}
	for _, pl := range places {
		found, err := stacks.Walk(string(e.Root), pl)
		if err != nil {
			return changed, fmt.Errorf("network: %w", err)
		}
		for _, f := range found {
			if _, keep := want[f.Path]; keep || !f.Ours {
				continue // wanted, or not written by us
			}
			// Removed only while it holds what the walk read.
			switch err := stacks.Remove(string(e.Root), f); {
			case errors.Is(err, fs.ErrNotExist):
				continue
			case errors.Is(err, stacks.ErrChanged):
				n := f.Path + " changed while stale files were swept: left as it is"
				e.Log.Warn("network: " + n)
				res.Notes = append(res.Notes, n)
				continue
			case err != nil:
				return changed, fmt.Errorf("network: %w", err)
			}
			if pl.Dir == sf.Dir {
				res.Removed = append(res.Removed, f.Name)
			} else {
				res.Removed = append(res.Removed, f.Path)
			}
			changed = true
		}
	}
	if changed {
		e.Log.Info("network: "+det.Stack.Name+" files written", "dir", sf.Dir, "files", len(sf.Files), "removed", len(res.Removed))
	}
	return changed, nil
}

// addAhead adds to sf the files the stack writes ahead of the awaited
// NICs (netcfg.Stack.RenderAhead), where sf has no file of that name.
func (e *Env) addAhead(det netcfg.Detection, cfg *netcfg.Config, owned func(*netcfg.Interface) bool, aw awaited, sf *netcfg.StackFiles, res *NetResult) error {
	ahead, err := det.Stack.RenderAhead(cfg, owned, aw.absent, aw.drivers)
	if err != nil {
		return fmt.Errorf("network: rendering %s files: %w", det.Stack, err)
	}
	for n, b := range ahead.Files {
		if _, dup := sf.Files[n]; !dup {
			sf.Files[n] = b
		}
	}
	if sf.Extra == nil && len(ahead.Extra) > 0 {
		sf.Extra = map[string][]byte{}
	}
	for p, b := range ahead.Extra {
		if _, dup := sf.Extra[p]; !dup {
			sf.Extra[p] = b
		}
	}
	for _, n := range ahead.Notes {
		e.Log.Info("network: " + n)
		res.Notes = append(res.Notes, n)
	}
	return nil
}

// writeResolvConf writes /etc/resolv.conf from the DNS of the metadata when
// nothing else manages it: not when systemd-resolved is in use (the
// networkd files carry per-link DNS for it, and /etc/resolv.conf is then
// usually a symlink to its stub), never through a symlink, and never over
// a file someone else wrote. Only a missing file or one seedkeeper wrote
// is (re)written, and only when seedkeeper owns a NIC.
func (e *Env) writeResolvConf(cfg *netcfg.Config, owned []string, res *NetResult) error {
	var dns netcfg.DNS
	dns.Nameservers = append(dns.Nameservers, cfg.DNS.Nameservers...)
	dns.Search = append(dns.Search, cfg.DNS.Search...)
	for i := range cfg.Interfaces {
		if ifc := &cfg.Interfaces[i]; slices.Contains(owned, ifc.ID) {
			dns.Nameservers = append(dns.Nameservers, ifc.DNS.Nameservers...)
			dns.Search = append(dns.Search, ifc.DNS.Search...)
		}
	}
	const path = "/etc/resolv.conf"
	skip := func(why string) error {
		res.ResolvConf = "left alone: " + why
		e.Log.Info("network: " + path + " " + res.ResolvConf)
		return nil
	}
	switch {
	case len(owned) == 0:
		return skip("seedkeeper owns no NIC here")
	case len(dns.Nameservers) == 0:
		return skip("the metadata names no resolvers")
	}
	if _, err := fsutil.StatIn(string(e.Root), "/run/systemd/resolve", true); err == nil {
		return skip("systemd-resolved is in use")
	}
	p := e.Root.Path(path)
	fi, err := fsutil.StatIn(string(e.Root), path, false)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return skip("it is a symbolic link (managed elsewhere)")
	case err == nil:
		b, err := fsutil.ReadFileInNoFollow(context.Background(), string(e.Root), path, fsutil.SmallFile)
		if err != nil {
			return fmt.Errorf("network: %w", err)
		}
		if !bytes.HasPrefix(b, []byte(netcfg.Header)) {
			return skip("it was not written by seedkeeper")
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("network: %w", err)
	}
	changed, err := fsutil.WriteFile(p, netcfg.RenderResolvConf(dns), 0o644)
	if errors.Is(err, syscall.EROFS) {
		return skip("/etc is read-only here")
	}
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	res.ResolvConf = "unchanged"
	if changed {
		res.ResolvConf = "written"
		e.Log.Info("network: " + path + " written")
	}
	return nil
}

// ReadNetworkConfig reads and parses a network configuration file (cloud-init
// v1 or v2, YAML or JSON); a configuration
// that says {config: disabled} is nil, "leave the network alone".
func ReadNetworkConfig(path string) (*netcfg.Config, error) {
	// Bounded like a seed file; a FIFO or a device is refused.
	data, err := fsutil.ReadFile(context.Background(), path, 16<<20)
	if err != nil {
		return nil, fmt.Errorf("reading network configuration: %w", err)
	}
	cfg, err := netcfg.Parse(data)
	if errors.Is(err, netcfg.ErrDisabled) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading network configuration %s: %w", path, err)
	}
	return cfg, nil
}

// someoneElses reports whether sys, a file boot is about to write, is a
// regular file already there that is not seedkeeper's by the rule of its
// place (a person's file of seedkeeper's name, or one without its
// header): boot does not replace it, as it does not remove it.
func (e *Env) someoneElses(places []stacks.Place, sys string) bool {
	if fi, err := fsutil.StatIn(string(e.Root), sys, false); err != nil || !fi.Mode().IsRegular() {
		return false // missing, or WriteFile's to refuse
	}
	for _, pl := range places {
		if pl.Dir != path.Dir(sys) {
			continue
		}
		b, err := fsutil.ReadFileInNoFollow(context.Background(), string(e.Root), sys, fsutil.SmallFile)
		return err != nil || !pl.Ours(path.Base(sys), b)
	}
	return false
}

// netplanNotes says, for an image where netplan renders at boot, which of
// its entries match an owned NIC (cfg is the plan's: every owned NIC by
// the MAC and the name of its link; alt its link's alternative names by
// ID, which netplan's name globs match too: "en*" takes eth0 through
// enp0s3) and what the stack does about it: seedkeeper's file or profile
// comes first, so the entry takes only the NICs seedkeeper does not own
// (stacks.NetplanInfo).
func netplanNotes(root string, det netcfg.Detection, cfg *netcfg.Config, owned func(*netcfg.Interface) bool, alt map[string][]string) []string {
	np := stacks.DetectNetplan(unit.Root{Dir: root, Live: true})
	if np == nil {
		return nil
	}
	notes := slices.Clone(np.Notes)
	for i := range cfg.Interfaces {
		ifc := &cfg.Interfaces[i]
		if ifc.Kind != netcfg.Physical && ifc.Kind != "" || owned != nil && !owned(ifc) {
			continue
		}
		for _, ent := range np.Entries {
			if !ent.Matches(ifc.MAC, append([]string{ifc.LinkName()}, alt[ifc.ID]...)...) {
				continue
			}
			nic := ifc.LinkName()
			if !ent.Matches(ifc.MAC, nic) {
				// Only an alternative name matches: say which.
				for _, a := range alt[ifc.ID] {
					if ent.Matches(ifc.MAC, a) {
						nic += " (by its alternative name " + a + ")"
						break
					}
				}
			}
			wins := "netplan renders for " + ent.Renderer + ", and seedkeeper renders for " + det.Stack.String()
			if over := stacks.Of(det.Stack.Name).Netplan; over != nil {
				why, fix, ok := over(ent.Renderer)
				if wins = why; !ok {
					wins += "; " + fix
				}
			}
			notes = append(notes, fmt.Sprintf("%s entry %s (%s) also matches %s, which seedkeeper owns: %s", ent.File, ent.ID, ent.Describe(), nic, wins))
		}
	}
	return notes
}
