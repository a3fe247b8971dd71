package apply

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
)

// interrupted returns a dump function that fails with ErrDumpInterrupted
// (and a partial answer, as the library does) n times, then answers.
func interrupted(n int, calls *int) func() ([]string, error) {
	return func() ([]string, error) {
		*calls++
		if *calls <= n {
			return []string{"partial"}, netlink.ErrDumpInterrupted
		}
		return []string{"a", "b"}, nil
	}
}

func TestRetryDump(t *testing.T) {
	ctx := context.Background()
	for n := range dumpTries {
		calls := 0
		got, err := retryDump(ctx, "links", interrupted(n, &calls))
		if err != nil || len(got) != 2 || calls != n+1 {
			t.Errorf("%d interruptions: %v, %v after %d calls; want the full answer", n, got, err, calls)
		}
	}

	calls := 0
	got, err := retryDump(ctx, "links", interrupted(dumpTries, &calls))
	if !errors.Is(err, netlink.ErrDumpInterrupted) || got != nil || calls != dumpTries ||
		!strings.Contains(err.Error(), "listing links: interrupted 5 times in a row") {
		t.Errorf("always interrupted: %v, %v after %d calls", got, err, calls)
	}

	calls = 0
	_, err = retryDump(ctx, "routes", func() ([]string, error) { calls++; return nil, syscall.EPERM })
	if !errors.Is(err, syscall.EPERM) || calls != 1 || !strings.HasPrefix(err.Error(), "listing routes: ") {
		t.Errorf("other error: %v after %d calls, want EPERM at once", err, calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls = 0
	if _, err := retryDump(cctx, "links", interrupted(0, &calls)); !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("cancelled context: %v after %d calls", err, calls)
	}
}
