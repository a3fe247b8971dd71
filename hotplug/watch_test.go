package hotplug

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/syncbuf"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// fakeSource is a linkSource whose links and events the test makes.
type fakeSource struct {
	mu      sync.Mutex
	links   map[int]linkInfo
	drivers map[int]string
	sub     chan linkEvent // current subscription, nil when none
	subs    int
}

func newFakeSource() *fakeSource {
	return &fakeSource{links: map[int]linkInfo{}, drivers: map[int]string{}}
}

func (f *fakeSource) subscribe() (<-chan linkEvent, func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan linkEvent, 4096)
	f.sub = ch
	f.subs++
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.sub == ch {
				close(ch)
				f.sub = nil
			}
		})
	}, nil
}

func (f *fakeSource) list(context.Context) ([]linkInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []linkInfo
	for _, l := range f.links {
		out = append(out, l)
	}
	return out, nil
}

func (f *fakeSource) driver(l linkInfo) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.drivers[l.Index]
	if !ok {
		return "", errors.New("no such device")
	}
	return d, nil
}

func (f *fakeSource) subscriptionErr() error { return errors.New("fake: ENOBUFS") }
func (f *fakeSource) close()                 {}

// put adds or changes a link; quiet means no event is sent (it happened
// while the subscription was down).
func (f *fakeSource) put(idx int, name, mac, driver string, quiet bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	li := linkInfo{Index: idx, Name: name, MAC: mac, Ether: mac != ""}
	f.links[idx] = li
	f.drivers[idx] = driver
	if f.sub != nil && !quiet {
		f.sub <- linkEvent{linkInfo: li}
	}
}

func (f *fakeSource) del(idx int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	li := f.links[idx]
	delete(f.links, idx)
	delete(f.drivers, idx)
	if f.sub != nil {
		f.sub <- linkEvent{linkInfo: li, Del: true}
	}
}

// dropSubscription closes the current subscription as an ENOBUFS would.
func (f *fakeSource) dropSubscription() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sub != nil {
		close(f.sub)
		f.sub = nil
	}
}

// metadata is a fake Fetch: it lists each MAC from the fetch number given
// in learnAt (1-based) on.
type metadata struct {
	mu       sync.Mutex
	learnAt  map[string]int
	calls    int
	err      func(call int) error
	none     bool          // no network config at all
	block    bool          // block until ctx is done
	hold     chan struct{} // if set, each fetch waits for it to be closed
	applied  [][]string
	onApply  func()
	applyErr error
}

func (m *metadata) fetch(ctx context.Context) (*netcfg.Config, error) {
	m.mu.Lock()
	m.calls++
	call := m.calls
	block, hold := m.block, m.hold
	m.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		if err := m.err(call); err != nil {
			return nil, err
		}
	}
	if m.none {
		return nil, nil
	}
	cfg := &netcfg.Config{Interfaces: []netcfg.Interface{{ID: "other", Kind: netcfg.Physical, MAC: "02:00:00:00:99:99"}}}
	var macs []string
	for mac, at := range m.learnAt {
		if call >= at {
			macs = append(macs, mac)
		}
	}
	slices.Sort(macs)
	for i, mac := range macs {
		cfg.Interfaces = append(cfg.Interfaces, netcfg.Interface{ID: fmt.Sprint("eth", i), Kind: netcfg.Physical, MAC: strings.ToUpper(mac)})
	}
	return cfg, nil
}

func (m *metadata) apply(_ context.Context, cfg *netcfg.Config, macs []string) error {
	m.mu.Lock()
	m.applied = append(m.applied, slices.Clone(macs))
	f, err := m.onApply, m.applyErr
	m.mu.Unlock()
	if f != nil {
		f()
	}
	return err
}

func (m *metadata) appliedMACs() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.applied)
}

// lockedBuffer is a log the code under test writes while the test reads it.
type lockedBuffer = syncbuf.Buffer

// harness runs a Watcher on a fake source.
type harness struct {
	t      *testing.T
	src    *fakeSource
	md     *metadata
	w      *Watcher
	logs   *lockedBuffer
	ready  chan struct{}
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	status []string
}

