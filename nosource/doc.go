// Package nosource handles the boots that find no metadata source. Its data
// comes from the machine: the seed directories under /var/lib/cloud/seed,
// cloud-init's ds-identify policy (/etc/cloud/ds-identify.cfg and the
// kernel command line), the udev queue in /run/udev and udevd's process in
// /proc, and the status a boot recorded.
//
// Three things follow from "no source":
//
//   - HoldCloudInit keeps cloud-init from running as DataSourceNone on a
//     boot that has neither a source nor a seed written by an earlier boot,
//     as cloud-init's own ds-identify does when it finds nothing. The
//     package's systemd drop-ins skip cloud-init's units while the marker
//     MarkerPath exists; `cloud-init status` says "disabled". The machine
//     is left as it was, so a seed that comes later configures it fully
//     (user, keys, hostname, new SSH host keys).
//   - WaitForDevices waits, bounded, for udevd to run and its queue to
//     drain before a boot concludes there is no source: a CD-ROM whose
//     driver loads late is still found on that boot.
//   - Late compares what boot decided with what a later reader (watch,
//     status) finds: a source that boot did not decide on takes effect on
//     the next boot, never half-applied now.
//
// # Stability
//
// This package is seedkeeper's own plumbing, not part of its stable API
// (mdata, mdata/mdatatest, datasource, netcfg): it may change in any
// release, and its exported signatures may name internal types (such as
// the --root of internal/sysroot). It may move under internal/ later.
package nosource
