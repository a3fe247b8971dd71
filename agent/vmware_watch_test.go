package agent

import (
	"context"
	"io"
	"log/slog"
	"testing"
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
