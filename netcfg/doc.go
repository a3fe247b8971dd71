// Package netcfg turns the network configuration found in instance metadata
// (cloud-init network config v1 and v2, VMware guestinfo's network key and
// SmartOS sdc:nics) into one model, writes it back as cloud-init v1 for a
// NoCloud seed and renders it for systemd-networkd; package netcfg/apply
// plans it against the live links of this machine and applies it through
// rtnetlink.
//
// Parse reads v1 and v2 documents (YAML or JSON, wrapped in "network:" or
// not), ParseValue an already decoded one, FromSmartOS the sdc:nics,
// sdc:routes and sdc:resolvers keys. One bad field degrades only what it
// belongs to (a route, an address, a setting; a link when what names it
// is bad), and Config.Notes names each field left out, never its value:
// config[2].subnets[0].address: not an IP address; the subnet left out.
//
// The input comes from outside the VM, so the parsers refuse a document
// that expands beyond MaxExpandedSize once its YAML aliases are resolved,
// and leave out any string holding a line break or another control or
// separator character (CheckLine); every link name takes one alphabet
// (ValidLinkName), which no shell, glob or list language reads as syntax.
// The writers (Stack.Render and Stack.RenderAhead for each stack's
// format, RenderResolvConf) check every value again where they write it, and networkd file names are derived and checked when the
// configuration is read, before anything is applied. Whatever a parser accepts renders to
// files that read back, as systemd splits them, to the same model. The
// renderers write the interfaces their owned argument accepts, and never
// name a master or VLAN it does not accept; the agent passes the live
// plan's verdict (apply.Plan.Owns, on apply.Plan.Pinned); to the
// renderers of files written ahead (Stack.RenderAhead) also the NICs it
// found absent (apply.Plan.Absent), whose files can take only a NIC it
// would own. What each owned link carries (its addresses, routes and
// rules; none on a bond or bridge member; the link of a global route) is
// decided once, by Config.Plan, for the live apply and every renderer.
//
// A document means what its format's owner says: v2 as netplan reads it
// (a route to an address without a prefix length is that one host), v1
// as cloud-init does (the same route is a /24 or /64). Keys is the one
// table of the keys seedkeeper reads, with what each stack's files and
// the live apply do with each; a key applied nowhere, or unknown, is a
// note naming the link and the key, what one stack cannot say is in its
// StackFiles.Notes (UnappliedBy), and an entry of a device type
// seedkeeper does not handle is left out alone.
//
// Stacks is the table of the network managers an image can run
// (systemd-networkd, NetworkManager, ifupdown). Each Stack says how to
// tell that a root runs it (DetectStack for a running system,
// DetectImageStack for an image at rest: a unit systemd would start), and
// how to render a configuration into its files (Stack.Render). What
// seedkeeper itself does with a stack beyond that (which files in its
// directories are its own, how to ask the manager to read them) is not
// part of this package's API.
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