func startHarness(t *testing.T, src *fakeSource, md *metadata, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, src: src, md: md, logs: &lockedBuffer{}, ready: make(chan struct{}), done: make(chan error, 1)}
	if opts.Allowlist.Origin() == "" {
		opts.Allowlist = NewAllowlist("test", []string{"virtio_net"})
	}
	if opts.Backoff == nil {
		opts.Backoff = []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
	}
	if opts.UdevDataDir == "" {
		opts.UdevDataDir = filepath.Join(t.TempDir(), "no-udev")
	}
	opts.Fetch, opts.Apply = md.fetch, md.apply
	var once sync.Once
	opts.Ready = func() {
		once.Do(func() { close(h.ready) })
		h.mu.Lock()
		h.status = append(h.status, "READY")
		h.mu.Unlock()
	}
	opts.Status = func(s string) {
		h.mu.Lock()
		h.status = append(h.status, s)
		h.mu.Unlock()
	}
	opts.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	w.ran.Store(true)
	go func() { h.done <- w.run(ctx, src) }()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("watcher log:\n%s", h.logs)
		}
	})
	return h
}

func (h *harness) stop() {
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("run returned %v", err)
	}
	h.done <- nil // let a second stop return
}

func (h *harness) waitReady() {
	h.t.Helper()
	select {
	case <-h.ready:
	case <-time.After(10 * time.Second):
		h.t.Fatalf("not ready after 10s; stats %+v", h.w.Stats())
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestWatchCoalescesBurst(t *testing.T) {
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{
		"52:54:00:00:00:01": 1, "52:54:00:00:00:02": 1, "52:54:00:00:00:03": 1,
	}}
	h := startHarness(t, src, md, Options{Debounce: time.Second})
	h.waitReady()
	for i := 1; i <= 3; i++ {
		src.put(10+i, fmt.Sprint("eth", i), fmt.Sprintf("52:54:00:00:00:%02d", i), "virtio_net", false)
	}
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 3 })
	st := h.w.Stats()
	if st.Fetches != 1 || st.Applies != 1 || st.Pending != 0 {
		t.Errorf("stats %+v, want one fetch and one apply for three NICs", st)
	}
	want := [][]string{{"52:54:00:00:00:01", "52:54:00:00:00:02", "52:54:00:00:00:03"}}
	if got := md.appliedMACs(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("applied %v, want %v", got, want)
	}
}

// With the default options the first event for an allowlisted link starts
// a fetch at once; links added while it runs are served together by the
// next one, and the events that follow an apply (udev's rename, the link
// going up) change nothing: the reconcile is level-triggered. A link whose
// driver is not allowed costs no fetch.
func TestWatchActsOnFirstEventAndCoalescesTheRest(t *testing.T) {
	const a, b, c = "52:54:00:00:00:0a", "52:54:00:00:00:0b", "52:54:00:00:00:0c"
	hold := make(chan struct{})
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{a: 1, b: 1, c: 1}, hold: hold}
	h := startHarness(t, src, md, Options{})
	h.waitReady()
	src.put(11, "eth0", a, "virtio_net", false)
	waitFor(t, "the first fetch", func() bool { md.mu.Lock(); defer md.mu.Unlock(); return md.calls == 1 })
	// While that fetch runs: a burst, the first link's rename, a veth.
	src.put(12, "eth1", b, "virtio_net", false)
	src.put(13, "eth2", c, "virtio_net", false)
	src.put(11, "ens11", a, "virtio_net", false)
	src.put(20, "veth0", "52:54:00:00:00:20", "veth", false)
	waitFor(t, "the events", func() bool { return h.w.Stats().Events == 5 })
	close(hold)
	waitFor(t, "three applied", func() bool { return h.w.Stats().Applied == 3 })
	want := [][]string{{a}, {b, c}}
	if got := md.appliedMACs(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("applied %v, want %v", got, want)
	}
	// What our own apply and udev do next: up, renamed.
	src.put(12, "eth1", b, "virtio_net", false)
	src.put(13, "ens13", c, "virtio_net", false)
	src.put(11, "ens11", a, "virtio_net", false)
	waitFor(t, "the later events", func() bool { return h.w.Stats().Events == 8 })
	if st := h.w.Stats(); st.Fetches != 2 || st.Applies != 2 || st.Ignored != 1 || st.Pending != 0 {
		t.Errorf("stats %+v, want 2 fetches and 2 applies for 3 NICs, the veth ignored", st)
	}
}

