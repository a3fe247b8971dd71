package datasource

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/linkaddr"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// failures is a sourceduty.Recorder that keeps the last failure of each
// key, as the watch record does: a retry that ends clears its time.
type failures struct{ m map[string]*failure }

type failure struct {
	value, err string
	retry      time.Time
}

func (r *failures) Published(key, _ string) { delete(r.m, key) }
func (r *failures) SetFailed(key, value string, err error, retry time.Time) {
	if r.m == nil {
		r.m = map[string]*failure{}
	}
	r.m[key] = &failure{value, err.Error(), retry}
}
func (r *failures) Customized([]string, string) {}
func (r *failures) RetryEnded(key string) {
	if f := r.m[key]; f != nil {
		f.retry = time.Time{}
	}
}

// A burst of address or route events makes one reconcile, not one each
// (before, every event read the links and the routing table again).
func TestLocalIPWatchBoundsReconciles(t *testing.T) {
	h := &sourceduty.Host{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Links: linkaddr.Links{}}
	w := newLocalIPWatch(h, sourceduty.Boot{Source: "vmware", Transport: "vmware-rpctool",
		Extra: sourceduty.Extra{VMware: &sourceduty.VMwareStatus{}}, Net: sourceduty.Net{Action: "applied"}}, nil)
	events := make(chan struct{}) // unbuffered: each send is taken by the loop
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.loop(ctx, events); close(done) }()
	for range 200 {
		events <- struct{}{}
	}
	n := w.reconciles.Load()
	cancel()
	<-done
	// The first reconcile, and at most one a second after it for the burst.
	if n > 2 {
		t.Errorf("200 events made %d reconciles, want at most 2", n)
	}
}

// After a failed set, the address it was for may go, or come back to
// the one the VMX holds: then there is nothing to try again. The
// back-off ends when due (before, it stayed due for ever, and the loop
// read the links and routes every second for nothing), and the record
// keeps the failure without a retry time that will not come.
func TestLocalIPWatchEndsMootRetry(t *testing.T) {
	held, failed := netip.MustParseAddr("2001:db8:7::71"), netip.MustParseAddr("2001:db8:7::99")
	for name, after := range map[string]sourceduty.Addrs{
		"address gone":    {Links: []sourceduty.Link{{Name: "eth0"}}, Def6: "eth0"},
		"address as held": {Links: []sourceduty.Link{{Name: "eth0", V6: []netip.Addr{held}}}, Def6: "eth0"},
	} {
		t.Run(name, func(t *testing.T) {
			calls := refusingRPCTool(t)
			rec := &failures{}
			h := &sourceduty.Host{Root: sysroot.Root(t.TempDir()), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Links: linkaddr.Links{}}
			w := newLocalIPWatch(h, sourceduty.Boot{Source: "vmware", Transport: "vmware-rpctool",
				Extra: sourceduty.Extra{VMware: &sourceduty.VMwareStatus{Published: []string{"guestinfo.local-ipv6 " + held.String()}}},
				Net:   sourceduty.Net{Action: "applied", Links: []string{"eth0"}}}, rec)
			now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
			w.now = func() time.Time { return now }
			addrs := sourceduty.Addrs{Links: []sourceduty.Link{{Name: "eth0", V6: []netip.Addr{failed}}}, Def6: "eth0"}
			w.read = func([]string) (sourceduty.Addrs, error) { return addrs, nil }

			if next := w.reconcile(context.Background()); !next.Equal(now.Add(retryFirst)) {
				t.Fatalf("after the failed set: next retry %v", next)
			}
			if f := rec.m["guestinfo.local-ipv6"]; f == nil || f.retry.IsZero() {
				t.Fatalf("the failure is not recorded with its retry: %+v", f)
			}
			addrs = after
			now = now.Add(retryFirst / 2)
			if next := w.reconcile(context.Background()); !next.Equal(now.Add(retryFirst / 2)) {
				t.Errorf("before the back-off ends: next retry %v", next)
			}
			now = now.Add(retryFirst)
			if next := w.reconcile(context.Background()); !next.IsZero() {
				t.Errorf("nothing to set, yet a retry at %v (in the past: the loop wakes every second)", next)
			}
			f := rec.m["guestinfo.local-ipv6"]
			if f == nil || f.value != failed.String() || !strings.Contains(f.err, "Permission denied") || !f.retry.IsZero() {
				t.Errorf("the record's failure: %+v", f)
			}
			if b, _ := os.ReadFile(calls); strings.Count(string(b), "guestinfo.local-ipv6 ") != 1 {
				t.Errorf("vmware-rpctool ran:\n%s\nwant the one set that failed", b)
			}
		})
	}
}

// refusingRPCTool puts in $PATH a vmware-rpctool that refuses every
// info-set, as a VMX with isolation.tools.setinfo.disable does, and
// returns the file it logs its calls to.
func refusingRPCTool(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls.log")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + calls + "\necho 'Permission denied' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "vmware-rpctool"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	return calls
}
