package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/intent"
	"github.com/seedkeeper/seedkeeper/internal/linkaddr"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
	"github.com/seedkeeper/seedkeeper/nosource"
	"github.com/seedkeeper/seedkeeper/seed"
)

// NetworkMode says what a flow does with the network.
type NetworkMode string

// The network modes.
const (
	// NetworkAuto applies on the machine itself, and only plans when
	// Env.Root is set (links are not paths).
	NetworkAuto  NetworkMode = "auto"
	NetworkApply NetworkMode = "apply"
	NetworkPlan  NetworkMode = "plan"
	NetworkOff   NetworkMode = "off" // Boot only
)

// live reports whether the mode changes the links under root.
func (m NetworkMode) live(e *Env) bool {
	return m == NetworkApply || (m == NetworkAuto && e.Root.IsReal())
}

// BootOptions are the choices of one boot.
type BootOptions struct {
	Network NetworkMode // "" is NetworkAuto
}

// Boot runs the boot flow once: detect → read → decide the instance ID →
// write the seed → network → status file, logging one line per decision
// and telling the service manager READY at the end. The returned Status is
// what was saved to StatusPath.
//
// The error is nil when all went well; it wraps datasource.ErrNoSource
// when there is no metadata source here (a normal outcome), and
// apply.ErrPartial when the network was applied only in part. Anything
// else is a failure, also recorded in the Status.
func Boot(ctx context.Context, e Env, o BootOptions) (*Status, error) {
	e.init()
	if o.Network == "" {
		o.Network = NetworkAuto
	}
	st := &Status{Version: 1, Time: time.Now().UTC(), BootID: CurrentBootID(e.Root), Seedkeeper: e.Version, Config: e.Config.Path}
	if st.Config == "" {
		st.Config = "defaults"
	}
	if e.ConfigErr != nil {
		st.ConfigError = e.ConfigErr.Error()
	}
	err := e.boot(ctx, st, o.Network)
	if serr := SaveStatus(e.Root, st); serr != nil {
		e.Log.Error("saving the status", "err", serr)
		if err == nil {
			err = serr
		}
	}
	e.Notify("READY=1")
	return st, err
}

// boot is the boot flow's steps. The source's duties (internal/sourceduty)
// run between them: after the read, after the seed, after the network,
// and at the end, with the outcome.
func (e *Env) boot(ctx context.Context, st *Status, netMode NetworkMode) error {
	live := netMode.live(e)
	md, err := e.readMetadata(ctx, st)
	if md == nil {
		return err
	}
	duty := sourceduty.For(md, e.dutyHost(md, live))
	if duty.AfterRead != nil {
		duty.AfterRead(ctx, &st.Extra)
	}
	if duty.End != nil {
		defer func() { duty.End(ctx, st.Outcome, &st.Extra) }()
	}
	e.Log.Info("metadata read", "source", md.Source, "transport", md.Origin.Transport,
		"instance_id", md.InstanceID, "keys", len(md.Origin.Items))

	d, err := e.decideIdentity(st, md)
	if err != nil {
		return e.bootFailed(st, err)
	}
	cloudID, _ := identity.CloudInitID(e.Root)
	newInstance := cloudID != d.InstanceID

	if err := e.writeSeed(st, md, d.InstanceID); err != nil {
		return e.bootFailed(st, err)
	}
	if duty.AfterSeed != nil {
		duty.AfterSeed(ctx, &st.Extra)
	}

	e.applyChanges(ctx, st, md, d, newInstance, duty.Redacted)

	if err := e.bootNetwork(ctx, st, md, netMode, newInstance); err != nil {
		return e.bootFailed(st, err)
	}
	if duty.AfterNetwork != nil {
		var net *sourceduty.Net
		if r := st.Network; r != nil {
			net = &sourceduty.Net{Action: r.Action, Reason: r.Reason, Links: r.Links, Owned: r.Owned}
		}
		duty.AfterNetwork(ctx, net, &st.Extra)
	}

	if res := st.Network; res != nil && res.Partial() {
		st.Outcome = "partial"
		e.notifyStatus("instance %s; network applied in part (%d failed)", d.InstanceID, len(res.Failed))
		return fmt.Errorf("instance %s: %w (%d operations failed)", d.InstanceID, apply.ErrPartial, len(res.Failed))
	}
	st.Outcome = "ok"
	e.notifyStatus("instance %s from %s", d.InstanceID, md.Source)
	return nil
}

// bootFailed records err as the boot's failure.
func (e *Env) bootFailed(st *Status, err error) error {
	st.Outcome, st.Error = "error", err.Error()
	e.Log.Error("boot failed", "err", err)
	e.notifyStatus("failed: %v", err)
	return err
}

