// Package vm is the end-to-end test of seedkeeper inside a real virtual
// machine: a Debian kernel booted by QEMU under software emulation (TCG),
// with an initramfs holding the static seedkeeper binary (also as
// /usr/sbin/mdata-get), a small test init (./init) and the kernel modules
// the scenarios need. Its tests are named TestIntegrationVM... and cover:
//
//   - a SmartOS boot: SMBIOS product "SmartDC HVM", ttyS1 wired through a
//     QEMU chardev socket to the simulated metadata host of package
//     mdata/mdatatest; the seed's instance-id is sdc:uuid and mdata-get in
//     the guest reads what the host serves;
//   - LP #1667735: the host agent is down while the guest first tries, then
//     comes up, and the boot completes;
//   - a cidata ISO made by cloud-localds on a real CD-ROM drive (/dev/sr0),
//     found by its label and read in process;
//   - a virtio-net NIC hot-added from the QEMU monitor while "seedkeeper
//     watch" runs: its address, added to the metadata on the host side, is
//     applied and the identity state and seed do not change;
//   - the vsock transport for real: with vsock, vmw_vsock_virtio_transport_common
//     and vsock_loopback loaded in the guest, a simulated host started by the
//     init listens on a vsock port, and the mdata tools reach it with
//     SEEDKEEPER_MDATA=vsock:1:PORT (get, list, put, delete, a 96 KB value,
//     recovery from a dropped connection and an unanswered probe); a port
//     with no listener gives exit status 10 after --timeout;
//   - netcfg/apply's stacked-link tests in a kernel with every link type
//     (TestIntegrationGuestKernelApply): the package's test binary, built
//     statically, runs as root in the guest with bonding, 8021q and bridge
//     loaded; a failed or skipped test, or none passing, fails the test.
//
// The data comes from the host side: the kernel is the pinned package
// linux-image-KernelRelease extracted with dpkg-deb -x under
// DefaultKernelDir (or $SEEDKEEPER_VM_KERNEL_DIR), which scripts/test-deps.sh
// provides; the uncompressed vmlinux is extracted from its vmlinuz once and
// kept next to it. The tests skip with a message saying what to install
// when qemu-system-x86_64, the kernel, or cloud-localds is missing, and
// under -short.
//
// The guest reports what happened as "SKVM ..." lines on its console
// (ttyS0, QEMU's stdout); the console of each boot is kept in the test's
// temporary directory and its tail is logged when a test fails.
//
// # Stability
//
// This package serves seedkeeper's own tests and tools and has no stable
// API: it may change in any release.
package vm
