#!/bin/sh
# Makes the release commit and tag of version X.Y.Z ("make release
# RELEASE=X.Y.Z", which then builds the packages from it):
#   - CHANGELOG.md's "Unreleased" section becomes "X.Y.Z (today, UTC)",
#     under a new, empty "Unreleased";
#   - internal/version's Release becomes X.Y.Z;
#   - api/ gets the exported API of the stable packages at that commit
#     (scripts/apisnapshot.sh), which the API check compares with from
#     then on;
#   - all are committed as "Release X.Y.Z" and tagged vX.Y.Z (annotated).
# The release commit is the one that changes Release: every build after it
# counts its commits from there (packaging/pkgversion.sh). Push the commit
# and the tag (git push origin HEAD vX.Y.Z) to publish them.
set -eu
die() {
	echo "release.sh: $*" >&2
	exit 1
}
new=${1:-}
echo "$new" | grep -Eq '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$' ||
	die "usage: release.sh X.Y.Z (a version like 0.2.0, without v)"
cd "$(git rev-parse --show-toplevel)"
version=internal/version/version.go
git update-index -q --refresh >/dev/null 2>&1 || :
git diff-index --quiet HEAD -- || die "the tree has uncommitted changes: commit or stash them first"
old=$(sed -n 's/^const Release = "\([0-9][0-9.]*\)"$/\1/p' "$version")
[ -n "$old" ] || die "$version has no line const Release = \"X.Y.Z\""
if [ "$old" = "$new" ] || [ "$(printf '%s\n%s\n' "$old" "$new" | sort -V | tail -n 1)" != "$new" ]; then
	die "$new is not after the current release $old"
fi
! git rev-parse -q --verify "refs/tags/v$new" >/dev/null || die "the tag v$new exists"
# The Unreleased section must say what the release changes.
notes=$(awk '/^## Unreleased$/ { u = 1; next } /^## / { u = 0 } u && NF' CHANGELOG.md)
[ -n "$notes" ] && [ "$notes" != "Nothing yet." ] || die "CHANGELOG.md's Unreleased section is empty: write the release's changes there first"

today=$(date -u +%Y-%m-%d)
awk -v v="$new" -v d="$today" '
	!done && $0 == "## Unreleased" { print; print ""; print "Nothing yet."; print ""; print "## " v " (" d ")"; done = 1; next }
	{ print }' CHANGELOG.md > CHANGELOG.md.new
mv CHANGELOG.md.new CHANGELOG.md
sed "s/^const Release = \"$old\"\$/const Release = \"$new\"/" "$version" > "$version.new"
mv "$version.new" "$version"
git commit -q -m "Release $new" -- CHANGELOG.md "$version"
sh scripts/apisnapshot.sh HEAD || die "cannot write the API snapshot"
git add api
git commit -q --amend --no-edit
git tag -a "v$new" -m "seedkeeper $new"
echo "release.sh: committed and tagged v$new" >&2