// readMetadata detects and reads the metadata, waiting for late seed
// devices when no source is found at first. With no source, it holds
// cloud-init back and returns the error with a nil Metadata; with a
// source, it lets cloud-init go. A nil Metadata comes with the error,
// already recorded in st.
func (e *Env) readMetadata(ctx context.Context, st *Status) (*datasource.Metadata, error) {
	e.notifyStatus("looking for a metadata source")
	fctx, cancel := e.fetchContext(ctx)
	defer cancel()
	opts := e.SourceOptions()
	fetchStart := time.Now()
	md, cands, err := datasource.Fetch(fctx, opts)
	st.Candidates = cands
	if errors.Is(err, datasource.ErrNoSource) {
		// A seed device may still be coming (a CD-ROM driver loaded
		// from the real root): wait for udev, bounded, and look again.
		e.notifyStatus("no metadata source yet; waiting for late seed devices")
		w := nosource.WaitForDevices(fctx, nosource.WaitOptions{Root: e.Root, Limit: time.Duration(e.Config.Boot.DeviceWait)})
		st.DeviceWait = w.String()
		e.Log.Info("no metadata source at first; late seed devices: "+w.Outcome,
			"waited_for", w.For, "waited", w.Took.Round(time.Millisecond).String())
		if w.Took > 0 {
			md, cands, err = datasource.Fetch(fctx, opts)
			st.Candidates = cands
		}
	}
	st.MetadataSeconds = time.Since(fetchStart).Seconds()
	if errors.Is(err, datasource.ErrNoSource) {
		st.Outcome = "no-source"
		e.Log.Info("no metadata source on this machine; nothing to do")
		e.notifyStatus("no metadata source on this machine")
		h, herr := nosource.HoldCloudInit(e.Root, time.Now())
		st.CloudInit = &h
		if herr != nil {
			e.Log.Error("cloud-init", "err", herr)
		}
		e.Log.Info("cloud-init: " + h.Reason)
		return nil, err
	}
	if err := nosource.Release(e.Root); err != nil {
		e.Log.Error("cloud-init", "err", err)
	}
	if err != nil {
		return nil, e.bootFailed(st, err)
	}
	st.Source, st.Transport, st.Dropped = md.Source, md.Origin.Transport, md.Warnings
	return md, nil
}

// dutyHost is what the source's duties get of this boot (live: it changes
// this machine).
func (e *Env) dutyHost(md *datasource.Metadata, live bool) *sourceduty.Host {
	return &sourceduty.Host{
		Root: e.Root, Log: e.Log, Live: live, Unit: "seedkeeper-boot", Netns: e.Netns, Waiting: e.notifyWaiting,
		Allowlist: func() (func(string) bool, string) {
			a := e.Allowlist(md)
			return a.Allows, a.String()
		},
		Links:              linkaddr.Links{Netns: e.Netns},
		NetworkByCloudInit: e.Config.Network.Owner == "cloud-init",
		NetworkEvents:      e.Config.Events.Network,
		NetworkWait:        time.Duration(e.Config.VMware.NetworkWait),
		Redact:             e.Config.VMware.Redact,
	}
}

// decideIdentity decides the instance ID. A decision comes back even with
// an error (a corrupt state file, a stored ID cloud-init could not use):
// it is the safe one, so go on with it. The error is for a decision that
// could not be made.
func (e *Env) decideIdentity(st *Status, md *datasource.Metadata) (identity.Decision, error) {
	d, err := identity.Decide(identity.FromMetadata(string(e.Root), md))
	if d.InstanceID == "" {
		return d, fmt.Errorf("deciding the instance ID: %w", err)
	}
	if err != nil {
		e.Log.Error("identity: stored state not usable; going on with the safe ID", "err", err)
	}
	st.Identity = &d
	e.Log.Info("instance ID decided", "instance_id", d.InstanceID, "reported", d.ReportedID,
		"rule", d.RuleName, "changed", d.Changed)
	return d, nil
}

