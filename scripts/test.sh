#!/bin/sh
# make test: every package's tests, with the QEMU guests (test/vm) started
# first. Usage: scripts/test.sh GO-TEST-FLAGS...
#
# go test ./... runs as many packages at a time as there are cores, in
# import-path order, so test/vm, by far the longest (its images, then two
# guests at a time for most of the run), would start only when every
# other package had. Started first, in a go test of its own, its images
# are built while the other packages run beside it. Both runs' output goes to stdout as it comes; the exit status is
# non-zero when either failed.
set -u
GO=${GO:-go}
pkgs=$($GO list ./... | grep -v '/test/vm$') || exit 1
# test/vm's test binary is built alone first: two go tests started at once
# would each compile the packages both need (the standard library with the
# race detector, above all), as one build cache does not share work in
# progress. A build failure is reported by the run below.
$GO test "$@" -run '^$' ./test/vm >/dev/null 2>&1
$GO test "$@" ./test/vm &
vm=$!
# shellcheck disable=SC2086 # one argument a package
$GO test "$@" $pkgs
rest=$?
wait $vm
vmrc=$?
if [ $rest -ne 0 ] || [ $vmrc -ne 0 ]; then
	echo "make test: failed (test/vm exit $vmrc, the other packages exit $rest)" >&2
	exit 1
fi
