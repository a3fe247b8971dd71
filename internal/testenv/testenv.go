// Package testenv holds the one rule every integration test of seedkeeper
// follows: a test named TestIntegration... (root, network namespaces,
// ptys, seed images, package builds, QEMU, real protocol timeouts) calls
// Integration first, so that `go test -short` (`make check`, the loop
// before every commit) skips it with a message saying how to run it, and
// `make test` runs it.
package testenv

import "testing"

// Integration skips tb under -short, saying how to run it. Call it first in
// every TestIntegration... test; a test that also needs root checks that
// where it needs it (nstest.New does for a network namespace).
func Integration(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test (root, namespaces, tools or real timeouts): not run under -short; `sudo make test` runs it")
	}
}
