#!/bin/sh
# make test: every package's tests, in two steps. Usage:
#   scripts/test.sh GO-TEST-FLAGS...
#
#  1. test/vm's guest images (TestIntegrationSystemdImages: three
#     mmdebstrap runs and the stacks on them, minutes of mirror and
#     dpkg) are built while every other package's tests run;
#  2. then test/vm's guests boot, two at a time, on a machine where
#     nothing else runs: a guest under TCG beside other CPU-bound work
#     takes about twice the CPU time it takes alone.
#
# go test ./... alone would build the images only when test/vm starts,
# last (packages run in import-path order), with the guests' boots then
# waiting on them. The exit status is non-zero when any step failed.
set -u
GO=${GO:-go}
pkgs=$($GO list ./... | grep -v '/test/vm$') || exit 1
# test/vm's test binary is built first, alone: two go tests started at
# once would each compile what both need (the standard library with the
# race detector, above all), as one build cache does not share work in
# progress. A failed build is reported by step 2.
$GO test "$@" -run '^$' ./test/vm >/dev/null 2>&1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
$GO test "$@" -run '^TestIntegrationSystemdImages$' ./test/vm >"$log" 2>&1 &
images=$!
# shellcheck disable=SC2086 # one argument a package
$GO test "$@" $pkgs
rest=$?
wait $images
imagesrc=$?
cat "$log" # after the other packages' output, not inside it
$GO test "$@" ./test/vm
vmrc=$?
if [ $rest -ne 0 ] || [ $imagesrc -ne 0 ] || [ $vmrc -ne 0 ]; then
	echo "make test: failed (the other packages exit $rest, test/vm's images exit $imagesrc, test/vm exit $vmrc)" >&2
	exit 1
fi
