package datasource

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
)

// localIPWatch keeps guestinfo.local-ipv4 and guestinfo.local-ipv6
// current while seedkeeper watch runs: boot publishes once, before the
// stack's DHCP client has run, and a hot-added NIC or a new lease changes
// the addresses later. It publishes what cloud-init's pick (localIPs)
// finds whenever that changes, and, as cloud-init, never clears a key.
// Every address or route change in the namespace wakes it, so it sets a
// key only when the pick differs from what the VMX was last given, and
// after a failed set it waits (retryFirst, doubling to retryMax) before
// it tries that key again: a VMX that refuses info-set, or a tool that
// hangs, costs one run per key per back-off, not one per event.
type localIPWatch struct {
	h    *sourceduty.Host
	tool string

	mu    sync.Mutex
	names []string
	kick  chan struct{} // a new plan's links: reconcile

	// Touched only by run's goroutine.
	last  map[string]netip.Addr // key -> what the VMX was last given
	retry map[string]*backoff   // key -> when a failed set is tried again
	now   func() time.Time
	// rec records each set and failure for seedkeeper status.
	rec sourceduty.Recorder
	// read reads the owned links' addresses (h.Links.Addrs).
	read func(names []string) (sourceduty.Addrs, error)
	// lastRun is when reconcile last ran; reconciles counts its runs
	// (read by the tests).
	lastRun    time.Time
	reconciles atomic.Int64
}

// backoff is a key whose last set failed.
type backoff struct {
	at    time.Time
	delay time.Duration
}

// How long a key whose set failed is left alone: first, and at most.
const (
	retryFirst = 30 * time.Second
	retryMax   = 30 * time.Minute
)

// newVMwareWatch is VMware's watcher, beside seedkeeper watch after the
// boot b: it keeps the published addresses current (localIPWatch) and
// applies a customization spec that arrives while the VM runs
// (imcWatch), each when it has something to do; nil when neither has.
// rec may be nil.
func newVMwareWatch(h *sourceduty.Host, b sourceduty.Boot, rec sourceduty.Recorder) sourceduty.Watcher {
	if rec == nil {
		rec = noRecorder{}
	}
	var ws watchers
	if w := newLocalIPWatch(h, b, rec); w != nil {
		ws = append(ws, w)
	}
	if w := newIMCWatch(h, b, rec); w != nil {
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		return nil
	}
	return ws
}

// watchers run side by side, each told of every new plan.
type watchers []sourceduty.Watcher

func (ws watchers) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(ctx) }()
	}
	wg.Wait()
}

func (ws watchers) SetLinks(names []string) {
	for _, w := range ws {
		w.SetLinks(names)
	}
}

// newLocalIPWatch returns the watch for the boot recorded in b, nil when
// that boot did not publish through a guestinfo tool on this machine
// (a boot from a customization spec published through vmware-rpctool,
// as cloud-init does). rec may be nil.
func newLocalIPWatch(h *sourceduty.Host, b sourceduty.Boot, rec sourceduty.Recorder) *localIPWatch {
	tool := b.Transport
	if tool == transportIMC {
		tool = ToolRPCTool // guestinfoToolOf
	}
	if b.Extra.VMware == nil || (tool != ToolRPCTool && tool != ToolVMToolsd) ||
		b.Net.Action != "applied" {
		return nil
	}
	if rec == nil {
		rec = noRecorder{}
	}
	w := &localIPWatch{h: h, tool: tool, names: slices.Clone(b.Net.Links), rec: rec,
		kick: make(chan struct{}, 1), last: map[string]netip.Addr{}, retry: map[string]*backoff{}, now: time.Now, read: h.Links.Addrs}
	for _, p := range b.Extra.VMware.Published {
		k, v, _ := strings.Cut(strings.TrimPrefix(p, "guestinfo."), " ")
		if a, err := netip.ParseAddr(v); err == nil {
			w.last[k] = a
		}
	}
	return w
}

// SetLinks takes the owned links of a new plan (after a hotplug apply)
// and has run reconcile: never on the caller's goroutine, so that a tool
// that hangs does not hold back the hotplug apply.
func (w *localIPWatch) SetLinks(names []string) {
	w.mu.Lock()
	w.names = slices.Clone(names)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default: // one pending reconcile covers it
	}
}