// writeSeed writes the seed for cloud-init.
func (e *Env) writeSeed(st *Status, md *datasource.Metadata, instanceID string) error {
	s := seed.FromMetadata(md, instanceID)
	if e.Config.Network.Owner == "cloud-init" && md.Network != nil {
		// The source says whether its document is cloud-init's own.
		if src, _ := datasource.Lookup(md.Source); src.RawNetwork && md.NetworkConfigRaw != nil {
			s.NetworkConfig = md.NetworkConfigRaw
		} else {
			var err error
			if s.NetworkConfig, err = md.Network.MarshalV1(); err != nil {
				return fmt.Errorf("writing the network-config for cloud-init: %w", err)
			}
		}
	}
	sr, err := seed.Write(string(e.Root), s)
	if err != nil {
		return err
	}
	st.Seed = &SeedStatus{Dir: seed.Dir, Written: sr.Written, Removed: sr.Removed, Imported: sr.Imported, Warnings: sr.Warnings}
	for _, w := range sr.Warnings {
		e.Log.Warn("seed: " + w)
	}
	if sr.Imported != "" {
		e.Log.Info("seed: imported the seed found in "+seed.Dir, "into", sr.Imported)
	}
	if sr.Changed() {
		e.Log.Info("seed written", "dir", seed.Dir, "written", len(sr.Written), "removed", len(sr.Removed))
	} else {
		e.Log.Info("seed unchanged", "dir", seed.Dir)
	}
	return nil
}

// applyChanges applies what the admin changed on purpose since the last
// boot of a kept instance (docs/changes.md). Not fatal: what failed is in
// the status and is tried again at the next boot.
func (e *Env) applyChanges(ctx context.Context, st *Status, md *datasource.Metadata, d identity.Decision, newInstance, redacted bool) {
	ch, err := intent.Apply(ctx, intent.Options{Root: e.Root, Metadata: md, InstanceID: d.InstanceID, NewInstance: newInstance,
		Redacted:           redacted,
		Placeholder:        d.Rule == identity.RulePlaceholder,
		NetworkByCloudInit: e.Config.Network.Owner == "cloud-init", Run: e.RunCommand, Log: e.Log})
	st.Changes = ch
	if err != nil {
		e.Log.Error("changes since the last boot", "err", err)
	}
	if ch.Baseline != "" {
		e.Log.Info("changes since the last boot: " + ch.Baseline)
	} else {
		e.Log.Info("changes since the last boot", "changed", len(ch.Changed), "applied", len(ch.Applied), "waiting", len(ch.Waiting), "failed", len(ch.Failed))
	}
}

// bootNetwork is the network of the BOOT event, in st.Network; the error
// is a failure of the boot.
func (e *Env) bootNetwork(ctx context.Context, st *Status, md *datasource.Metadata, netMode NetworkMode, newInstance bool) error {
	allow := e.Allowlist(md)
	switch {
	case netMode == NetworkOff:
		st.Network = &NetResult{Action: "skipped", Reason: "--network off", Allowlist: allow.String()}
	case e.Config.Network.Owner == "cloud-init":
		st.Network = &NetResult{Action: "skipped", Reason: "network.owner is cloud-init; its network-config is in the seed", Allowlist: allow.String()}
	case allow.Reason() != "":
		// A typo closes the gate: change nothing, not even the files
		// rendered on an earlier run.
		st.Network = &NetResult{Action: "skipped", Reason: "the driver allowlist is unusable (" + allow.Reason() + "); leaving the network alone", Allowlist: allow.String()}
	case !newInstance && !e.Config.EventEnabled("boot"):
		st.Network = &NetResult{Action: "skipped", Reason: "events.network does not include boot", Allowlist: allow.String()}
	default:
		e.notifyStatus("applying the network")
		res, err := e.networkStep(ctx, md.Network, allow, netMode.live(e))
		st.Network = res
		if err != nil {
			return err
		}
	}
	if st.Network != nil && st.Network.Action == "skipped" && st.Network.Reason != "" {
		e.Log.Info("network: " + st.Network.Reason)
	}
	return nil
}

// NetworkAllowlist is the driver allowlist Boot would decide on this
// machine, for a command that applies a network configuration of its own
// (seedkeeper net): the metadata is read as Boot reads it (the
// configuration's sources, waited for as boot.wait says; guestinfo is
// never redacted here), and its allowlist, else the configuration's, else
// the platform's default is the one in force. No metadata source is not
// an error: the configuration or the platform then decides. Metadata that
// cannot be read is, since the allowlist it may set cannot be known.
func (e Env) NetworkAllowlist(ctx context.Context) (hotplug.Allowlist, error) {
	e.init()
	ctx, cancel := e.fetchContext(ctx)
	defer cancel()
	o := e.SourceOptions()
	o.VMware.Redact = false
	md, _, err := datasource.Fetch(ctx, o)
	if err != nil && !errors.Is(err, datasource.ErrNoSource) {
		return hotplug.Allowlist{}, fmt.Errorf("reading the metadata for the driver allowlist: %w", err)
	}
	return e.Allowlist(md), nil
}

// fetchContext is ctx bounded by boot.wait, the time Boot waits for the
// metadata (0: as long as ctx allows).
func (e *Env) fetchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if w := time.Duration(e.Config.Boot.Wait); w > 0 {
		return context.WithTimeout(ctx, w)
	}
	return context.WithCancel(ctx)
}
