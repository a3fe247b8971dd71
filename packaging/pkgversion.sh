#!/bin/sh
# The version of a build, in two forms.
#
#   pkgversion.sh --describe [DIR]
#     The version of the git tree at DIR (default .), spelled as
#     "git describe" would spell it at a release tag, but without needing
#     tags: the release is internal/version's Release constant and the
#     count is the number of commits since the commit that last changed
#     that constant (the release commit, which "make release" makes):
#       the release commit itself   -> v0.1.0
#       5 commits later             -> v0.1.0-5-gabc1234
#       with uncommitted changes    -> v0.1.0-5-gabc1234-dirty
#     A later commit always has a higher count (its history holds every
#     commit of the earlier one and itself), so builds sort by the count,
#     never by the hash. A shallow clone cannot count and is an error.
#
#   pkgversion.sh VERSION
#     The package version for such a string, valid for both dpkg and rpm
#     (no "-" in the version), which sorts after the release and before
#     the next one in both:
#       v1.2.3                  -> 1.2.3
#       v1.2.3-4-gabc1234       -> 1.2.3+4.gabc1234
#       v1.2.3-4-gabc1234-dirty -> 1.2.3+4.gabc1234.dirty
#       abc1234-dirty, dev      -> 0.0.0~gitabc1234.dirty, 0.0.0~gitdev
#                                  (no version known: sorts before 0.0.0)
set -eu

if [ "${1:-}" = --describe ]; then
	dir=${2:-.}
	file=internal/version/version.go
	git -C "$dir" rev-parse --verify -q HEAD >/dev/null || {
		echo "pkgversion.sh: $dir is not a git checkout with a commit" >&2
		exit 1
	}
	if [ "$(git -C "$dir" rev-parse --is-shallow-repository)" = true ]; then
		echo "pkgversion.sh: $dir is a shallow clone, whose commits cannot be counted (git fetch --unshallow)" >&2
		exit 1
	fi
	top=$(git -C "$dir" rev-parse --show-toplevel)
	release=$(sed -n 's/^const Release = "\([0-9][0-9.]*\)"$/\1/p' "$top/$file")
	[ -n "$release" ] || {
		echo "pkgversion.sh: $file has no line const Release = \"X.Y.Z\"" >&2
		exit 1
	}
	since=$(git -C "$dir" log -1 --format=%H -G '^const Release = ' HEAD -- "$file")
	[ -n "$since" ] || {
		echo "pkgversion.sh: no commit sets the Release constant in $file" >&2
		exit 1
	}
	count=$(git -C "$dir" rev-list --count "$since..HEAD")
	v="v$release"
	if [ "$count" -gt 0 ]; then
		v="$v-$count-g$(git -C "$dir" rev-parse --short HEAD)"
	fi
	git -C "$dir" update-index -q --refresh >/dev/null 2>&1 || :
	if ! git -C "$dir" diff-index --quiet HEAD --; then
		v="$v-dirty"
	fi
	echo "$v"
	exit 0
fi

v=${1:?usage: pkgversion.sh --describe [DIR] | pkgversion.sh VERSION}
case "$v" in
v[0-9]*.* | [0-9]*.*) echo "${v#v}" | sed -e 's/-/+/' -e 's/-/./g' ;;
*) echo "0.0.0~git$v" | sed -e 's/-/./g' ;;
esac
