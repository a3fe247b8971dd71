// Package version is the one place the release number of seedkeeper's
// packages and commands is kept: Release, which CHANGELOG.md's newest
// released section and the release tag must match (tests check both),
// and String, what --version prints.
package version

import (
	"runtime/debug"
)

// Release is the version of this tree: the release it is, or, between
// releases, the last one (CHANGELOG.md's newest section below
// "Unreleased"). "make release" bumps it in the commit that releases and
// tags that commit v<Release>; builds after it count their commits from
// it, so change this line in no other commit.
const Release = "0.1.0"

// stamp is set by make with -ldflags "-X ...internal/version.stamp=..." to
// the tree's version as packaging/pkgversion.sh --describe counts it
// (Release and the commits since the commit that set it, spelled as
// "git describe --tags --dirty" spells it: "v0.1.0-385-g904c6dd-dirty").
var stamp string

// String is the version a build of seedkeeper reports, as Go spells
// module versions:
//
//   - what make stamped, when it is a tag or a commit after one ("v0.1.0",
//     "v0.1.0-3-gabc1234-dirty");
//   - the module version the go command recorded, for "go install
//     ...@v0.1.0" or a build that stamped the VCS state;
//   - "v" + Release + "+dev" (and the commit make stamped, if any) for a
//     build that is no release.
func String() string { return describe(stamp, moduleVersion()) }

func describe(stamp, module string) string {
	v := "v" + Release
	switch {
	case len(stamp) > 1 && stamp[0] == 'v' && stamp[1] >= '0' && stamp[1] <= '9':
		return stamp
	case stamp != "" && stamp != "dev":
		return v + "+dev." + stamp
	case module != "" && module != "(devel)":
		return module
	}
	return v + "+dev"
}

// moduleVersion is the version of the main module the go command
// recorded ("v0.1.0" for go install ...@v0.1.0; "(devel)" in a checkout).
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return ""
}
