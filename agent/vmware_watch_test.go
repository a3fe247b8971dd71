package agent

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

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// A burst of address or route events makes one reconcile, not one each
// (before, every event read the links and the routing table again).
func TestLocalIPWatchBoundsReconciles(t *testing.T) {
	e := &Env{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w := e.newLocalIPWatch(&Status{Source: "vmware", Transport: "vmware-rpctool",
		VMware: &VMwareStatus{}, Network: &NetResult{Action: "applied"}})
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
	for name, after := range map[string]ownedAddrs{
		"address gone":    {Links: []ownedLink{{Name: "eth0"}}, Def6: "eth0"},
		"address as held": {Links: []ownedLink{{Name: "eth0", V6: []netip.Addr{held}}}, Def6: "eth0"},
	} {
		t.Run(name, func(t *testing.T) {
			calls := refusingRPCTool(t)
			root, rec, _, _ := recorderRoot(t, testBootA)
			e := &Env{Root: sysroot.Root(root), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			w := e.newLocalIPWatch(&Status{Source: "vmware", Transport: "vmware-rpctool",
				VMware:  &VMwareStatus{Published: []string{"guestinfo.local-ipv6 " + held.String()}},
				Network: &NetResult{Action: "applied", Links: []string{"eth0"}}})
			w.rec = rec
			now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
			w.now = func() time.Time { return now }
			addrs := ownedAddrs{Links: []ownedLink{{Name: "eth0", V6: []netip.Addr{failed}}}, Def6: "eth0"}
			w.read = func(int, []string) (ownedAddrs, error) { return addrs, nil }

			if next := w.reconcile(context.Background()); !next.Equal(now.Add(retryFirst)) {
				t.Fatalf("after the failed set: next retry %v", next)
			}
			if f := readRecord(t, root).Key("guestinfo.local-ipv6").Failed; f == nil || f.RetryAt.IsZero() {
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
			f := readRecord(t, root).Key("guestinfo.local-ipv6").Failed
			if f == nil || f.Value != failed.String() || !strings.Contains(f.Error, "Permission denied") || !f.RetryAt.IsZero() {
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
