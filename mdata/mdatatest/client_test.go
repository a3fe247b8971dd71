package mdatatest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// TestClient: a client from Host.Client reads, writes and lists through
// one session; the host sees the requests on the wire, a socket-like
// (unshared) stream, so no drain and one handshake.
func TestClient(t *testing.T) {
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	c := h.Client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if v, err := c.Get(ctx, "sdc:uuid"); err != nil || string(v) != mdatatest.SampleUUID {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := c.Put(ctx, "role", []byte("db")); err != nil {
		t.Fatal(err)
	}
	if v, ok := h.Store().Get("role"); !ok || string(v) != "db" {
		t.Errorf("store holds %q, %v after Put", v, ok)
	}
	if err := c.Delete(ctx, "role"); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Store().Get("role"); ok {
		t.Error("role still stored after Delete")
	}
	if _, err := c.Keys(ctx); err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	if st.Streams != 1 || st.Negotiations != 1 || st.Served != 4 {
		t.Errorf("streams %d, negotiations %d, served %d; want one session serving 4 requests", st.Streams, st.Negotiations, st.Served)
	}
	if tr := h.Transport(); tr.Shared() || tr.String() == "" {
		t.Errorf("transport %q: Shared %v, want an unshared, named transport", tr, tr.Shared())
	}
}

// TestTransportSessions: every Open is a new stream of its own, and a
// client with its own options recovers from a fault over it.
func TestTransportSessions(t *testing.T) {
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	tr := h.Transport()
	ctx := context.Background()
	a, err := tr.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := tr.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n := h.Stats().Streams; n != 2 {
		t.Errorf("two opens made %d streams", n)
	}

	h.SetFault(mdatatest.Fault{Mode: mdatatest.Drop, Count: 1})
	c := mdata.New(tr, &mdata.Options{Timeouts: mdata.Timeouts{Read: 50 * time.Millisecond, Nudge: time.Hour}})
	defer c.Close()
	if v, err := c.Get(ctx, "sdc:hostname"); err != nil || string(v) != "web01" {
		t.Fatalf("Get after a dropped reply = %q, %v", v, err)
	}
	if h.Stats().Faults != 1 {
		t.Errorf("the fault acted %d times, want 1", h.Stats().Faults)
	}
}

// TestTransportClosed: once the host is closed, Open fails with ErrClosed,
// and a session open at the time ends (its reads fail) instead of hanging.
func TestTransportClosed(t *testing.T) {
	h := mdatatest.NewHost(nil)
	tr := h.Transport()
	conn, err := tr.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h.Close()
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("a session survived the host's Close")
	}
	if _, err := tr.Open(context.Background()); !errors.Is(err, mdatatest.ErrClosed) {
		t.Errorf("Open after Close: %v, want ErrClosed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mdatatest.NewHost(nil).Transport().Open(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Open with an ended context: %v", err)
	}
}

// TestTransportOpenDuringClose: opens racing Close either fail with
// ErrClosed or give a session that Close ends; Close waits for all of
// them (the race detector checks the WaitGroup).
func TestTransportOpenDuringClose(t *testing.T) {
	h := mdatatest.NewHost(nil)
	tr := h.Transport()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := tr.Open(context.Background())
			if err != nil {
				if !errors.Is(err, mdatatest.ErrClosed) {
					t.Errorf("Open: %v", err)
				}
				return
			}
			conn.Write([]byte("\n"))
			conn.Close()
		}()
	}
	h.Close()
	wg.Wait()
}
