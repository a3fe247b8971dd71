#!/bin/sh
# One stack's image of the systemd-booted test guest, made on an unpacked
# copy of its release's base image (customize.sh): the stack's packages
# installed from the base's own package lists, its network manager
# enabled by stack-STACK.sh beside this script, and the image left as a
# golden image is left (no package lists, no machine-id, no SSH host
# keys, no cloud-init state). Run on the host, in a mount namespace of
# its own (unshare --mount), as: layer.sh ROOT STACK [PACKAGE...]
# Everything here is an input of the cached tar's hash.
set -eu
root=$1 stack=$2
shift 2

if [ $# -gt 0 ]; then
	mount -t proc proc "$root/proc"
	mount -t sysfs sysfs "$root/sys"
	mount --bind /dev "$root/dev"
	# The mirror is reached from the chroot: the host's resolver, for
	# the time of the install only. A package that makes
	# /etc/resolv.conf its own (systemd-resolved's link) keeps it.
	tmpres=
	if [ ! -e "$root/etc/resolv.conf" ] && [ ! -L "$root/etc/resolv.conf" ]; then
		cp -L /etc/resolv.conf "$root/etc/resolv.conf"
		tmpres=1
	fi
	# The base's lists first, so that the stacks share its versions; a
	# mirror that has moved on since the base was built no longer serves
	# some of them, and then the lists are read again.
	install() {
		DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends \
			-o Dpkg::Use-Pty=0 -o Acquire::Check-Valid-Until=false "$@"
	}
	install "$@" || {
		chroot "$root" apt-get update -q -o Acquire::Check-Valid-Until=false
		install "$@"
	}
	if [ -n "$tmpres" ] && [ ! -L "$root/etc/resolv.conf" ]; then
		rm -f "$root/etc/resolv.conf"
	fi
	rm -f "$root/etc/.resolv.conf.systemd-resolved.bak"
	umount "$root/dev" "$root/sys" "$root/proc"
fi

# The image's network manager, enabled as an image built for it would be.
. "$(dirname "$0")/stack-$stack.sh"

: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id" "$root"/etc/ssh/ssh_host_*
rm -rf "$root/var/lib/cloud"
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/cache/apt"/*.bin "$root/var/lib/apt/lists"/* \
	"$root/usr/share/doc"/* "$root/usr/share/man"/* "$root/usr/share/locale"/*
