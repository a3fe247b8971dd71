// Package datasource reads instance metadata from the platforms seedkeeper
// supports (SmartOS/Triton mdata, VMware guestinfo and NoCloud seeds) and
// turns each into one Metadata value: instance ID, hostname, keys, user-data,
// vendor-data, network configuration and the machine identity, together with
// where each came from.
//
// Each source is one Source value in one table (Names, Lookup): its name,
// the platforms it serves and their default NIC driver allowlist, the
// metadata key that sets the allowlist, whether its network document is
// cloud-init's, and its detect and read functions. Every source has the
// same two entry points, DetectX(ctx, Options) (Detection, error) and
// ReadX(ctx, Options) (*Metadata, error); Detect and Fetch try the table
// in order. Options hold plain values only (a root directory, not a
// type of this module's internals).
package datasource
