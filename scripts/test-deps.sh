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
