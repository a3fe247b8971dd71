// Package hotplug keeps the network of owned NICs applied while the machine
// runs: it subscribes to rtnetlink link events, lists the existing links,
// reconciles them against the metadata, and handles NICs added later, for
// drivers on the allowlist only.
//
// # Flow
//
// Watcher.Run (or Watch) subscribes to RTM_NEWLINK/RTM_DELLINK first and
// only then lists the links, so a NIC added before or during start is seen
// in the list or as an event (cloud-init GH #4863 lost those). Links are
// keyed by ifindex and MAC; a new MAC on an old ifindex is a new NIC. Each
// link is judged once, when first seen:
//
//   - not ethernet-like (loopback, tunnels without a MAC): ignored;
//   - driver read with ETHTOOL_GDRVINFO on a socket opened inside the
//     watched namespace; not on the Allowlist: ignored. Ignored links cost
//     no metadata fetch and no netlink write, whatever events follow, so a
//     docker veth storm (cloud-init LP #1946003) costs one ioctl per link;
//   - allowlisted: pending.
//
// The first event for an allowlisted link starts a fetch at once; the
// reconcile is level-triggered, so the events that follow (udev's rename,
// the link going up, the addresses our own apply adds) find the link
// applied, keyed by ifindex and MAC, and cost nothing. Pending links are
// coalesced: one fetch serves every pending NIC, and links added while a
// fetch runs are served together by the next. Options.Debounce can add a
// quiet window before the first fetch (at most five windows for a burst
// that goes on). When udev runs (its data directory exists), a new NIC
// also waits until udev has written /run/udev/data/n<ifindex>, that is
// until its rename is done, or Options.SettleTimeout (5 s) has passed.
//
// Each fetch calls Options.Fetch. NICs whose MAC the configuration lists
// are applied together with one call to Options.Apply, for those MACs only.
// NICs it does not list yet (the metadata lags the device, cloud-init GH
// #5373) are fetched for again after 1, 3, 5, 10 and 30 s (Options.Backoff);
// after the last wait the watcher gives up on the NIC, logs it, and tries
// again only when the NIC is added again (or on the next boot). A nil
// configuration means the metadata has no network: the NIC is left alone
// with no more fetches. Failed fetches and applies count as attempts.
// Remove events change nothing on the machine; they only clear the pending
// state. A lost subscription (ENOBUFS in a storm) is made again and the
// links listed again.
//
// Options.Ready is called once the links present at start have been judged
// and fetched for once; Options.Status whenever what the watcher does
// changes; Options.Outcome with what became of a NIC (applied, applied in
// part, failed, given up, removed), once after each apply made for it,
// when it is given up on and when it is removed: that is how seedkeeper
// watch records its work for seedkeeper status. Run returns when its
// context is done, after any fetch or apply in flight has returned, with
// no goroutine left behind.
//
// The watcher writes nothing itself: no identity, no seed, no file at all.
// It only calls Fetch and Apply. NetlinkApplier is the Apply that uses
// netcfg/apply, restricted to the new NICs with Only.
//
// # Allowlist
//
// ResolveAllowlist picks the metadata's value (VMware network-drivers,
// seedkeeper:network-drivers elsewhere), else the config's hotplug.drivers,
// else the platform default. A value that cannot be read or parsed allows
// nothing and says why: a typo closes the gate, never opens it.
//
// # Tests
//
// The unit tests run the watch loop on a fake link source and need no
// privileges:
//
//	go test -race ./hotplug/
//
// The TestIntegration tests and the BenchmarkIntegration benchmarks need
// root (network namespaces, veth and bridge links) and iproute2 for the
// storm; `sudo make test` installs what is missing and runs them. Each
// makes its own named namespaces and removes them.
//
//	go test -race -run Integration ./hotplug/
//	go test -run '^$' -bench Integration -benchtime 5x ./hotplug/
//
// # Stability
//
// This package is seedkeeper's own plumbing, not part of its stable API
// (mdata, mdata/mdatatest, datasource, netcfg): it may change in any
// release, and its exported signatures may name internal types (such as
// the --root of internal/sysroot). It may move under internal/ later.
package hotplug
