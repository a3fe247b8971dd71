package hotplug

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// DefaultBackoff is how long the watcher waits before each re-fetch when
// the metadata does not list a new NIC yet: cloud-init's hotplug schedule
// (docs/cloud-init.md, "Hotplug"). The first fetch happens at once (or after
// the debounce window, when one is set), so a NIC gets len(DefaultBackoff)+1
// fetches over about 49 s before the watcher gives up on it.
var DefaultBackoff = []time.Duration{1 * time.Second, 3 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}

// Defaults for the zero Options fields.
const (
	// DefaultDebounce is no window at all: the first event for an
	// allowlisted link starts a fetch at once. Later events for it
	// (udev's rename, the link going up, our own addresses) find it
	// applied and change nothing; links added while a fetch runs are
	// served together by the next one.
	DefaultDebounce      = 0
	DefaultSettleTimeout = 5 * time.Second
	DefaultUdevDataDir   = "/run/udev/data"
)

// FetchFunc reads the metadata again and returns its network
// configuration; nil means the metadata has none (leave the network alone).
// It must return when ctx is done.
type FetchFunc func(ctx context.Context) (*netcfg.Config, error)

// ApplyFunc applies cfg to the NICs with the given MACs (lower-case,
// colon-separated) and to no other link. It must return when ctx is done.
type ApplyFunc func(ctx context.Context, cfg *netcfg.Config, macs []string) error

// Options configure a Watcher. Fetch and Apply are required.
type Options struct {
	// Namespace is the network namespace to watch, as a file descriptor
	// (a github.com/vishvananda/netns NsHandle); 0 or -1 means the
	// namespace the process runs in.
	Namespace int
	// Allowlist decides which drivers' NICs are configured. The zero
	// value allows nothing.
	Allowlist Allowlist
	Fetch     FetchFunc
	Apply     ApplyFunc

	// Backoff is the wait before each re-fetch while a NIC's MAC is not in
	// the metadata yet; nil means DefaultBackoff. When it runs out the
	// watcher gives up on that NIC (logged) until the NIC is added again.
	Backoff []time.Duration
	// Debounce is a quiet window after an allowlisted add before the
	// first fetch; adds within it are served by one fetch, and a burst
	// that goes on is cut at 5 windows. Zero (DefaultDebounce) fetches at
	// once; adds that arrive during a fetch are still served by one fetch,
	// the next. Negative is not allowed.
	Debounce time.Duration
	// UdevDataDir is where udev records the devices it has finished with
	// (n<ifindex> files). When the directory exists, a new NIC is fetched
	// for only once udev's file for it is there (its rename is done), or
	// SettleTimeout after it appeared. Empty means DefaultUdevDataDir when
	// Namespace is the current one, and no udev for another namespace
	// (udev does not see links in other namespaces).
	UdevDataDir string
	// UdevRoot is the root UdevDataDir is a system path under (an image
	// or a test's scratch root), reached through the in-root helpers so
	// that no link of the root's leads out of it; "" is the machine's own.
	UdevRoot string
	// SettleTimeout bounds the wait for udev; zero means
	// DefaultSettleTimeout.
	SettleTimeout time.Duration

	// Ready is called once, after the links present at start have been
	// listed, judged and fetched for once. The seedkeeper CLI sends
	// sd_notify READY=1 from here.
	Ready func()
	// Status is called with a one-line description of what the watcher
	// is doing whenever that changes (sd_notify STATUS=).
	Status func(string)
	// Logger receives the watcher's log lines; nil means slog.Default().
	Logger *slog.Logger
	// Outcome, when set, is called on the watcher's loop with what became
	// of an allowlisted NIC: after every apply made for it, when the
	// watcher gives up on it, and when it is removed; once for each (an
	// apply that fails on the last try is told as GaveUp, whose Err
	// wraps the apply's). It must not block for long.
	Outcome func(Outcome)
}