// The metadata lags the device (cloud-init GH #5373): fetch again on the
// backoff schedule until the MAC shows up, then apply it once.
func TestWatchRefetchesUntilMetadataListsMAC(t *testing.T) {
	const mac = "52:54:00:aa:bb:01"
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{mac: 3}}
	h := startHarness(t, src, md, Options{})
	h.waitReady()
	src.put(5, "ens5", mac, "virtio_net", false)
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
	st := h.w.Stats()
	if st.Fetches != 3 || st.Applies != 1 || st.GaveUp != 0 {
		t.Errorf("stats %+v, want 3 fetches and 1 apply", st)
	}
	if got := md.appliedMACs(); len(got) != 1 || !slices.Equal(got[0], []string{mac}) {
		t.Errorf("applied %v", got)
	}
	if !strings.Contains(h.logs.String(), "does not list ens5 (52:54:00:aa:bb:01, virtio_net) yet") {
		t.Errorf("no line about the lag in the log:\n%s", h.logs)
	}
	// A later event for the applied link (our own apply bringing it up)
	// does not start another fetch.
	src.put(5, "ens5", mac, "virtio_net", false)
	waitFor(t, "the event", func() bool { return h.w.Stats().Events == 2 })
	if st := h.w.Stats(); st.Fetches != 3 || st.Pending != 0 {
		t.Errorf("after a second event: %+v", st)
	}
}

func TestWatchGivesUpWhenScheduleRunsOut(t *testing.T) {
	const mac = "52:54:00:aa:bb:02"
	src, md := newFakeSource(), &metadata{}
	h := startHarness(t, src, md, Options{Backoff: []time.Duration{time.Millisecond, 2 * time.Millisecond}})
	h.waitReady()
	src.put(6, "ens6", mac, "virtio_net", false)
	waitFor(t, "giving up", func() bool { return h.w.Stats().GaveUp == 1 })
	if st := h.w.Stats(); st.Fetches != 3 || st.Applies != 0 || st.Pending != 0 {
		t.Errorf("stats %+v, want 3 fetches (first + 2 retries), no apply", st)
	}
	if !strings.Contains(h.logs.String(), "giving up on ens6") {
		t.Errorf("no give-up line:\n%s", h.logs)
	}
	// Removed and added again: tried again, and now the metadata has it.
	md.mu.Lock()
	md.learnAt = map[string]int{mac: 1}
	md.mu.Unlock()
	src.del(6)
	src.put(7, "ens6", mac, "virtio_net", false)
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
	if st := h.w.Stats(); st.Fetches != 4 {
		t.Errorf("stats %+v, want 4 fetches", st)
	}
}

// The docker veth storm (LP #1946003): links whose driver is not on the
// allowlist cost no fetch and no apply.
func TestWatchIgnoresLinksNotAllowlisted(t *testing.T) {
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{"02:42:ac:11:00:02": 1}}
	src.put(1, "lo", "", "", false)
	src.put(2, "docker0", "02:42:ac:11:00:01", "bridge", false)
	h := startHarness(t, src, md, Options{})
	h.waitReady()
	for i := 0; i < 200; i++ {
		src.put(100+i, fmt.Sprint("veth", i), fmt.Sprintf("02:42:ac:11:%02x:%02x", i/256, i%256), "veth", false)
		src.put(100+i, fmt.Sprint("veth", i), fmt.Sprintf("02:42:ac:11:%02x:%02x", i/256, i%256), "veth", false)
	}
	waitFor(t, "400 events", func() bool { return h.w.Stats().Events == 400 })
	for i := 0; i < 200; i++ {
		src.del(100 + i)
	}
	waitFor(t, "600 events", func() bool { return h.w.Stats().Events == 600 })
	st := h.w.Stats()
	if st.Fetches != 0 || st.Applies != 0 {
		t.Errorf("stats %+v, want no fetch and no apply", st)
	}
	// lo (not ethernet), docker0 and each veth once: judged once per link.
	if st.Ignored != 202 {
		t.Errorf("Ignored = %d, want 202", st.Ignored)
	}
}

