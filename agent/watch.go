package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
	"github.com/seedkeeper/seedkeeper/nosource"
)

// WatchOptions are the choices of one hotplug daemon run.
type WatchOptions struct {
	// Drivers, when not nil, is the allowlist for this run (overriding
	// the metadata and the configuration).
	Drivers *hotplug.Allowlist
	// Recorded, when not nil, is called once the watch is ready and
	// after each change to its record (WatchRecordPath), when it changes
	// the machine (not NetworkPlan): the command keeps the metrics
	// textfile current with it. It is called with the record's lock held:
	// it may read the record's file, not record.
	Recorded func()
	// Network is NetworkAuto ("" too), NetworkApply or NetworkPlan (log
	// what would change).
	Network NetworkMode
}

// Watch is the hotplug daemon: it reads the metadata once for the driver
// allowlist, then runs hotplug.Watch with a re-fetch of the metadata and
// an apply (apply.Sync for the new NICs, then the networkd files of what is
// owned, under one receipt lock) until ctx ends. Beside it runs what the
// source of the boot it follows does while the machine runs (VMware: the
// published addresses kept current, a customization spec that arrives
// applied). It never writes the instance ID, the identity state, the seed
// or a password; what it does to the machine it records in
// WatchRecordPath for "seedkeeper status". It returns nil when ctx ends
// and when there is nothing to watch (it says why, and tells the service
// manager READY); errors are logged before they are returned.
// It applies nothing from a source the last Boot did not decide on (one
// that appeared after boot): that takes effect on the next boot, and it
// is recorded for LateSource. On SmartOS every read goes over one mdata
// session, held (with mdata.Options.Yield) for the watcher's life.
func Watch(ctx context.Context, e Env, o WatchOptions) error {
	e.init()
	if o.Network == "" {
		o.Network = NetworkAuto
	}
	fail := func(msg string, err error) error {
		e.Log.Error(msg, "err", err)
		return fmt.Errorf("%s: %w", msg, err)
	}
	live := o.Network.live(&e)
	recorded := func() {
		if live && o.Recorded != nil {
			o.Recorded()
		}
	}
	idle := func(why string) error {
		e.Log.Info("watch: " + why)
		e.watchReady(live, "\nSTATUS="+why)
		recorded()
		return nil
	}
	if !e.Config.EventEnabled("hotplug") {
		return idle("hotplug is not in events.network; nothing to watch")
	}
	if e.Config.Network.Owner == "cloud-init" {
		return idle("network.owner is cloud-init; nothing to watch")
	}
	opts := e.SourceOptions()
	// A re-fetch does not wait for a VMware customization spec to
	// appear, as boot does: one that arrives is VMware's watcher's, and
	// a wait would hold back every hotplug fetch of a VM booted from a
	// kept spec.
	opts.VMware.IMCWait = -1
	found, _, err := datasource.Detect(ctx, opts)
	source := found.Source
	if errors.Is(err, datasource.ErrNoSource) {
		return idle("no metadata source on this machine; nothing to watch")
	}
	if err != nil {
		return fail("watch: detecting the metadata source", err)
	}
	// Nothing from a source boot did not decide on is applied in this
	// boot (docs/design.md, "Network events"): it takes effect on the next
	// boot, as a whole.
	decided := LastBoot(e.Root)
	if msg, late := e.lateCheck(decided, nil, source); late {
		return idle(msg)
	}

	readFirst, read, done := e.watchReaders(found, opts)
	defer done()

	var allow hotplug.Allowlist
	if o.Drivers != nil {
		allow = *o.Drivers
	} else {
		// The metadata may set the allowlist: read it once first.
		e.notifyStatus("reading the metadata (%s) for the driver allowlist", source)
		md, err := readFirst(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fail("watch: reading the metadata", err)
		}
		if msg, late := e.lateCheck(decided, md, ""); late {
			return idle(msg)
		}
		allow = e.Allowlist(md)
	}
	e.Log.Info("watch: allowlist " + allow.String())

	fetch := func(ctx context.Context) (*netcfg.Config, error) {
		md, err := read(ctx)
		if err != nil {
			return nil, err
		}
		if msg, late := e.lateCheck(decided, md, ""); late {
			return nil, errors.New(msg)
		}
		return md.Network, nil
	}
	if err := fsutil.NoLinkOnTheWayIn(string(e.Root), path.Dir(ReceiptPath)); err != nil {
		return fail("watch: the network receipt", err)
	}
	receipt := e.Root.Path(ReceiptPath)
	outcome, beside := e.watchRecording(live, decided, o.Recorded, allow, receipt)
	if beside != nil {
		bctx, stop := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() { beside.Run(bctx); close(ran) }()
		defer func() { stop(); <-ran }()
	}
	applyFn := e.watchApplier(live, allow, receipt, beside)
	err = hotplug.Watch(ctx, hotplug.Options{
		Namespace: e.Netns,
		Allowlist: allow,
		Fetch:     fetch,
		Apply:     applyFn,
		// udev's records are a system path too: under the root.
		UdevDataDir: hotplug.DefaultUdevDataDir,
		UdevRoot:    string(e.Root),
		Ready:       func() { e.watchReady(live, ""); recorded() },
		Status:      func(s string) { e.notifyStatus("%s", s) },
		Logger:      e.Log,
		Outcome:     outcome,
	})
	e.Notify("STOPPING=1")
	if err != nil && ctx.Err() == nil {
		return fail("watch stopped", err)
	}
	return nil
}

