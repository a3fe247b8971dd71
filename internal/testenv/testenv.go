// Package testenv holds the rule that keeps `go test -short` (`make check`,
// the loop before every commit) short: a test named TestIntegration...
// (root, network namespaces, ptys, seed images, package builds, QEMU, real
// protocol timeouts) calls Integration first, and a test that runs a real
// tool over a corpus calls SkipShort; under -short each is skipped with a
// message saying how to run it, and `make test` runs them all.
package testenv

import "testing"

// Integration skips tb under -short, saying how to run it. Call it first in
// every TestIntegration... test; a test that also needs root checks that
// where it needs it (nstest.New does for a network namespace).
func Integration(tb testing.TB) {
	tb.Helper()
	SkipShort(tb, "integration test (root, namespaces, tools or real timeouts)")
}

// SkipShort skips tb under -short, saying why it is left out of the short
// loop (a real tool run as an oracle over a corpus, say) and that
// `make test` runs it.
func SkipShort(tb testing.TB, why string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("%s: not run under -short; `sudo make test` runs it", why)
	}
}