// What became of a NIC, in Outcome.Result.
const (
	Applied = "applied" // every operation of its apply succeeded
	Partial = "partial" // some operations failed (apply.ErrPartial); it is tried again
	Failed  = "failed"  // the apply failed; it is tried again
	GaveUp  = "gave-up" // no more tries until it is added again
	Removed = "removed" // it went away (nothing is changed on the machine)
)

// Outcome is what became of one NIC, for Options.Outcome.
type Outcome struct {
	Name string
	MAC  string // lower-case, colon-separated
	// Result is Applied, Partial, Failed, GaveUp or Removed.
	Result string
	// Err is why, nil when Applied or Removed.
	Err error
	// AtStart is set for a NIC that was there when the watcher started
	// (listed, not added later).
	AtStart bool
}

// Stats counts what a watcher has done. Links judged once are not judged
// again until they are removed, so a storm of events for links that are not
// allowlisted costs only these counters and one driver lookup per link.
type Stats struct {
	// Events is the number of link messages received from rtnetlink.
	Events uint64
	// Ignored is the number of links judged and dropped: not
	// ethernet-like, or a driver not on the allowlist.
	Ignored uint64
	// Fetches is the number of calls to Fetch, Applies of calls to Apply,
	// and Applied the number of NICs those calls were for.
	Fetches uint64
	Applies uint64
	Applied uint64
	// GaveUp is the number of NICs given up on: the backoff ran out
	// before the metadata listed them, or it has no network config.
	GaveUp uint64
	// Resubscribes counts subscriptions lost (for example to ENOBUFS in a
	// storm) and made again, each followed by a full re-list.
	Resubscribes uint64
	// Pending is the number of allowlisted NICs waiting to be applied.
	Pending int
}

type counters struct {
	events, ignored, fetches, applies, applied, gaveUp, resubscribes atomic.Uint64
	pending                                                          atomic.Int64
}

// Watcher keeps the allowlisted NICs of one network namespace applied. See
// the package documentation for the flow.
type Watcher struct {
	opts Options
	log  *slog.Logger
	c    counters
	ran  atomic.Bool
}

