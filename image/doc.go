// Package image answers the image builder's two questions before a golden
// image is cloned: what will a clone made from this image do at its first
// boot (Check), and how is the image made ready to be cloned (Seal: the
// plan, PlanSeal, applied, Plan.Apply, then checked). Its data is the image itself: the running system, or a
// mounted or extracted root given as a sysroot.Root, read as the image's
// own systemd and cloud-init would read it: unit files and their .wants
// links (so an image never booted is checked as well), cloud-init's
// configuration merged in byte order of the file names, cloud-init's and
// seedkeeper's state, the machine IDs, the SSH host keys and seedkeeper's
// configuration.
//
// Check reports one Item per entry of Checks, each with a Verdict, what
// was found, what a clone will do, and the command that fixes a finding.
//
// Sealing is one plan executed two ways: "seal --dry-run" prints the Plan,
// and the real run applies exactly that Plan. It removes what "cloud-init
// clean --logs" removes (everything in /var/lib/cloud but the seed
// directory, and cloud-init's logs; the scripts of /etc/cloud/clean.d are
// not run), the seed seedkeeper wrote (a seed a person put there is kept),
// seedkeeper's pin, status and receipt, D-Bus's copy of the machine ID
// when it is not a link, the SSH host keys (unless kept) and, on the
// running system, the network files seedkeeper rendered under /run; it
// empties /etc/machine-id without removing it; and it writes the sealed
// marker (identity.SealedPath) that makes the first boot of every clone a
// new instance, even for derived-ID sources.
//
// The image is input. Every path is read, listed and removed through one
// confined access (internal/fsutil): links are resolved as the image sees
// them, as in a chroot (an absolute target starts at the root, never at
// the host's "/", and ".." at the root stays there); no mount point inside
// the root is crossed; only regular files are read, non-blocking and
// bounded, so a FIFO or a device in the image is described, never read.
// Every removal states its kind: a file is unlinked, never a directory,
// and a tree is removed only for an entry of cloud-init's state directory
// or seedkeeper's own seed; a path that is not of the kind seal removes
// there (a log that is a directory, the root itself, a mount point) is in
// the plan as Skip, with why. A link is removed rather than its target,
// and Apply touches only the paths of its Plan.
//
// # Stability
//
// This package is seedkeeper's own plumbing, not part of its stable API
// (mdata, mdata/mdatatest, datasource, netcfg): it may change in any
// release, and its exported signatures may name internal types (such as
// the --root of internal/sysroot). It may move under internal/ later.
package image
