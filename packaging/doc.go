// Package packaging checks what seedkeeper ships besides its code: the
// systemd units (seedkeeper-boot.service, seedkeeper-watch.service), the
// cloud-init drop-in (95-seedkeeper.cfg), the .deb and .rpm that
// "make package" builds from nfpm.yaml, their copyright file and version
// (pkgversion.sh), and the cross-builds of "make cross". It has no API:
// its data is the files in this directory, and its tests check them
// against the real tools (systemd-analyze, cloud-init and ds-identify,
// dpkg, rpm, lintian, rpmlint, the Go toolchain), and that two builds of
// one commit are the same bytes.
//
// # Stability
//
// This package serves seedkeeper's own tests and tools and has no stable
// API: it may change in any release.
package packaging