func TestWatchReconcilesLinksPresentAtStart(t *testing.T) {
	const mac = "52:54:00:00:10:01"
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{mac: 1}}
	src.put(3, "ens3", mac, "virtio_net", false)
	src.put(4, "ens4", "52:54:00:00:10:02", "e1000", false) // not allowed
	h := startHarness(t, src, md, Options{})
	h.waitReady()
	// READY comes after the first reconcile, which applied ens3.
	if got := md.appliedMACs(); len(got) != 1 || !slices.Equal(got[0], []string{mac}) {
		t.Fatalf("applied %v before READY, want [[%s]]", got, mac)
	}
	if st := h.w.Stats(); st.Fetches != 1 || st.Ignored != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestWatchReadyWithNothingToDo(t *testing.T) {
	src, md := newFakeSource(), &metadata{}
	h := startHarness(t, src, md, Options{})
	h.waitReady()
	if st := h.w.Stats(); st.Fetches != 0 {
		t.Errorf("fetched with no NIC: %+v", st)
	}
	h.stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := slices.Index(h.status, "READY"); n < 0 || slices.Index(h.status[n+1:], "READY") >= 0 {
		t.Errorf("READY not sent exactly once: %q", h.status)
	}
	if !slices.Contains(h.status, "watching links for virtio_net") {
		t.Errorf("status lines %q", h.status)
	}
}

func TestWatchRemoveClearsPending(t *testing.T) {
	src, md := newFakeSource(), &metadata{}
	h := startHarness(t, src, md, Options{Debounce: time.Minute})
	h.waitReady()
	src.put(8, "ens8", "52:54:00:00:00:08", "virtio_net", false)
	waitFor(t, "pending", func() bool { return h.w.Stats().Pending == 1 })
	src.del(8)
	waitFor(t, "pending cleared", func() bool { return h.w.Stats().Pending == 0 })
	// The watcher logs the removal after it has cleared the pending NIC.
	waitFor(t, "the removal logged", func() bool { return strings.Contains(h.logs.String(), "removed before it was applied") })
	if st := h.w.Stats(); st.Fetches != 0 || st.Applies != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestWatchNoNetworkConfigLeavesNICAlone(t *testing.T) {
	src, md := newFakeSource(), &metadata{none: true}
	src.put(3, "ens3", "52:54:00:00:00:03", "virtio_net", false)
	h := startHarness(t, src, md, Options{})
	h.waitReady()
	if st := h.w.Stats(); st.Fetches != 1 || st.Applies != 0 || st.GaveUp != 1 {
		t.Errorf("stats %+v, want one fetch, no apply", st)
	}
	if !strings.Contains(h.logs.String(), "no network config") {
		t.Errorf("log:\n%s", h.logs)
	}
}

func TestWatchRetriesFailedFetchAndApply(t *testing.T) {
	const mac = "52:54:00:00:00:09"
	src := newFakeSource()
	md := &metadata{learnAt: map[string]int{mac: 1}, err: func(call int) error {
		if call == 1 {
			return errors.New("mdata: timeout")
		}
		return nil
	}}
	md.applyErr = errors.New("netlink: EBUSY")
	md.onApply = func() { md.mu.Lock(); md.applyErr = nil; md.mu.Unlock() }
	src.put(9, "ens9", mac, "virtio_net", false)
	h := startHarness(t, src, md, Options{})
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
	// fetch 1 fails, fetch 2 + apply fails, fetch 3 + apply works.
	if st := h.w.Stats(); st.Fetches != 3 || st.Applies != 2 {
		t.Errorf("stats %+v", st)
	}
	for _, w := range []string{"mdata: timeout", "netlink: EBUSY"} {
		if !strings.Contains(h.logs.String(), w) {
			t.Errorf("log does not mention %q:\n%s", w, h.logs)
		}
	}
}

// A lost subscription (ENOBUFS in a storm) is made again, and the re-list
// finds a link added while no events came.
func TestWatchResubscribesAndRelists(t *testing.T) {
	const mac = "52:54:00:00:00:0a"
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{mac: 1}}
	h := startHarness(t, src, md, Options{})
	h.waitReady()
	// Added unseen, then the loss: put after the drop raced the re-list and was missed.
	src.put(10, "ens10", mac, "virtio_net", true)
	src.dropSubscription()
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
	if st := h.w.Stats(); st.Resubscribes != 1 || st.Events != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestWatchMACChangeIsNewNIC(t *testing.T) {
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{"52:54:00:00:00:0c": 1}}
	src.put(11, "ens11", "52:54:00:00:00:0b", "virtio_net", false)
	h := startHarness(t, src, md, Options{Backoff: []time.Duration{time.Hour}})
	h.waitReady()
	src.put(11, "ens11", "52:54:00:00:00:0c", "virtio_net", false)
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
	if got := md.appliedMACs(); !slices.Equal(got[0], []string{"52:54:00:00:00:0c"}) {
		t.Errorf("applied %v", got)
	}
}

