#!/bin/sh
# Prints the package version for a "git describe --tags --always --dirty"
# string, valid for both dpkg and rpm (no "-" in the version):
#   v1.2.3                  -> 1.2.3
#   v1.2.3-4-gabc1234       -> 1.2.3+4.gabc1234
#   abc1234-dirty (no tag)  -> 0.0.0~gitabc1234.dirty  ("~" sorts before 0.0.0)
set -eu
v=${1:?usage: pkgversion.sh VERSION}
case "$v" in
v[0-9]*.* | [0-9]*.*) echo "${v#v}" | sed -e 's/-/+/' -e 's/-/./g' ;;
*) echo "0.0.0~git$v" | sed -e 's/-/./g' ;;
esac
