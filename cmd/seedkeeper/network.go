package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// netResult is what the network step did, for the log and the status file.
type netResult struct {
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
	// stack and stackDir: what reloadStack asks to read the files.
	stack    netcfg.Stack
	stackDir string
	// ResolvConf says what happened to /etc/resolv.conf.
	ResolvConf string `json:"resolv_conf,omitempty"`
}

// Partial reports whether some operation failed.
func (r *netResult) Partial() bool { return len(r.Failed) > 0 }

// networkStep brings the owned NICs to cfg: plan against the live links,
// apply when live is true (otherwise only report the plan), remember what
// was added in the receipt, and render the networkd files for the owned
// links under the root. A nil cfg leaves the network alone.
func (e *runEnv) networkStep(ctx context.Context, cfg *netcfg.Config, allow hotplug.Allowlist, live bool) (*netResult, error) {
	res := &netResult{Allowlist: allow.String()}
	if cfg == nil {
		res.Action, res.Reason = "skipped", "the metadata has no network configuration; leaving the network alone"
		e.log.Info("network: " + res.Reason)
		return res, nil
	}
	h, err := apply.Open()
	if err != nil {
		res.Action, res.Reason = "failed", err.Error()
		return res, fmt.Errorf("network: %w", err)
	}
	defer h.Close()
	rpath := e.root.Path(receiptPath)
	unlock, err := apply.LockReceipt(rpath)
	if err != nil {
		res.Action, res.Reason = "failed", err.Error()
		return res, fmt.Errorf("network: %w", err)
	}
	defer unlock()
	rc, err := apply.LoadReceipt(rpath)
	if err != nil {
		// Without the receipt we would not know what is ours to remove.
		res.Action, res.Reason = "failed", err.Error()
		return res, fmt.Errorf("network: %w", err)
	}
	p, err := h.Plan(ctx, cfg, allow.Allows, rc)
	if err != nil {
		res.Action, res.Reason = "failed", err.Error()
		return res, fmt.Errorf("network: planning: %w", err)
	}
	res.Owned = p.Owned
	res.Notes = p.Notes
	for _, n := range p.Notes {
		e.log.Info("network: " + n)
	}
	if !live {
		res.Action, res.Reason = "planned", "not applied: --network plan, or --root without --network apply"
		for _, o := range p.Ops {
			res.Ops = append(res.Ops, o.String())
			e.log.Info("network: would " + o.String())
		}
	} else {
		r, aerr := h.Apply(ctx, p)
		res.Action = "applied"
		for _, o := range r.Ops {
			if o.Err != nil {
				res.Failed = append(res.Failed, fmt.Sprintf("%s: %v", o.Op, o.Err))
				e.log.Warn("network: "+o.Op.String()+" failed", "err", o.Err)
				continue
			}
			res.Ops = append(res.Ops, o.Op.String())
			e.log.Info("network: " + o.Op.String())
		}
		if _, err := r.Receipt.Save(rpath); err != nil {
			return res, fmt.Errorf("network: saving the receipt: %w", err)
		}
		if aerr != nil && !errors.Is(aerr, apply.ErrPartial) {
			return res, fmt.Errorf("network: %w", aerr)
		}
		if len(p.Ops) == 0 {
			e.log.Info("network: no changes")
		}
	}
	// A plan on the machine itself changes nothing, not even the files
	// networkd would read; under --root the files are only a preview.
	if !live && e.root.IsReal() {
		return res, nil
	}
	if err := e.render(ctx, cfg, p, res, live); err != nil {
		return res, err
	}
	return res, nil
}

// logPlan logs what applying cfg would do, changing nothing.
func (e *runEnv) logPlan(ctx context.Context, cfg *netcfg.Config, allow hotplug.Allowlist) error {
	p, err := e.planCurrent(ctx, cfg, allow)
	if err != nil {
		return err
	}
	for _, n := range p.Notes {
		e.log.Info("network: " + n)
	}
	for _, o := range p.Ops {
		e.log.Info("network: would " + o.String())
	}
	return nil
}

// render writes the networkd files for the owned interfaces and asks a
// running networkd to reload when they changed and the change is live.
func (e *runEnv) render(ctx context.Context, cfg *netcfg.Config, p *apply.Plan, res *netResult, live bool) error {
	// Match every owned NIC by the MAC of the link it owns, also when the
	// configuration selected it by name or glob: the files must never
	// configure another NIC that comes to carry that name.
	pinned := *cfg
	pinned.Interfaces = slices.Clone(cfg.Interfaces)
	for i := range pinned.Interfaces {
		ifc := &pinned.Interfaces[i]
		if mac := p.OwnedMAC[ifc.ID]; mac != "" && ifc.MAC == "" {
			ifc.MAC, ifc.MatchName = mac, ""
		}
	}
	changed, err := e.renderNetworkd(&pinned, p.Owned, res)
	if err != nil {
		return err
	}
	if err := e.writeResolvConf(&pinned, p.Owned, res); err != nil {
		return err
	}
	if changed && live && e.root.IsReal() {
		res.Reloaded = reloadStack(ctx, e.log, res.stack, res.stackDir)
	}
	return nil
}

// renderCurrent renders the networkd files for cfg as ownership stands now
// (planning against the live links without applying anything).
func (e *runEnv) renderCurrent(ctx context.Context, cfg *netcfg.Config, allow hotplug.Allowlist) error {
	unlock, err := apply.LockReceipt(e.root.Path(receiptPath))
	if err != nil {
		return err
	}
	defer unlock()
	p, err := e.planCurrent(ctx, cfg, allow)
	if err != nil {
		return err
	}
	return e.render(ctx, cfg, p, &netResult{}, true)
}