// reconcile publishes the addresses picked now that differ from the last
// ones published, but not a key still backing off after a failed set. It
// returns the time of the earliest retry due (zero: none).
func (w *localIPWatch) reconcile(ctx context.Context) time.Time {
	w.mu.Lock()
	names := slices.Clone(w.names)
	w.mu.Unlock()
	if len(names) == 0 {
		return w.nextRetry()
	}
	st, err := w.read(names)
	if err != nil {
		w.h.Log.Debug("vmware: reading the owned links", "err", err)
		return w.nextRetry()
	}
	v4, v6, _ := localIPs(st)
	now := w.now()
	for _, p := range []struct {
		key  string
		addr netip.Addr
	}{{sourceduty.GuestinfoLocalIPv4, v4}, {sourceduty.GuestinfoLocalIPv6, v6}} {
		b := w.retry[p.key]
		if !p.addr.IsValid() || w.last[p.key] == p.addr {
			// Nothing to set: the address whose set failed went, or the
			// VMX holds the one wanted. Its back-off ends when due;
			// kept, it would be due for ever, and wake this loop every
			// reconcileEvery for nothing.
			if b != nil && !now.Before(b.at) {
				delete(w.retry, p.key)
				w.rec.RetryEnded("guestinfo." + p.key)
			}
			continue
		}
		if b != nil && now.Before(b.at) {
			continue
		}
		if err := vmtools.Set(ctx, nil, w.tool, p.key, p.addr.String()); err != nil {
			if ctx.Err() != nil {
				return time.Time{}
			}
			if b == nil {
				b = &backoff{delay: retryFirst}
				w.retry[p.key] = b
			} else {
				b.delay = min(2*b.delay, retryMax)
			}
			b.at = now.Add(b.delay)
			w.rec.SetFailed("guestinfo."+p.key, p.addr.String(), err, b.at)
			w.h.Log.Warn("vmware: publishing guestinfo."+p.key+" failed; trying again in "+b.delay.String()+" at the earliest", "err", err)
			continue
		}
		delete(w.retry, p.key)
		w.last[p.key] = p.addr
		w.rec.Published("guestinfo."+p.key, p.addr.String())
		w.h.Log.Info("vmware: published guestinfo." + p.key + " " + p.addr.String() + " (the owned addresses changed)")
	}
	return w.nextRetry()
}

func (w *localIPWatch) nextRetry() time.Time {
	var t time.Time
	for _, b := range w.retry {
		if t.IsZero() || b.at.Before(t) {
			t = b.at
		}
	}
	return t
}

// reconcileEvery is the shortest time between two reconciles: a burst
// of address or route events (a routing daemon, pods coming and going)
// makes one read of the links and routes a second, not one per event.
const reconcileEvery = time.Second

// Run reconciles once, then on every address or route change in the
// namespace, every new plan, and when a failed set is due again, until
// ctx ends, at most once every reconcileEvery. A subscription that cannot
// be made is logged: the keys then stay as boot left them.
func (w *localIPWatch) Run(ctx context.Context) {
	events, err := w.h.Links.Subscribe(ctx)
	if err != nil {
		w.h.Log.Warn("vmware: not keeping guestinfo.local-ipv4/-ipv6 current", "err", err)
		return
	}
	w.loop(ctx, events)
}

// loop is run's loop over the events.
func (w *localIPWatch) loop(ctx context.Context, events <-chan struct{}) {
	timer := time.NewTimer(retryMax)
	timer.Stop()
	defer timer.Stop()
	arm := func(at time.Time) {
		timer.Stop()
		if !at.IsZero() {
			timer.Reset(max(time.Until(at), 0))
		}
	}
	run := func() {
		w.reconciles.Add(1)
		w.lastRun = time.Now()
		arm(w.reconcile(ctx))
	}
	run()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				if ctx.Err() == nil {
					w.h.Log.Warn("vmware: address events ended; guestinfo.local-ipv4/-ipv6 no longer kept current")
				}
				return
			}
		case <-w.kick:
		case <-timer.C: // a failed set due again, or a reconcile held back
		}
		if next := w.lastRun.Add(reconcileEvery); time.Now().Before(next) {
			arm(next)
			continue
		}
		run()
	}
}

// noRecorder records nothing.
type noRecorder struct{}

func (noRecorder) Published(string, string)                   {}
func (noRecorder) SetFailed(string, string, error, time.Time) {}
func (noRecorder) RetryEnded(string)                          {}
func (noRecorder) Customized([]string, string)                {}