// New checks opts and returns a Watcher to Run.
func New(opts Options) (*Watcher, error) {
	if opts.Fetch == nil || opts.Apply == nil {
		return nil, errors.New("hotplug: options need both Fetch and Apply")
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	for i, d := range opts.Backoff {
		if d <= 0 {
			return nil, fmt.Errorf("hotplug: backoff step %d is %v, want a positive duration", i+1, d)
		}
	}
	opts.Backoff = slices.Clone(opts.Backoff)
	if opts.Debounce < 0 {
		return nil, fmt.Errorf("hotplug: debounce is %v, want zero or a positive duration", opts.Debounce)
	}
	if opts.SettleTimeout <= 0 {
		opts.SettleTimeout = DefaultSettleTimeout
	}
	if opts.UdevDataDir == "" && opts.Namespace <= 0 {
		opts.UdevDataDir = DefaultUdevDataDir
	}
	w := &Watcher{opts: opts, log: opts.Logger}
	if w.log == nil {
		w.log = slog.Default()
	}
	return w, nil
}

// Watch runs a Watcher with opts until ctx is done; see Watcher.Run.
func Watch(ctx context.Context, opts Options) error {
	w, err := New(opts)
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// Stats returns a snapshot of the counters. It is safe to call while Run
// runs.
func (w *Watcher) Stats() Stats {
	return Stats{
		Events:       w.c.events.Load(),
		Ignored:      w.c.ignored.Load(),
		Fetches:      w.c.fetches.Load(),
		Applies:      w.c.applies.Load(),
		Applied:      w.c.applied.Load(),
		GaveUp:       w.c.gaveUp.Load(),
		Resubscribes: w.c.resubscribes.Load(),
		Pending:      int(w.c.pending.Load()),
	}
}

// linkInfo is what the watcher needs to know about one link.
type linkInfo struct {
	Index int
	Name  string
	MAC   string // lower-case, colon-separated; "" when none
	// Ether is true for ethernet-like links: ARPHRD_ETHER with a 6-byte,
	// non-zero hardware address.
	Ether bool
}

type linkEvent struct {
	linkInfo
	Del bool
}

// linkSource is where links and their events come from: rtnetlink in a
// namespace on Linux, a fake in unit tests.
type linkSource interface {
	// subscribe starts delivering link events. The channel is closed when
	// the subscription is lost; stop ends it and waits for the close.
	subscribe() (events <-chan linkEvent, stop func(), err error)
	// list returns every link; it retries interrupted dumps itself.
	list(ctx context.Context) ([]linkInfo, error)
	// driver returns the kernel driver of the link.
	driver(l linkInfo) (string, error)
	// subscriptionErr returns why the last subscription was lost.
	subscriptionErr() error
	close()
}

type linkState int

const (
	stateUnjudged linkState = iota // driver lookup failed; judge on next event
	stateIgnored
	statePending
	stateDone
	stateGaveUp
)

type link struct {
	linkInfo
	driver string
	state  linkState

	// For pending links.
	firstSeen time.Time
	attempts  int       // fetches that counted for this link
	due       time.Time // when it wants a fetch
	initial   bool      // listed at start: Ready waits for its first fetch
	udevNoted bool      // logged that udev was slow
}

func (l *link) String() string {
	if l.driver != "" {
		return fmt.Sprintf("%s (%s, %s)", l.Name, l.MAC, l.driver)
	}
	return fmt.Sprintf("%s (%s)", l.Name, l.MAC)
}

// cycle is one fetch and apply for a set of pending links.
type cycle struct {
	links []cycleLink // every pending link this fetch may serve
}

type cycleLink struct {
	index int
	mac   string
	due   bool // the fetch counts as an attempt for it
}

type cycleResult struct {
	cycle
	fetchErr  error
	noNetwork bool
	found     map[string]bool // MACs the config lists
	applyErr  error
}

// Run watches until ctx is done and returns nil then; it returns an error
// only when it cannot start (subscribing or opening the namespace failed).
// A Watcher runs once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.ran.CompareAndSwap(false, true) {
		return errors.New("hotplug: a Watcher runs only once")
	}
	src, err := newSource(w.opts.Namespace, w.log)
	if err != nil {
		return err
	}
	defer src.close()
	return w.run(ctx, src)
}

// loop is the state of one Run; only the Run goroutine touches it.
type loop struct {
	w          *Watcher
	src        linkSource
	links      map[int]*link // every link, by ifindex
	pending    map[int]*link // the links in statePending
	burstStart time.Time     // first add of the current debounce burst
	ready      bool
	lastStatus string
}

func (w *Watcher) run(ctx context.Context, src linkSource) error {
	l := &loop{w: w, src: src, links: make(map[int]*link), pending: make(map[int]*link)}
	o := &w.opts
	if r := o.Allowlist.Reason(); r != "" {
		w.log.Warn("hotplug: the driver allowlist allows nothing: " + r)
	} else {
		w.log.Info("hotplug: driver allowlist " + o.Allowlist.String())
	}

	// Subscribe first, then list: a link added in between shows up in
	// the list or as an event, never in neither.
	events, stop, err := src.subscribe()
	if err != nil {
		return fmt.Errorf("hotplug: subscribing to link events: %w", err)
	}
	defer func() { stop() }()
	if !l.resync(ctx, true) {
		return nil
	}

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	results := make(chan cycleResult, 1)
	inflight := false
	defer func() {
		if inflight {
			<-results
		}
	}()

	for {
		now := time.Now()
		if !inflight {
			if c, ok := l.nextCycle(now); ok {
				inflight = true
				w.c.fetches.Add(1)
				go func() { results <- w.runCycle(ctx, c) }()
			}
		}
		if !inflight && !l.ready && !l.initialPending() {
			l.ready = true
			if o.Ready != nil {
				o.Ready()
			}
		}
		l.status(inflight)
		if !inflight {
			if due, ok := l.nextDue(); ok {
				timer.Reset(max(due.Sub(now), 0))
			} else {
				timer.Stop()
			}
		}

		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events, stop = l.resubscribe(ctx, stop)
				if events == nil {
					return nil
				}
				continue
			}
			w.c.events.Add(1)
			if ev.Del {
				l.remove(ev.Index)
			} else {
				l.add(ev.linkInfo, time.Now(), false)
			}
		case r := <-results:
			inflight = false
			l.finish(r, time.Now())
		case <-timer.C:
		}
	}
}

