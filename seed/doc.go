// Package seed writes the NoCloud seed that cloud-init reads,
// /var/lib/cloud/seed/nocloud/, from the instance ID identity decided and
// the Metadata a datasource read, together with the SmartOS extras
// (per-boot scripts and /var/db/mdata-user-data).
//
// Files and modes:
//
//	/var/lib/cloud/seed/nocloud/            0700 (cloud-init runs as root)
//	  meta-data       0644  instance-id, local-hostname, public-keys (no secrets)
//	  user-data       0600  always written, empty when absent (cloud-init requires it)
//	  vendor-data     0600  always written, empty when absent
//	  network-config  0600  only when cloud-init owns the network; unwrapped
//	  .seedkeeper     0600  the marker: what seedkeeper wrote, by SHA-256
//	/var/lib/cloud/scripts/per-boot/
//	  00-seedkeeper-operator-script  0700  SmartOS sdc:operator-script
//	  01-seedkeeper-user-script      0700  SmartOS user-script
//	/var/db/mdata-user-data          0400  SmartOS legacy user-data
//
// meta-data values are written as double-quoted YAML strings, so that no ID
// or hostname can be read back as a number, a boolean or a date by
// cloud-init's YAML 1.1 loader. network-config is written without a
// top-level "network:" key because cloud-init 22.4's NoCloud rejects the
// wrapper; wrapped input is unwrapped.
//
// The SmartOS scripts go into cloud-init's per-boot scripts directory
// rather than a unit of our own: cloud-init's scripts_per_boot module runs
// that directory in name order on every boot, after the network and the
// users are set up, which is when cloud-init's SmartOS datasource runs them
// too; the names put the operator script first, and no unit has to be
// shipped or ordered. Because that module executes the files directly, a
// script without "#!" gets "#!/bin/bash" as its first line (cloud-init's
// SmartOS datasource does the same for user-script). Each file is removed
// when its key disappears.
//
// Ownership: the marker makes the seed directory seedkeeper's. It is
// written before any seed file, so even a first run killed half-way is
// recognised as our own output, and it lists every file's SHA-256 (while a
// write is in progress also the hash being written, so a kill at any
// moment never looks like a hand edit). A seed that a person put into the
// directory before seedkeeper first ran (files and no marker) is copied
// once, atomically, to /var/lib/seedkeeper/imported-seed/, and SourceDir
// tells the NoCloud reader to read it from there; seedkeeper never reads its
// own output back. A file in the owned directory that matches none of the
// marker's hashes was edited by hand: it is overwritten (or removed) and
// reported in Result.Warnings, because the metadata is the source of truth
// and a stale hand edit would silently diverge from it.
//
// Plan, then apply: Write is PlanWrite followed by Plan.Apply. PlanWrite
// reads what is there (the marker, a person's seed to import, the files
// and their content) and decides every write, removal and warning without
// changing anything; Apply carries out exactly that plan and decides
// nothing again. The plan of a seed already on disk is empty, and Apply
// of it touches no file.
//
// Every file is written with fsutil.WriteFile: atomically, only when its
// content or mode changed, never through a symbolic link, even one put in
// the way after the plan was made. The marker is written last. Temporary
// files left by a killed run are removed by the next Apply.
//
// # Stability
//
// This package is seedkeeper's own plumbing, not part of its stable API
// (mdata, mdata/mdatatest, datasource, netcfg): it may change in any
// release, and its exported signatures may name internal types (such as
// the --root of internal/sysroot). It may move under internal/ later.
package seed