// With udev running, a new NIC waits for udev's record of it (its rename
// done) before the fetch; without the record it goes on after the timeout.
func TestWatchWaitsForUdev(t *testing.T) {
	udev := t.TempDir()
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{"52:54:00:00:00:0d": 1, "52:54:00:00:00:0e": 1}}
	h := startHarness(t, src, md, Options{UdevDataDir: udev, SettleTimeout: time.Hour, Debounce: time.Millisecond})
	h.waitReady()
	src.put(13, "eth0", "52:54:00:00:00:0d", "virtio_net", false)
	src.put(13, "ens13", "52:54:00:00:00:0d", "virtio_net", false) // udev renames it
	waitFor(t, "the events", func() bool { return h.w.Stats().Events == 2 })
	// Still waiting for udev: a few debounce windows pass without a fetch.
	time.Sleep(50 * time.Millisecond)
	if st := h.w.Stats(); st.Fetches != 0 {
		t.Fatalf("fetched before udev finished: %+v", st)
	}
	if err := os.WriteFile(filepath.Join(udev, "n13"), []byte("I:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
	if !strings.Contains(h.logs.String(), "applied network config to ens13") {
		t.Errorf("log:\n%s", h.logs)
	}
}

func TestWatchUdevSettleTimeout(t *testing.T) {
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{"52:54:00:00:00:0e": 1}}
	h := startHarness(t, src, md, Options{UdevDataDir: t.TempDir(), SettleTimeout: 30 * time.Millisecond})
	h.waitReady()
	src.put(14, "eth1", "52:54:00:00:00:0e", "virtio_net", false)
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
	if !strings.Contains(h.logs.String(), "udev has not finished with eth1") {
		t.Errorf("log:\n%s", h.logs)
	}
}

// A broken allowlist config: nothing is fetched or applied, and the reason
// is logged.
func TestWatchBrokenAllowlist(t *testing.T) {
	al := ResolveAllowlist(Setting{}, Setting{Set: true, Value: "virtio_net,,e1000"}, "kvm")
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{"52:54:00:00:00:0f": 1}}
	src.put(15, "ens15", "52:54:00:00:00:0f", "virtio_net", false)
	h := startHarness(t, src, md, Options{Allowlist: al})
	h.waitReady()
	src.put(16, "ens16", "52:54:00:00:00:10", "virtio_net", false)
	// The event is counted before its link is judged: wait for both.
	waitFor(t, "the event judged", func() bool { st := h.w.Stats(); return st.Events == 1 && st.Ignored == 2 })
	if st := h.w.Stats(); st.Fetches != 0 || st.Applies != 0 || st.Ignored != 2 {
		t.Errorf("stats %+v", st)
	}
	if !strings.Contains(h.logs.String(), "allowlist allows nothing: config hotplug.drivers: entry 2: empty driver name") {
		t.Errorf("reason not logged:\n%s", h.logs)
	}
}

// Cancelling the context ends Run promptly, also during a fetch, and
// leaves no goroutine behind.
func TestWatchStopsCleanly(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, block := range []bool{false, true} {
		src, md := newFakeSource(), &metadata{block: block}
		src.put(3, "ens3", "52:54:00:00:00:03", "virtio_net", false)
		h := startHarness(t, src, md, Options{})
		waitFor(t, "a fetch", func() bool { return h.w.Stats().Fetches >= 1 })
		h.stop()
	}
	settled := func() bool { return runtime.NumGoroutine() <= before }
	deadline := time.Now().Add(5 * time.Second)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !settled() {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

func TestNewChecksOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without Fetch and Apply succeeded")
	}
	md := &metadata{}
	if _, err := New(Options{Fetch: md.fetch, Apply: md.apply, Backoff: []time.Duration{time.Second, 0}}); err == nil ||
		!strings.Contains(err.Error(), "backoff step 2") {
		t.Errorf("zero backoff step: %v", err)
	}
}