// planCurrent plans cfg against the live links and the receipt, changing
// nothing.
func (e *runEnv) planCurrent(ctx context.Context, cfg *netcfg.Config, allow hotplug.Allowlist) (*apply.Plan, error) {
	h, err := apply.Open()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	rc, err := apply.LoadReceipt(e.root.Path(receiptPath))
	if err != nil {
		return nil, err
	}
	return h.Plan(ctx, cfg, allow.Allows, rc)
}

// renderNetworkd writes the files of the owned interfaces (and of bonds,
// bridges and VLANs built only from owned ones) for the network stack the
// image runs (netcfg.DetectStack; networkd when none is detected, as
// before), and removes files of ours that are no longer wanted.
func (e *runEnv) renderNetworkd(cfg *netcfg.Config, ownedIDs []string, res *netResult) (bool, error) {
	owned := func(i *netcfg.Interface) bool { return ownsInterface(cfg, i, ownedIDs, 0) }
	det, err := netcfg.DetectStack(e.root.Path("/"))
	if err != nil {
		return false, fmt.Errorf("network: %w", err)
	}
	if det.Stack == netcfg.StackNone {
		det = netcfg.Detection{Stack: netcfg.StackNetworkd, Reason: det.Reason + "; networkd files written for when it starts"}
	}
	res.Stack = string(det.Stack) + " (" + det.Reason + ")"
	res.stack = det.Stack
	sf, err := netcfg.RenderForStack(det, cfg, owned)
	if err != nil {
		return false, fmt.Errorf("network: rendering %s files: %w", det.Stack, err)
	}
	if len(sf.Skipped) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("not rendered for %s: %s", det.Stack, strings.Join(sf.Skipped, ", ")))
	}
	if sf.Dir == "" {
		res.Notes = append(res.Notes, sf.Note)
		e.log.Info("network: " + string(det.Stack) + ": " + sf.Note)
		return false, nil
	}
	res.stackDir = sf.Dir
	dir := e.root.Path(sf.Dir)
	changed := false
	for _, name := range slices.Sorted(maps.Keys(sf.Files)) {
		c, err := fsutil.WriteFile(filepath.Join(dir, name), sf.Files[name], sf.Mode)
		if err != nil {
			return changed, fmt.Errorf("network: %w", err)
		}
		res.Rendered = append(res.Rendered, name)
		changed = changed || c
	}
	for _, p := range slices.Sorted(maps.Keys(sf.Extra)) {
		c, err := fsutil.WriteFile(e.root.Path(p), sf.Extra[p], 0o644)
		if err != nil {
			return changed, fmt.Errorf("network: %w", err)
		}
		res.Rendered = append(res.Rendered, p)
		changed = changed || c
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return changed, fmt.Errorf("network: %w", err)
	}
	for _, ent := range ents {
		n := ent.Name()
		if _, keep := sf.Files[n]; keep || !sf.Ours(n) {
			continue
		}
		p := filepath.Join(dir, n)
		if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte(netcfg.Header)) {
			continue // not written by us
		}
		if err := os.Remove(p); err != nil {
			return changed, fmt.Errorf("network: %w", err)
		}
		res.Removed = append(res.Removed, n)
		changed = true
	}
	if changed {
		e.log.Info("network: "+string(det.Stack)+" files written", "dir", sf.Dir, "files", len(sf.Files), "removed", len(res.Removed))
	}
	return changed, nil
}

// ownsInterface: a physical interface is ours when it owns a live link; a
// bond or bridge when all its members are ours; a VLAN when its link is.
func ownsInterface(cfg *netcfg.Config, i *netcfg.Interface, ownedIDs []string, depth int) bool {
	if depth > 8 {
		return false
	}
	switch i.Kind {
	case netcfg.Physical, "":
		return slices.Contains(ownedIDs, i.ID)
	case netcfg.VLAN:
		l := cfg.Lookup(i.VLANLink)
		return l != nil && ownsInterface(cfg, l, ownedIDs, depth+1)
	default:
		m := cfg.Members(i)
		if len(m) == 0 {
			return false
		}
		for _, x := range m {
			if !ownsInterface(cfg, x, ownedIDs, depth+1) {
				return false
			}
		}
		return true
	}
}

// writeResolvConf writes /etc/resolv.conf from the DNS of the metadata when
// nothing else manages it: not when systemd-resolved is in use (the
// networkd files carry per-link DNS for it, and /etc/resolv.conf is then
// usually a symlink to its stub), never through a symlink, and never over
// a file someone else wrote. Only a missing file or one seedkeeper wrote
// is (re)written, and only when seedkeeper owns a NIC.
func (e *runEnv) writeResolvConf(cfg *netcfg.Config, owned []string, res *netResult) error {
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
		e.log.Info("network: " + path + " " + res.ResolvConf)
		return nil
	}
	switch {
	case len(owned) == 0:
		return skip("seedkeeper owns no NIC here")
	case len(dns.Nameservers) == 0:
		return skip("the metadata names no resolvers")
	}
	if _, err := os.Stat(e.root.Path("/run/systemd/resolve")); err == nil {
		return skip("systemd-resolved is in use")
	}
	p := e.root.Path(path)
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return skip("it is a symbolic link (managed elsewhere)")
	case err == nil:
		b, err := os.ReadFile(p)
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
		e.log.Info("network: " + path + " written")
	}
	return nil
}