// resubscribe replaces a lost subscription and re-lists, so that nothing
// that happened meanwhile is missed. It returns nil events when ctx ended.
func (l *loop) resubscribe(ctx context.Context, stop func()) (<-chan linkEvent, func()) {
	stop()
	l.w.c.resubscribes.Add(1)
	l.w.log.Warn("hotplug: link event subscription lost; subscribing and listing links again", "err", l.src.subscriptionErr())
	for {
		events, stop, err := l.src.subscribe()
		if err == nil {
			if !l.resync(ctx, false) {
				return nil, stop
			}
			return events, stop
		}
		l.w.log.Warn("hotplug: subscribing to link events failed; retrying in 1s", "err", err)
		select {
		case <-ctx.Done():
			return nil, func() {}
		case <-time.After(time.Second):
		}
	}
}

// resync lists every link and reconciles the known set with it. It returns
// false when ctx ended first.
func (l *loop) resync(ctx context.Context, initial bool) bool {
	links, err := l.src.list(ctx)
	if err != nil {
		// list retries until it succeeds or ctx is done.
		return false
	}
	now := time.Now()
	present := make(map[int]bool, len(links))
	for _, li := range links {
		present[li.Index] = true
		l.add(li, now, initial)
	}
	for idx := range l.links {
		if !present[idx] {
			l.remove(idx)
		}
	}
	return true
}

// add handles a link that exists: new, renamed, or changed.
func (l *loop) add(li linkInfo, now time.Time, initial bool) {
	k, known := l.links[li.Index]
	if known && k.MAC == li.MAC && k.state != stateUnjudged {
		renamed := k.Name != li.Name
		k.Name = li.Name
		if k.state == statePending && k.attempts == 0 && renamed {
			// udev may still be renaming it: wait for a quiet window.
			l.debounce(now)
		}
		return
	}
	if known {
		l.remove(li.Index) // a new MAC on the same ifindex is a new NIC
	}
	k = &link{linkInfo: li}
	l.links[li.Index] = k
	if !li.Ether {
		k.state = stateIgnored
		l.w.c.ignored.Add(1)
		return
	}
	drv, err := l.src.driver(li)
	if err != nil {
		// Gone or mid-rename: judged again on its next event.
		l.w.log.Debug("hotplug: no driver for link yet", "link", li.Name, "err", err)
		k.state = stateUnjudged
		return
	}
	k.driver = drv
	if !l.w.opts.Allowlist.Allows(drv) {
		k.state = stateIgnored
		l.w.c.ignored.Add(1)
		return
	}
	k.state = statePending
	l.pending[k.Index] = k
	k.firstSeen = now
	k.initial = initial
	l.w.c.pending.Add(1)
	if initial {
		k.due = now
		l.w.log.Info("hotplug: found " + k.String() + " at start")
		return
	}
	l.w.log.Info("hotplug: new " + k.String())
	if l.burstStart.IsZero() || !l.hasFreshPending(k) {
		l.burstStart = now
	}
	l.debounce(now)
}

// hasFreshPending reports whether a link other than k is still in its
// debounce window.
func (l *loop) hasFreshPending(k *link) bool {
	for _, o := range l.pending {
		if o != k && o.attempts == 0 && !o.initial {
			return true
		}
	}
	return false
}

// debounce moves the first fetch of every link still in its quiet window
// to one window from now, capped at five windows after the burst began.
func (l *loop) debounce(now time.Time) {
	d := l.w.opts.Debounce
	due := now.Add(d)
	if limit := l.burstStart.Add(5 * d); due.After(limit) {
		due = limit
	}
	for _, k := range l.pending {
		if k.attempts == 0 && !k.initial {
			k.due = due
		}
	}
}

