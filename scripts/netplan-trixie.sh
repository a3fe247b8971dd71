#!/bin/sh
# Unpacks Debian 13's netplan generator (netplan.io 1.1.2) and the
# libraries it needs, glibc included, into a cache directory, without
# installing anything or touching the host's apt sources (apt runs on a
# private sources list and state), and prints the command line to give
# the conformance test:
#
#   SEEDKEEPER_NETPLAN_GENERATOR="$(scripts/netplan-trixie.sh)" \
#       go test -run Conformance -v ./netcfg/
#
# The test's tables hold for the host's netplan (Debian 12's 0.106); with
# this generator the differences are logged for comparison.
set -eu

dir=${SEEDKEEPER_NETPLAN_DIR:-/var/cache/seedkeeper-test/netplan-trixie}
root=$dir/root
gen="$root/usr/lib64/ld-linux-x86-64.so.2 --library-path $root/usr/lib/x86_64-linux-gnu $root/usr/libexec/netplan/generate"
if [ -x "$root/usr/libexec/netplan/generate" ]; then
	echo "$gen"
	exit 0
fi

apt="$dir/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/sources.list.d" "$apt/etc/preferences.d" "$dir/debs" "$root"
# The mirror is the host's own (its first non-security source), with the
# suite changed to trixie.
uri=$( {
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { if ($(i + 1) !~ /security/) print $i; break } }'
	cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk 'BEGIN { RS = "" } /(^|\n)Types:[^\n]*deb([ \n]|$)/ && !/(^|\n)Suites:[^\n]*security/ {
			if (match($0, /(^|\n)URIs:[ \t]*[^ \t\n]+/)) { u = substr($0, RSTART, RLENGTH); sub(/^\n?URIs:[ \t]*/, "", u); print u } }'
} | head -n 1)
if [ -z "$uri" ]; then
	echo "netplan-trixie.sh: no Debian mirror in the host's apt sources" >&2
	exit 1
fi
echo "deb $uri trixie main" >"$apt/etc/sources.list"
set -- -o Dir::Etc="$apt/etc" -o Dir::Etc::SourceList="$apt/etc/sources.list" \
	-o Dir::Etc::SourceParts="$apt/etc/sources.list.d" \
	-o Dir::Etc::TrustedParts=/etc/apt/trusted.gpg.d -o Dir::State::Lists="$apt/lists" \
	-o Dir::Cache="$apt/cache" -o Debug::NoLocking=1
apt-get "$@" -qq update >&2
# netplan-generator and what it links, down to the C library (libnetplan1
# needs glibc 2.38; Debian 12 has 2.36).
(cd "$dir/debs" && apt-get "$@" -qq download netplan-generator libnetplan1 libc6 \
	libglib2.0-0t64 libffi8 libmount1 libblkid1 libpcre2-8-0 libselinux1 zlib1g \
	libyaml-0-2 libuuid1 libatomic1 >&2)
for deb in "$dir/debs"/*.deb; do
	dpkg-deb -x "$deb" "$root"
done
rm -rf "$apt" "$dir/debs"
echo "$gen"
