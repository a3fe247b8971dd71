// Package bench measures seedkeeper against the tools users run today and
// counts how its readers behave when the input or the host misbehaves.
//
// Its data comes from the simulated SmartOS host agent (mdata/mdatatest)
// served over a pty or a unix socket, the seed image fixtures in
// testdata/nocloud, and the network configuration fixtures and fuzz
// corpora in testdata/netcfg and netcfg/testdata/fuzz.
//
// Two things live here:
//
//   - The fault matrix (RunMdataMatrix, RunSeedMatrix, RunNetMatrix): every
//     fault mode of the simulated host, plus host restarts, a socket that
//     disappears and comes back, concurrent clients and awkward values, each
//     run many times against the mdata client library and the built
//     mdata-get binary, counting correct answers, correct errors, wrong
//     values and hangs; and the seed readers and network parsers on
//     corrupted and fuzz-found inputs, counting clean errors and panics.
//     TestIntegrationFaultMatrix runs a short form in CI and asserts that
//     no run returned a wrong value, hung or panicked.
//   - The pieces of the benchmark harness (cmd/skbench): timing samples
//     (Sample), the machine description (Machine) and the results page
//     (UpdateSection writes one generated section of BENCHMARKS.md).
//
// The harness is a program rather than Go benchmarks because what it
// compares are whole processes (a Python interpreter importing cloud-init,
// isoinfo, mtools) run side by side against one simulated host, with
// host-side timestamps, and its output is a page, not ns/op lines.
//
// # Stability
//
// This package serves seedkeeper's own tests and tools and has no stable
// API: it may change in any release.
package bench
