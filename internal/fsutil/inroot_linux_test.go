//go:build linux

package fsutil

import "testing"

// walks are the two implementations of the confined lookup on Linux.
var walks = []struct {
	name string
	set  func(testing.TB)
}{
	{"openat2", func(tb testing.TB) { noOpenat2.Store(false) }},
	{"portable", func(tb testing.TB) {
		noOpenat2.Store(true)
		tb.Cleanup(func() { noOpenat2.Store(false) })
	}},
}
