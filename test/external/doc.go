// Package external holds the test that uses seedkeeper as another module
// would: it writes a module of its own in a temporary directory that
// requires seedkeeper (replaced by this checkout), builds and runs a
// program that calls mdata, mdata/mdatatest, datasource and netcfg with
// values it computes at run time, and runs the Example functions of every
// importable package from there. It works offline, from the module cache that
// building seedkeeper filled (GOPROXY=off).
//
// It also checks the rules that make that possible: no exported
// declaration of a stable package names a type of an internal package,
// and go.mod's go directive is no higher than the dependencies need.
//
// # Stability
//
// This package is a test and has no API.
package external
