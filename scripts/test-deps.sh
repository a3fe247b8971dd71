#!/bin/sh
# Installs the tools the test suite uses, when they are missing and we are
# root. Without root it only says what is missing; the tests that need it
# skip with a message.
set -eu

# command-or-file:package
need="
/usr/bin/genisoimage:genisoimage
/usr/bin/cloud-localds:cloud-image-utils
/sbin/mkfs.vfat:dosfstools
/usr/bin/mcopy:mtools
/usr/bin/isoinfo:genisoimage
/sbin/ip:iproute2
/usr/bin/systemd-analyze:systemd
/usr/lib/python3/dist-packages/cloudinit/__init__.py:cloud-init
/usr/lib/python3/dist-packages/serial/__init__.py:python3-serial
/usr/bin/qemu-system-x86_64:qemu-system-x86
/usr/bin/qemu-img:qemu-utils
/usr/bin/mmdebstrap:mmdebstrap
/sbin/mkfs.ext4:e2fsprogs
/usr/bin/xz:xz-utils
/usr/bin/rpm:rpm
/usr/bin/lintian:lintian
/usr/bin/rpmlint:rpmlint
/usr/lib/python3/dist-packages/magic/__init__.py:python3-magic
/usr/bin/cpio:cpio
/usr/bin/rpm2cpio:rpm2cpio
/usr/libexec/netplan/generate:netplan.io
/usr/bin/zsh:zsh
/usr/bin/fish:fish
"

missing=""
for entry in $need; do
	path=${entry%%:*}
	pkg=${entry##*:}
	if [ ! -e "$path" ]; then
		case " $missing " in
		*" $pkg "*) ;;
		*) missing="$missing $pkg" ;;
		esac
	fi
done

# The VM tests (test/vm) boot this pinned Debian kernel under QEMU; they
# look for the extracted package in $kcache/linux-image-$kver.
kver=6.1.0-57-amd64
kcache=${SEEDKEEPER_VM_KERNEL_DIR:-/var/cache/seedkeeper-test}
if [ "$(uname -m)" = x86_64 ] && [ ! -e "$kcache/linux-image-$kver/boot/vmlinuz-$kver" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "test-deps: missing the VM test kernel linux-image-$kver (run as root to fetch it; the VM tests will skip)" >&2
	else
		echo "test-deps: fetching linux-image-$kver for the VM tests" >&2
		mkdir -p "$kcache"
		(cd "$kcache" && { apt-get download -qq "linux-image-$kver" 2>/dev/null ||
			{ apt-get update -qq >/dev/null && apt-get download -qq "linux-image-$kver"; }; })
		dpkg-deb -x "$kcache/linux-image-${kver}_"*.deb "$kcache/linux-image-$kver"
		rm -f "$kcache/linux-image-${kver}_"*.deb
	fi
fi

# NetworkManager is an oracle for how its configuration merges
# (NetworkManager --print-config, which reads the files and exits).
# Installing the package would start the daemon on this machine's network,
# so it is only extracted, beside the libraries it links (libraries only:
# nothing among them starts a service), and never run as a daemon.
nmcache=$kcache/network-manager
if [ ! -x "$nmcache/usr/sbin/NetworkManager" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "test-deps: missing the extracted NetworkManager (run as root to fetch it; its merge checks will skip)" >&2
	else
		echo "test-deps: extracting network-manager into $nmcache" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends libndp0 libglib2.0-0 libcurl3-gnutls libpsl5 >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null && apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends libndp0 libglib2.0-0 libcurl3-gnutls libpsl5 >/dev/null; }
		mkdir -p "$nmcache.tmp"
		(cd "$nmcache.tmp" && { apt-get download -qq network-manager 2>/dev/null ||
			{ apt-get update -qq >/dev/null && apt-get download -qq network-manager; }; })
		dpkg-deb -x "$nmcache.tmp"/network-manager_*.deb "$nmcache"
		rm -rf "$nmcache.tmp"
	fi
fi

# The tests that build the examples and a consumer from another module
# run with GOPROXY=off: the module cache must hold the go.mod of every
# module in the graph, old versions that no build downloads among them.
if command -v go >/dev/null 2>&1; then
	(cd "$(dirname "$0")/.." && go list -m all >/dev/null) ||
		echo "test-deps: could not load the module graph; the outside-module tests will fail" >&2
	# apidiff, pinned in tools/apidiff, for the API check (test/apicompat).
	(cd "$(dirname "$0")/../tools/apidiff" && go mod download) ||
		echo "test-deps: could not download apidiff (tools/apidiff); the API check will fail" >&2
fi

if [ -z "$missing" ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "test-deps: missing packages:$missing (run as root to install them; the tests that need them will skip)" >&2
	exit 0
fi
echo "test-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
