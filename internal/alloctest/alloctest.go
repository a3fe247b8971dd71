// Package alloctest measures what a piece of code allocates, for tests
// that hold a bound before the cost: a hostile input must be refused for
// what its bound allows, not for what it asks.
package alloctest

import "runtime"

// Bytes returns the bytes allocated (by every goroutine, a simulated
// host's included) while f runs. It counts allocations, not time, and
// not what was freed: a chain of growing copies counts whole.
func Bytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
