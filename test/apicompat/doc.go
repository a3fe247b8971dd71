// Package apicompat holds the test that compares the exported API of the
// stable packages (mdata, mdata/mdatatest, datasource, netcfg) with the
// last release's, recorded in api/ by scripts/apisnapshot.sh at release
// time. It runs apidiff (pinned in tools/apidiff) on each package and
// fails on an incompatible change that the CHANGELOG's Unreleased section
// does not declare on a "Breaking:" line; the changes declared, and the
// compatible ones, it reports (go test -v, or make api).
//
// # Stability
//
// This package is a test and has no API.
package apicompat
