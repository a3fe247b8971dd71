// Package netcfg turns the network configuration found in instance metadata
// (cloud-init network config v1 and v2, VMware guestinfo's network key and
// SmartOS sdc:nics) into one model, plans it against the live links of this
// machine, applies it through rtnetlink and renders it for systemd-networkd.
//
// Only NICs the configuration names by MAC (or by name where it has no MAC)
// and whose driver is allowed are ever touched.
package netcfg