// watchReaders are the reads of the watch: the first goes on from what
// detection found, every re-fetch reads afresh (a seed may have changed).
// done ends what they hold.
func (e *Env) watchReaders(found datasource.Detection, opts datasource.Options) (first, read func(context.Context) (*datasource.Metadata, error), done func()) {
	first = func(ctx context.Context) (*datasource.Metadata, error) {
		return datasource.ReadDetected(ctx, found, opts)
	}
	read = func(ctx context.Context) (*datasource.Metadata, error) {
		return datasource.Read(ctx, found.Source, opts)
	}
	t := found.Transport()
	if t == nil {
		return first, read, func() {}
	}
	// A source read over mdata gets one session for the daemon's life:
	// no handshake per event, and the port let go between requests
	// (mdata.Options.Yield).
	mo := opts.Mdata
	mo.Logger, mo.Yield = e.Log, true
	c := mdata.New(t, &mo)
	so := opts
	so.MdataClient = c
	read = func(ctx context.Context) (*datasource.Metadata, error) { return datasource.Read(ctx, found.Source, so) }
	return read, read, func() { c.Close() }
}

// watchRecording is what records the watch's work: what it does to the
// machine is recorded for seedkeeper status (WatchRecordPath), and what
// runs beside it for the source of the boot it follows (VMware keeps the
// addresses boot published current, and applies a customization spec
// that arrives) records there too. A watch that only plans changes
// nothing, and records nothing. Both are nil then. What runs beside
// applies a network through the watch's own apply (allow, receipt).
func (e *Env) watchRecording(live bool, decided nosource.Boot, after func(), allow hotplug.Allowlist, receipt string) (func(hotplug.Outcome), sourceduty.Watcher) {
	if !live {
		return nil, nil
	}
	rec := newWatchRecorder(e.Root, e.Log)
	rec.after = after
	st, err := ReadStatus(e.Root)
	if err != nil || !decided.Ran {
		return rec.hotplug, nil
	}
	b := sourceduty.Boot{Source: st.Source, Transport: st.Transport, Extra: st.Extra}
	if st.Identity != nil {
		b.ReportedID = st.Identity.ReportedID
	}
	if n := st.Network; n != nil {
		rec.bootLinks = n.Links
		b.Net = sourceduty.Net{Action: n.Action, Reason: n.Reason, Links: n.Links, Owned: n.Owned}
	}
	h := e.dutyHost(nil, live)
	h.Unit = "seedkeeper-watch"
	var beside sourceduty.Watcher
	h.ApplyNetwork = func(ctx context.Context, cfg *netcfg.Config) ([]string, error) {
		var owned []string
		err := e.liveApplier(allow, receipt, beside, func(n []string) { owned = n })(ctx, cfg, configMACs(cfg))
		return owned, err
	}
	beside = sourceduty.WatcherFor(h, b, rec)
	return rec.hotplug, beside
}

// configMACs are the MACs cfg's interfaces match, lower-case.
func configMACs(cfg *netcfg.Config) []string {
	macs := []string{}
	for _, i := range cfg.Interfaces {
		if i.MAC != "" && !slices.Contains(macs, strings.ToLower(i.MAC)) {
			macs = append(macs, strings.ToLower(i.MAC))
		}
	}
	return macs
}

// liveApplier applies a configuration to the NICs with the MACs given
// (hotplug's apply), then renders the network files of what is owned,
// telling beside (may be nil) and owned (may be nil) the owned links.
func (e *Env) liveApplier(allow hotplug.Allowlist, receipt string, beside sourceduty.Watcher, owned func([]string)) hotplug.ApplyFunc {
	return hotplug.NetlinkApplierThen(e.Netns, allow, receipt, e.Log,
		func(ctx context.Context, cfg *netcfg.Config, whole *apply.Plan) error {
			err := e.render(ctx, cfg, whole, allow, &NetResult{}, true)
			var names []string
			for _, id := range slices.Sorted(maps.Keys(whole.OwnedName)) {
				names = append(names, whole.OwnedName[id])
			}
			if beside != nil {
				beside.SetLinks(names)
			}
			if owned != nil {
				owned(names)
			}
			return err
		})
}

// watchApplier applies what the watch decided: the new NICs and the
// networkd files of what is owned, telling beside (may be nil) the owned
// links of each new plan; or, when the watch only plans, logs what it
// would do.
func (e *Env) watchApplier(live bool, allow hotplug.Allowlist, receipt string, beside sourceduty.Watcher) func(context.Context, *netcfg.Config, []string) error {
	if live {
		return e.liveApplier(allow, receipt, beside, nil)
	}
	e.Log.Info("watch: the network is only planned (--root is set, or --network plan)")
	return func(ctx context.Context, cfg *netcfg.Config, macs []string) error {
		s, err := apply.Sync(ctx, hotplug.Only(cfg, macs), apply.SyncOptions{Receipt: receipt, Allow: allow.Allows, DryRun: true, Namespace: netns.NsHandle(e.Netns)})
		if err != nil {
			return err
		}
		for _, n := range s.Plan.Notes {
			e.Log.Info("network: " + n)
		}
		for _, o := range s.Plan.Ops {
			e.Log.Info("network: would " + o.String())
		}
		return nil
	}
}
