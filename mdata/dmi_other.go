//go:build !freebsd && !windows

package mdata

// platformProductName: on Linux the product name is read from sysfs; other
// systems offer none we know how to read.
func platformProductName() string { return "" }
