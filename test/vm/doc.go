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
// # make test and make e2e
//
// The systemd-booted guests (systemd_test.go: Debian 12, 13 and forky, a
// disk image booted by systemd with cloud-init and the .deb) cost 50 to
// 130 seconds of a core per boot under TCG on a quiet 2-core host, with
// the kernel line's sdGuestCost, and up to twice that beside other
// CPU-bound work (QEMU's CPU time; Debian 12's boots the least, forky's
// the most). make test (scripts/test.sh) therefore builds the images
// (TestIntegrationSystemdImages) while the other packages' tests run,
// boots one guest at a time beside them and two after them, and boots
// every check once, folding checks into chains, one boot carrying
// several:
//
//   - Debian 12 networkd, the admin chain (four boots): the first boot
//     hot-adds a NIC (the identity chain's first boot); the third removes
//     the package, and a changed drive boots a fourth time under plain
//     cloud-init (the removal scenario);
//   - Debian 12 networkd, the templates (three boots of one disk): the
//     template without a seed, the same disk with its seed and sealed,
//     a clone of the sealed disk;
//   - Debian 12: the stacked links (v2's seed once), the SmartOS host
//     that comes up late, the VMware guest (guestinfo; a traditional
//     customization spec), the ifupdown and NetworkManager images;
//   - Debian 13: the no-source boot (networkd), the netplan image's first
//     boot with a hot-added NIC;
//   - forky: the netplan chain (first with a hot-added NIC, resolver-changed
//     beside a clone, unchanged) and the VMware guest on cloud-init 26.2,
//     customized with a spec of the cloud-init kind.
//
// make e2e (SEEDKEEPER_VM_MATRIX=full) adds what would only repeat a check
// of make test's on another image, or on a second boot of the same one:
// the identity chain on Debian 12's networkd, ifupdown and NetworkManager
// images and the same boots without seedkeeper (make test runs its first
// boot as the admin chain's, and resolver change, clone and unchanged
// boot on forky, over networkd); Debian 13's and forky's networkd chains
// (the netplan images render through networkd) and Debian 13's netplan
// boots after the first (the identity decisions and the files left alone
// are seedkeeper's, and cloud-init takes the instance ID the seed says:
// forky's chain shows them on the same stack and cloud-init's same unit
// layout, Debian 12's admin chain and sealed clone on 22.4); forky's
// NetworkManager image and Debian 13's netplan over NetworkManager
// (seedkeeper's profiles active alone beside an image's catch-all
// profile, which make test shows on Debian 12's NetworkManager image;
// netplan only renders that catch-all); the seedless template's two
// clones and the
// sealed template's second clone (first runs and clones that the
// template's own seeded boot and the sealed clone show with other UUIDs
// and MACs); the stacked links' second boot and v1's seed (every boot
// makes the links in a fresh kernel, and that a boot with nothing changed
// rewrites no file is forky's unchanged boot, through the same writers;
// v1 reads to v2's links, plan and files, TestStackedSeedsAgree) and the
// boot with the driver allowlist leaving its NICs out (the plan owns no
// link whose driver is not allowed, for every link kind: netcfg/apply's
// tests, and cmd/seedkeeper's in a namespace); the admin chain on Debian 13;
// the VMware guest's spec of the cloud-init kind on Debian 12, first
// customized, then read again from the kept spec (forky's customized boot
// shows the first with the same stand-in and checks; the second, the
// kept spec read again, runs only there); forky's VMware guest from guestinfo
// (Debian 12's guestinfo boot runs the same seedkeeper code, and what
// forky changes, cloud-init, is forky's customized boot's); and the
// extra template and stacked-stack scenarios. Every boot logs its QEMU's
// CPU time, and the run ends with the total.
//
// # Stability
//
// This package serves seedkeeper's own tests and tools and has no stable
// API: it may change in any release.
package vm
