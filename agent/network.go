package agent

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
	// stack and stackDir: what reloadStack asks to read the files.
	stack    netcfg.Stack
	stackDir string
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
	recorded := false
	record := func(s *apply.Synced) {
		if recorded || s == nil || s.Plan == nil {
			return
		}
		recorded = true
		p := s.Plan
		res.Owned = p.Owned
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
		Receipt: e.Root.Path(ReceiptPath),
		Allow:   allow.Allows,
		DryRun:  !live,
		Locked: func(ctx context.Context, s *apply.Synced) error {
			record(s)
			// A plan on the machine itself changes nothing, not even the
			// files networkd would read; under --root the files are only
			// a preview.
			if !live && e.Root.IsReal() {
				return nil
			}
			return e.render(ctx, cfg, s.Whole, res, live)
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

// render writes the networkd files for the owned interfaces and asks a
// running networkd to reload when they changed and the change is live.
func (e *Env) render(ctx context.Context, cfg *netcfg.Config, p *apply.Plan, res *NetResult, live bool) error {
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
	if changed && live && e.Root.IsReal() {
		res.Reloaded = e.reloadStack(ctx, res.stack, res.stackDir)
	}
	return nil
}

// renderNetworkd writes the files of the owned interfaces (and of bonds,
// bridges and VLANs built only from owned ones) for the network stack the
// image runs (netcfg.DetectStack; networkd when none is detected, as
// before), and removes files of ours that are no longer wanted.
func (e *Env) renderNetworkd(cfg *netcfg.Config, ownedIDs []string, res *NetResult) (bool, error) {
	// A bond or bridge whose members are all owned, a VLAN on an owned
	// link: also when the live apply left it to the stack (a parameter
	// only the stack reads, a name taken until the stack starts), so that
	// the members' files never name a link whose file is missing.
	owned := func(i *netcfg.Interface) bool { return ownsInterface(cfg, i, ownedIDs, 0) }
	det, err := netcfg.DetectStack(e.Root.Path("/"))
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
		e.Log.Info("network: " + string(det.Stack) + ": " + sf.Note)
		return false, nil
	}
	res.stackDir = sf.Dir
	// Files are written, listed and removed by plain paths below: under
	// a root, no link or mount may lie on the way to them.
	for _, d := range append([]string{sf.Dir}, slices.Collect(maps.Keys(sf.Extra))...) {
		if d != sf.Dir {
			d = filepath.ToSlash(filepath.Dir(d))
		}
		if err := fsutil.NoLinkOnTheWayIn(string(e.Root), d); err != nil {
			return false, fmt.Errorf("network: %w", err)
		}
	}
	dir := e.Root.Path(sf.Dir)
	// Never list, read or remove through a link planted in its place.
	if err := fsutil.NotLinked(dir); err != nil {
		return false, fmt.Errorf("network: %w", err)
	}
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
		c, err := fsutil.WriteFile(e.Root.Path(p), sf.Extra[p], 0o644)
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
		if b, err := fsutil.ReadFileNoFollow(context.Background(), p, fsutil.SmallFile); err != nil || !bytes.HasPrefix(b, []byte(netcfg.Header)) {
			continue // not written by us
		}
		if err := os.Remove(p); err != nil {
			return changed, fmt.Errorf("network: %w", err)
		}
		res.Removed = append(res.Removed, n)
		changed = true
	}
	if changed {
		e.Log.Info("network: "+string(det.Stack)+" files written", "dir", sf.Dir, "files", len(sf.Files), "removed", len(res.Removed))
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
	if _, err := os.Stat(e.Root.Path("/run/systemd/resolve")); err == nil {
		return skip("systemd-resolved is in use")
	}
	p := e.Root.Path(path)
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return skip("it is a symbolic link (managed elsewhere)")
	case err == nil:
		b, err := fsutil.ReadFileNoFollow(context.Background(), p, fsutil.SmallFile)
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
