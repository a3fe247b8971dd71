// Package nohang is for tests of code that must not block on what it is
// given (a FIFO, a device, a slow peer): Run fails such a test at once
// instead of hanging the suite. Its bound is a guard far above any honest
// run, never a timed assertion.
package nohang

import (
	"testing"
	"time"
)

// Bound is how long Run waits before it declares fn blocked.
const Bound = 30 * time.Second

// Run runs fn and fails tb with "what did not return" if fn has not
// returned within Bound. fn must not call tb.FailNow (use Error).
func Run(tb testing.TB, what string, fn func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(Bound):
		tb.Fatalf("%s did not return within %s: it blocks", what, Bound)
	}
}