// Options.Outcome hears of every apply made for a NIC and of giving up,
// with the NIC's name and MAC: what seedkeeper watch records for
// "seedkeeper status".
func TestWatchReportsOutcomes(t *testing.T) {
	const boot, ok, partial, none = "52:54:00:00:00:30", "52:54:00:00:00:31", "52:54:00:00:00:32", "52:54:00:00:00:33"
	var mu sync.Mutex
	var got []Outcome
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{boot: 1, ok: 1}}
	src.put(10, "eth0", boot, "virtio_net", false) // there at start
	h := startHarness(t, src, md, Options{Outcome: func(o Outcome) {
		mu.Lock()
		got = append(got, o)
		mu.Unlock()
	}})
	outcomes := func() []Outcome { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
	h.waitReady()
	waitFor(t, "eth0's outcome", func() bool { return len(outcomes()) == 1 })
	src.put(11, "eth1", ok, "virtio_net", false)
	waitFor(t, "eth1's outcome", func() bool { return len(outcomes()) == 2 })

	md.mu.Lock()
	md.learnAt[partial] = 1
	md.applyErr = fmt.Errorf("%w: 1 of 2 operations failed: add 192.0.2.5/24: file exists\nmore", apply.ErrPartial)
	md.mu.Unlock()
	src.put(12, "eth2", partial, "virtio_net", false)
	// The first try and two of the backoff, then the last try, which
	// gives up: each apply is told once.
	waitFor(t, "eth2's outcomes", func() bool { return len(outcomes()) == 6 })
	md.mu.Lock()
	md.applyErr = nil
	md.mu.Unlock()
	src.put(13, "eth3", none, "virtio_net", false) // never listed
	waitFor(t, "eth3's outcome", func() bool { return len(outcomes()) == 7 })
	// A link that is not allowlisted comes and goes unheard; eth1's
	// removal, after it on the same channel, is heard.
	src.put(20, "veth0", "52:54:00:00:00:20", "veth", false)
	src.del(20)
	src.del(11)
	waitFor(t, "eth1's removal", func() bool { return len(outcomes()) >= 8 })
	if o := outcomes(); len(o) != 8 || o[7] != (Outcome{Name: "eth1", MAC: ok, Result: Removed}) {
		t.Errorf("outcomes after removals: %+v", o[7:])
	}

	o := outcomes()
	if o[0] != (Outcome{Name: "eth0", MAC: boot, Result: Applied, AtStart: true}) {
		t.Errorf("outcome of the NIC there at start %+v", o[0])
	}
	o = o[1:]
	if o[0] != (Outcome{Name: "eth1", MAC: ok, Result: Applied}) {
		t.Errorf("outcome of an added NIC %+v", o[0])
	}
	for _, x := range o[1:4] {
		if x.Name != "eth2" || x.MAC != partial || x.Result != Partial || !errors.Is(x.Err, apply.ErrPartial) {
			t.Errorf("outcome of a partial apply: %+v", x)
		}
	}
	if x := o[4]; x.Name != "eth2" || x.Result != GaveUp || x.Err == nil || !strings.Contains(x.Err.Error(), "the last attempt failed: network applied partially") || !errors.Is(x.Err, apply.ErrPartial) {
		t.Errorf("outcome of the last try, which gives up: %+v", x)
	}
	if x := o[5]; x.Name != "eth3" || x.MAC != none || x.Result != GaveUp || !strings.Contains(x.Err.Error(), "the metadata did not list it") {
		t.Errorf("outcome of a NIC the metadata never listed: %+v", x)
	}
	if st := h.w.Stats(); st.Applies != 6 {
		t.Errorf("%d applies, want 6 (eth0, eth1, eth2's four): each outcome but the last two is one", st.Applies)
	}
}

// udev's records under a root are read inside it: a record that is a link
// out of the root (to a file the host has) is not udev's record of the
// NIC, so the NIC waits for the real one.
func TestWatchUdevRecordInRoot(t *testing.T) {
	root, host := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "run/udev/data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "n15"), []byte("I:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(host, "n15"), filepath.Join(dir, "n15")); err != nil {
		t.Fatal(err)
	}
	src, md := newFakeSource(), &metadata{learnAt: map[string]int{"52:54:00:00:00:0f": 1}}
	h := startHarness(t, src, md, Options{UdevRoot: root, UdevDataDir: "/run/udev/data", SettleTimeout: time.Hour, Debounce: time.Millisecond})
	h.waitReady()
	src.put(15, "eth0", "52:54:00:00:00:0f", "virtio_net", false)
	waitFor(t, "the event", func() bool { return h.w.Stats().Events == 1 })
	time.Sleep(50 * time.Millisecond)
	if st := h.w.Stats(); st.Fetches != 0 {
		t.Fatalf("took a link out of the root for udev's record: %+v", st)
	}
	if err := os.Remove(filepath.Join(dir, "n15")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "n15"), []byte("I:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an apply", func() bool { return h.w.Stats().Applied == 1 })
}