func (l *loop) remove(idx int) {
	k, ok := l.links[idx]
	if !ok {
		return
	}
	if k.state == statePending {
		delete(l.pending, idx)
		l.w.c.pending.Add(-1)
		l.w.log.Info("hotplug: " + k.String() + " removed before it was applied")
	}
	if k.state == statePending || k.state == stateDone || k.state == stateGaveUp {
		l.outcome(k, Removed, nil)
	}
	delete(l.links, idx)
}

// settled reports whether udev is done with the link, or has had long
// enough.
func (l *loop) settled(k *link, now time.Time) bool {
	dir := l.w.opts.UdevDataDir
	if dir == "" {
		return true
	}
	root := l.w.opts.UdevRoot
	if _, err := fsutil.StatIn(root, dir, true); err != nil {
		return true // no udev here
	}
	if _, err := fsutil.StatIn(root, path.Join(dir, "n"+strconv.Itoa(k.Index)), true); err == nil {
		return true
	}
	if now.Sub(k.firstSeen) >= l.w.opts.SettleTimeout {
		if !k.udevNoted {
			k.udevNoted = true
			l.w.log.Warn(fmt.Sprintf("hotplug: udev has not finished with %s after %v; going on", k, l.w.opts.SettleTimeout))
		}
		return true
	}
	return false
}

// nextCycle picks the pending links a fetch should serve now: every
// settled pending link past its debounce, if at least one of them is due.
func (l *loop) nextCycle(now time.Time) (cycle, bool) {
	var c cycle
	anyDue := false
	for _, k := range l.pending {
		fresh := k.attempts == 0
		due := !k.due.After(now)
		if fresh && !due {
			continue // still in its quiet window
		}
		if !l.settled(k, now) {
			if due {
				k.due = now.Add(min(max(l.w.opts.Debounce, udevPoll), 100*time.Millisecond))
			}
			continue
		}
		anyDue = anyDue || due
		c.links = append(c.links, cycleLink{index: k.Index, mac: k.MAC, due: due})
	}
	if !anyDue {
		return cycle{}, false
	}
	slices.SortFunc(c.links, func(a, b cycleLink) int { return a.index - b.index })
	return c, true
}

// udevPoll is the shortest wait between two looks for udev's record of a
// new link.
const udevPoll = 5 * time.Millisecond

func (l *loop) nextDue() (time.Time, bool) {
	var next time.Time
	for _, k := range l.pending {
		if next.IsZero() || k.due.Before(next) {
			next = k.due
		}
	}
	return next, !next.IsZero()
}

func (l *loop) initialPending() bool {
	for _, k := range l.pending {
		if k.initial && k.attempts == 0 {
			return true
		}
	}
	return false
}

// runCycle fetches once and applies for the links of c the configuration
// lists. It runs on its own goroutine and touches no loop state.
func (w *Watcher) runCycle(ctx context.Context, c cycle) cycleResult {
	r := cycleResult{cycle: c}
	cfg, err := w.opts.Fetch(ctx)
	if err != nil {
		r.fetchErr = err
		return r
	}
	if cfg == nil {
		r.noNetwork = true
		return r
	}
	listed := make(map[string]bool)
	for _, i := range cfg.Interfaces {
		if i.MAC != "" {
			listed[strings.ToLower(i.MAC)] = true
		}
	}
	r.found = make(map[string]bool)
	var macs []string
	for _, cl := range c.links {
		if listed[cl.mac] && !r.found[cl.mac] {
			r.found[cl.mac] = true
			macs = append(macs, cl.mac)
		}
	}
	if len(macs) == 0 {
		return r
	}
	w.c.applies.Add(1)
	r.applyErr = w.opts.Apply(ctx, cfg, macs)
	return r
}

