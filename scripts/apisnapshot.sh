#!/bin/sh
# Writes the exported API of the stable packages at git revision REV
# (default HEAD) into api/: one file of export data per package (apidiff
# -w, the apidiff pinned in tools/apidiff), and api/release, the version
# of internal/version at REV. scripts/release.sh runs it for the release
# commit; test/apicompat compares the tree with it.
#   scripts/apisnapshot.sh [REV]
set -eu
die() {
	echo "apisnapshot.sh: $*" >&2
	exit 1
}
rev=${1:-HEAD}
cd "$(git rev-parse --show-toplevel)"
top=$(pwd)
module=github.com/seedkeeper/seedkeeper
stable="mdata mdata/mdatatest datasource netcfg"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The packages are loaded from a copy of REV, so that the tree's own
# uncommitted changes are not taken for the release's API.
git archive "$rev" | tar -x -C "$tmp" || die "cannot read revision $rev"
release=$(sed -n 's/^const Release = "\([0-9][0-9.]*\)"$/\1/p' "$tmp/internal/version/version.go")
[ -n "$release" ] || die "$rev has no internal/version Release"
mkdir -p "$tmp/out"
for p in $stable; do
	(cd "$tmp" && go tool -modfile="$top/tools/apidiff/go.mod" apidiff -w "$tmp/out/$(echo "$p" | tr / _).export" "$module/$p") ||
		die "apidiff -w $p failed"
done
rm -f api/*.export
mkdir -p api
cp "$tmp"/out/*.export api/
echo "$release" > api/release
echo "apisnapshot.sh: api/ holds the API of $rev (release $release)" >&2
