package mdata_test

import (
	"context"
	"testing"

	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// The drain of a shared line on a pty: nothing pending (the quiet gap
// alone, what every session start pays), and 64 KiB of a killed client's
// reply pending (read at once, then the gap).
func BenchmarkIntegrationDrainPTY(b *testing.B) {
	for _, pending := range []int{0, 64 << 10} {
		name := "quiet"
		if pending > 0 {
			name = "64KiB-pending"
		}
		b.Run(name, func(b *testing.B) {
			h := mdatatest.NewHost(nil)
			p, err := h.StartPTY()
			if err != nil {
				b.Skipf("no pty here (%v)", err)
			}
			defer h.Close()
			conn, err := mdata.Serial(p.Path()).Open(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			drain := mdata.Drainer(conn)
			stale := make([]byte, pending)
			for i := range stale {
				stale[i] = 'x'
			}
			for b.Loop() {
				done := make(chan error, 1)
				if pending > 0 {
					// A pty takes 4 KiB at a time: the drain reads the rest
					// as the host writes it.
					go func() { done <- h.InjectOutput(stale) }()
				} else {
					done <- nil
				}
				if err := drain(); err != nil {
					b.Fatal(err)
				}
				// The host's writer may have paused past the gap: read
				// the rest, untimed, before the next round.
				b.StopTimer()
				for finished := false; !finished; {
					select {
					case err := <-done:
						if err != nil {
							b.Fatal(err)
						}
						finished = true
					default:
						drain()
					}
				}
				drain()
				b.StartTimer()
			}
		})
	}
}