// finish records what a cycle did.
func (l *loop) finish(r cycleResult, now time.Time) {
	w := l.w
	if r.fetchErr != nil {
		w.log.Warn("hotplug: fetching metadata failed", "err", r.fetchErr)
	}
	if r.applyErr != nil {
		w.log.Warn("hotplug: applying network config failed", "err", r.applyErr)
	}
	for _, cl := range r.links {
		k, ok := l.links[cl.index]
		if !ok || k.MAC != cl.mac || k.state != statePending {
			continue // removed or replaced meanwhile
		}
		switch {
		case r.noNetwork:
			w.log.Info("hotplug: the metadata has no network config; leaving " + k.String() + " alone")
			l.settle(k, stateGaveUp)
			l.outcome(k, GaveUp, errors.New("the metadata has no network config"))
			continue
		case r.fetchErr == nil && r.applyErr == nil && r.found[cl.mac]:
			w.log.Info(fmt.Sprintf("hotplug: applied network config to %s after %d fetch(es)", k, k.attempts+1))
			w.c.applied.Add(1)
			l.settle(k, stateDone)
			l.outcome(k, Applied, nil)
			continue
		}
		// An apply made for it that failed is told once: as Partial or
		// Failed, or, when it was the last try, as GaveUp with its error.
		failed := ""
		if r.applyErr != nil && r.found[cl.mac] {
			failed = Failed
			if errors.Is(r.applyErr, apply.ErrPartial) {
				failed = Partial
			}
		}
		if !cl.due {
			if failed != "" {
				l.outcome(k, failed, r.applyErr)
			}
			continue // it rode along; its own schedule stands
		}
		k.attempts++
		if k.attempts > len(w.opts.Backoff) {
			what := "the metadata did not list it"
			last := errors.New(what)
			if err := cmp.Or(r.fetchErr, r.applyErr); err != nil {
				what = "the last attempt failed"
				last = fmt.Errorf("%s: %w", what, err)
			}
			w.log.Warn(fmt.Sprintf("hotplug: giving up on %s after %d fetches over %v: %s; it is tried again when it is added again",
				k, k.attempts, now.Sub(k.firstSeen).Round(time.Millisecond), what))
			l.settle(k, stateGaveUp)
			l.outcome(k, GaveUp, fmt.Errorf("after %d fetches: %w", k.attempts, last))
			continue
		}
		if failed != "" {
			l.outcome(k, failed, r.applyErr)
		}
		wait := w.opts.Backoff[k.attempts-1]
		if k.attempts == 1 && r.fetchErr == nil && r.applyErr == nil {
			w.log.Info(fmt.Sprintf("hotplug: the metadata does not list %s yet; fetching again in %v", k, wait))
		}
		k.due = now.Add(wait)
	}
}

// outcome tells Options.Outcome what became of k.
func (l *loop) outcome(k *link, result string, err error) {
	if f := l.w.opts.Outcome; f != nil {
		f(Outcome{Name: k.Name, MAC: k.MAC, Result: result, Err: err, AtStart: k.initial})
	}
}

func (l *loop) settle(k *link, s linkState) {
	k.state = s
	delete(l.pending, k.Index)
	l.w.c.pending.Add(-1)
	if s == stateGaveUp {
		l.w.c.gaveUp.Add(1)
	}
}

// status reports what the watcher is doing, when that changed.
func (l *loop) status(inflight bool) {
	f := l.w.opts.Status
	if f == nil {
		return
	}
	var pend []string
	for _, k := range l.pending {
		pend = append(pend, k.Name)
	}
	slices.Sort(pend)
	var s string
	switch {
	case l.w.opts.Allowlist.Reason() != "":
		s = "watching links; allowlist allows nothing"
	case inflight:
		s = "fetching metadata for " + strings.Join(pend, ", ")
	case len(pend) > 0:
		s = "waiting for metadata to list " + strings.Join(pend, ", ")
	default:
		s = "watching links for " + strings.Join(l.w.opts.Allowlist.Drivers(), ",")
	}
	if s != l.lastStatus {
		l.lastStatus = s
		f(s)
	}
}
