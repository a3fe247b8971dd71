// Package intent carries what an admin changed on purpose in the metadata
// to an instance whose ID seedkeeper keeps: a new SSH key, a removed one,
// a new password or hostname reaches the VM at the next boot, while the
// instance ID, the SSH host keys and cloud-init's per-instance history
// stay (docs/changes.md).
//
// Its data comes from the metadata a boot read (datasource.Metadata) and
// from its own record of the last boot, /var/lib/seedkeeper/changes.json:
// a salted digest per setting (never a password or key in clear) and the
// receipt of the SSH keys that are in a user's authorized_keys because the
// metadata put them there. Compare is the pure comparison of two records;
// Apply is the boot step: on the first boot of an instance it only
// records (cloud-init applies everything then), on a kept instance it
// applies what changed (keys and passwords itself, the rest by handing
// cloud-init the new seed) and says what waits for a new instance.
//
// # Stability
//
// The package is internal to seedkeeper's boot flow; its JSON forms
// (Record, Result) are what status.json and changes.json hold.
package intent
