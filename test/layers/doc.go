// Package layers holds the test that pins which of seedkeeper's packages
// may import which. Its table is the one statement of the layers:
// docs/design.md shows it, and the test fails when the two differ, when a
// package imports across a rule, or when a package belongs to no layer.
// The imports come from go list, for Linux and for the other systems
// seedkeeper builds on.
//
// # Stability
//
// This package is a test and has no API.
package layers
