//go:build !linux

package fsutil

import "testing"

// walks is the one implementation of the confined lookup here.
var walks = []struct {
	name string
	set  func(testing.TB)
}{
	{"portable", func(testing.TB) {}},
}
