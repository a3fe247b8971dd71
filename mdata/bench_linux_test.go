package mdata_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// bootKeys is the sequence cloud-init 22.4.2 sends at boot
// (testdata/smartos/cloud-init-22.4.2-kvm-requests.txt), less its extra
// KEYS: 18 requests in one session.
var bootKeys = []string{
	"sdc:uuid", "hostname", "root_authorized_keys", "user-script", "user-data",
	"cloud-init:user-data", "iptables_disable", "motd_sys_info", "sdc:datacenter_name",
	"sdc:vendor-data", "sdc:operator-script", "sdc:hostname", "sdc:dns_domain",
	"sdc:nics", "sdc:resolvers", "sdc:routes", "sdc:uuid", "hostname",
}

// One GET over a pty in process, with the session already open.
func BenchmarkIntegrationGetPTY(b *testing.B) {
	_, path := startPTY(b, mdatatest.Default())
	c := mdata.New(mdata.Serial(path), nil)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Get(ctx, "sdc:uuid"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Get(ctx, "sdc:uuid"); err != nil {
			b.Fatal(err)
		}
	}
}

// One GET over a pty with a new session each time: open, lock, drain,
// probe, negotiate, request. The drain's quiet gap (Timeouts.Drain)
// dominates; side by side, the same with the reference client's 100 ms of
// silence.
func BenchmarkIntegrationSessionGetPTY(b *testing.B) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
	}{{"drain=default", 0}, {"drain=100ms", 100 * time.Millisecond}} {
		b.Run(tc.name, func(b *testing.B) {
			_, path := startPTY(b, mdatatest.Default())
			ctx := context.Background()
			for b.Loop() {
				c := mdata.New(mdata.Serial(path), &mdata.Options{Timeouts: mdata.Timeouts{Drain: tc.drain}})
				if _, err := c.Get(ctx, "sdc:uuid"); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

// A whole mdata-get process, as a script would run it.
func BenchmarkIntegrationMdataGetProcess(b *testing.B) {
	dir := buildTools(b)
	_, path := startPTY(b, mdatatest.Default())
	for b.Loop() {
		r := runTool(b, dir, path, "", time.Minute, "mdata-get", "sdc:uuid")
		if r.code != 0 {
			b.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	}
}

// The 18-key boot sequence in one session.
func BenchmarkIntegrationBootSequencePTY(b *testing.B) {
	_, path := startPTY(b, mdatatest.Default())
	ctx := context.Background()
	for b.Loop() {
		c := mdata.New(mdata.Serial(path), nil)
		for _, k := range bootKeys {
			if _, err := c.Get(ctx, k); err != nil && !isNotFound(err) {
				b.Fatal(err)
			}
		}
		c.Close()
	}
}

func isNotFound(err error) bool { return errors.Is(err, mdata.ErrNotFound) }

// The time from the host coming back to the answer: the host is down when
// the request starts and comes up after 1.5 s; the metric is what the
// client took after that (the default timeouts).
func BenchmarkIntegrationRecoveryPTY(b *testing.B) {
	h, path := startPTY(b, mdatatest.Default())
	var total time.Duration
	for b.Loop() {
		h.Down()
		c := mdata.New(mdata.Serial(path), nil)
		done := make(chan time.Time, 1)
		go func() {
			c.Get(context.Background(), "sdc:uuid")
			done <- time.Now()
		}()
		time.Sleep(1500 * time.Millisecond)
		up := time.Now()
		h.Up()
		total += (<-done).Sub(up)
		c.Close()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-after-up/op")
}

// A reply cut off mid-line (the Drop fault on a pty: half the reply, then
// nothing): the whole Get, which the inactivity timeout (Timeouts.Idle)
// and a new session make up, instead of the 5 s read timeout.
func BenchmarkIntegrationCutOffRecoveryPTY(b *testing.B) {
	h, path := startPTY(b, mdatatest.Default())
	ctx := context.Background()
	for b.Loop() {
		h.SetFault(mdatatest.Fault{Mode: mdatatest.Drop, Count: 1})
		c := mdata.New(mdata.Serial(path), nil)
		if v, err := c.Get(ctx, "sdc:uuid"); err != nil || string(v) != mdatatest.SampleUUID {
			b.Fatalf("Get = %q, %v", v, err)
		}
		c.Close()
	}
}

// The host restarts after reading a GET and before answering it: the time
// from the restart to the answer, which the nudge (Timeouts.Nudge) makes
// up, instead of the 5 s read timeout.
func BenchmarkIntegrationRestartRecoveryPTY(b *testing.B) {
	h, path := startPTY(b, mdatatest.Default())
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		c := mdata.New(mdata.Serial(path), nil)
		if _, err := c.Get(ctx, "hostname"); err != nil { // the session is open
			b.Fatal(err)
		}
		h.SetFault(mdatatest.Fault{Mode: mdatatest.Late, Count: 1, Delay: time.Hour})
		gets := h.Stats().Requests["GET"]
		done := make(chan time.Time, 1)
		go func() {
			if v, err := c.Get(ctx, "sdc:uuid"); err != nil || string(v) != mdatatest.SampleUUID {
				b.Errorf("Get = %q, %v", v, err)
			}
			done <- time.Now()
		}()
		if err := h.Wait(ctx, func(st mdatatest.Stats) bool { return st.Requests["GET"] > gets }); err != nil {
			b.Fatal(err)
		}
		restart := time.Now()
		h.Restart()
		total += (<-done).Sub(restart)
		c.Close()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-after-restart/op")
}
