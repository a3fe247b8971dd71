#!/bin/sh
# make test: every package's tests, test/vm's beside the others. Usage:
#   scripts/test.sh GO-TEST-FLAGS...
#
# test/vm builds its guest images first (TestIntegrationSystemdImages:
# three mmdebstrap runs and the stacks on them, minutes of mirror and
# dpkg), then boots its guests. It starts with the other packages and
# boots one guest at a time while they run (SEEDKEEPER_VM_GATE), two once
# they are done: a guest under TCG beside other CPU-bound work takes up
# to twice the CPU time it takes alone, but the other packages' tests
# leave a core idle for minutes near their end.
#
# go test ./... alone would start test/vm last (packages run in
# import-path order), its guests then waiting minutes on the images.
# test/vm's output follows the others'. The exit status is non-zero when
# either failed.
set -u
GO=${GO:-go}
pkgs=$($GO list ./... | grep -v '/test/vm$') || exit 1
# test/vm's test binary is built first, alone: two go tests started at
# once would each compile what both need (the standard library with the
# race detector, above all), as one build cache does not share work in
# progress. A failed build is reported by the run below.
$GO test "$@" -run '^$' ./test/vm >/dev/null 2>&1
log=$(mktemp)
gate=$(mktemp)
trap 'rm -f "$log" "$gate"' EXIT
SEEDKEEPER_VM_GATE=$gate $GO test "$@" ./test/vm >"$log" 2>&1 &
vm=$!
# shellcheck disable=SC2086 # one argument a package
$GO test "$@" $pkgs
rest=$?
rm -f "$gate"
echo "make test: the other packages are done (exit $rest); test/vm's guests now boot two at a time, its output follows when it is done" >&2
wait $vm
vmrc=$?
cat "$log"
if [ $rest -ne 0 ] || [ $vmrc -ne 0 ]; then
	echo "make test: failed (the other packages exit $rest, test/vm exit $vmrc)" >&2
	exit 1
fi
