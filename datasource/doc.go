// Package datasource reads instance metadata from the platforms seedkeeper
// supports (SmartOS/Triton mdata, VMware guestinfo and NoCloud seeds) and
// turns each into one Metadata value: instance ID, hostname, keys, user-data,
// vendor-data, network configuration and the machine identity, together with
// where each came from.
//
// Each source is one Source value in one table (Names, Lookup): its name,
// the platforms it serves and their default NIC driver allowlist, the
// metadata key that sets the allowlist, whether its network document is
// cloud-init's, and its detect and read functions. Every source is read
// the same way: Read(ctx, name, Options) by its name, or ReadDetected
// going on from what Detect found; Detect and Fetch try the table in
// order. Options hold plain values only (a root directory, not a type of
// this module's internals).
//
// # Stability
//
// This package is part of seedkeeper's stable API, with mdata, mdata/mdatatest and netcfg. Within a major
// version its exported names keep their meaning and are not removed; before
// 1.0.0 a minor release may change them, and CHANGELOG.md says how under
// "Breaking". No exported signature mentions an internal package: all of it
// can be used from another module, with values computed at run time.
package datasource
