// Package netcfg turns the network configuration found in instance metadata
// (cloud-init network config v1 and v2, VMware guestinfo's network key and
// SmartOS sdc:nics) into one model, writes it back as cloud-init v1 for a
// NoCloud seed and renders it for systemd-networkd; package netcfg/apply
// plans it against the live links of this machine and applies it through
// rtnetlink.
//
// Parse reads v1 and v2 documents (YAML or JSON, wrapped in "network:" or
// not), ParseValue an already decoded one, FromSmartOS the sdc:nics,
// sdc:routes and sdc:resolvers keys. Errors name the field:
// config[2].subnets[0].address: "10.0.0.300/24" is not an IP address.
//
// The input comes from outside the VM, so the parsers refuse a document
// that expands beyond MaxExpandedSize once its YAML aliases are resolved,
// and any string holding a line break or another control or separator
// character (CheckLine); the writers (RenderNetworkd, RenderResolvConf)
// check every value again where they write it, and networkd file names
// are derived and checked when the configuration is read, before
// anything is applied. Whatever a parser accepts renders to files that
// read back, as systemd splits them, to the same model.
//
// Only NICs the configuration names by MAC (or by name where it has no MAC)
// and whose driver is allowed are ever touched.
//
// The package is pure Go with no system calls: it builds on every GOOS.
//
// # Stability
//
// This package is part of seedkeeper's stable API, with mdata, mdata/mdatatest and datasource. Within a major
// version its exported names keep their meaning and are not removed; before
// 1.0.0 a minor release may change them, and CHANGELOG.md says how under
// "Breaking". No exported signature mentions an internal package: all of it
// can be used from another module, with values computed at run time.
package netcfg
