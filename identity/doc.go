// Package identity decides the instance ID seedkeeper hands to cloud-init
// and keeps it stable. Its inputs are the ID the metadata source reported,
// the machine identity (DMI product_uuid, or sdc:uuid on SmartOS), the raw
// NoCloud user-data and network-config, cloud-init's own current ID
// (/var/lib/cloud/data/instance-id) and the pin kept in
// /var/lib/seedkeeper/identity.json.
//
// Nothing that means "unknown" is ever pinned, adopted or taken for a
// machine identity. unknown.go holds the table of such values, each with
// where it comes from: cloud-init's placeholder "iid-datasource-none" (and
// any run whose recorded datasource is DataSourceNone, read from
// /var/lib/cloud/instance/datasource and /run/cloud-init/instance-data.json,
// either of which may be missing), an empty instance-id file, all-zero and
// all-F UUIDs, firmware strings such as "Not Settable" or "Default string",
// and UUIDs every board of a model shares.
//
// The rules (docs/design.md, "Identity rules"), checked in this order:
//
//   - Rule 9, the source reported a placeholder as its ID: it is passed
//     through unchanged and nothing is pinned or changed.
//   - Rule 5, no machine identity (none readable, or one of the unknown
//     values above): the reported ID is passed through unchanged, as
//     cloud-init would use it; the pin is left as it is and a pending reset
//     stays pending.
//   - A pin that is a placeholder (made by an earlier version) is dropped:
//     there is no pin.
//   - No pin yet: a pending reset wins (see Reset); otherwise rule 3, if
//     cloud-init already ran here with a real ID, its current ID is pinned
//     so that installing seedkeeper changes nothing; otherwise (first run,
//     rule 6) the reported ID is pinned. A placeholder cloud-init ran with
//     is not adopted: the first boot with a real source after boots
//     without one is a first run, a new instance for cloud-init with new
//     SSH host keys, and the explanation says why.
//   - Rule 4, the machine identity differs from the pin's (a clone, a disk
//     copied to another VM): the pin is dropped and the reported ID is
//     pinned. When the reported ID equals the dropped pin or cloud-init's
//     current ID (a template with a fixed ID, NoCloud's default "nocloud"),
//     "-m" and 8 hex digits of SHA-1(machine identity) are appended, so
//     that the clone really is a new instance and gets new SSH host keys.
//   - A pending reset (rule 7) gives a new ID, see Reset.
//   - Rule 2, an explicit reported ID that differs both from the pin and
//     from the ID reported when the state was last written (an operator set
//     a new one: Proxmox cicustom meta=, VMware metadata, sdc:uuid) is
//     honoured and pinned. Comparing with the last reported ID too is what
//     keeps an adopted (rule 3) or reset (rule 7) pin stable while the
//     source keeps reporting the same explicit ID.
//   - Rule 1, otherwise the same machine keeps its pin: the reported ID is
//     derived from config (NoCloud: the hex SHA-1 of the user-data bytes
//     followed by the network-config bytes, which is how Proxmox makes its
//     ID, so a changed host resolv.conf changes it), NoCloud's default
//     "nocloud" (not an identity either, treated like a derived ID), or an
//     explicit ID that has not changed.
//
// If the state file cannot be read or parsed, Decide does not start over:
// it keeps cloud-init's current ID (or, when cloud-init never ran, passes
// the reported ID through), leaves the file untouched for a person to look
// at, and returns that decision together with an error wrapping
// ErrBadState. Removing the file makes the next boot re-adopt cloud-init's
// current ID by rule 3.
//
// The state file holds IDs, hashes of nothing secret and timestamps; it is
// written atomically, 0644, only when its content changes (the confirmation
// time changes on every decision that keeps a pin).
//
// # Stability
//
// This package is seedkeeper's own plumbing, not part of its stable API
// (mdata, mdata/mdatatest, datasource, netcfg): it may change in any
// release, and its exported signatures may name internal types (such as
// the --root of internal/sysroot). It may move under internal/ later.
package identity
