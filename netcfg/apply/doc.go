// Package apply brings the NICs seedkeeper owns to the state a
// netcfg.Config describes: it reads the live links, addresses and routes of
// one network namespace over rtnetlink (and each candidate NIC's driver
// through ETHTOOL_GDRVINFO), plans the difference keyed by MAC, and applies
// it with rtnetlink, remembering what it added in a Receipt.
//
// A link is owned only when its MAC matches a physical interface of the
// configuration (or, where that entry names no MAC, its name matches) and its
// driver is on the Allowlist. A bond or bridge is owned when all its members
// are, a VLAN when its link is, and, when a link of its name exists
// already, only if the Receipt says seedkeeper made it: those are created
// (with their parameters), given their members, brought up and addressed,
// and are known by name. The plan's verdict (Plan.Owns, Plan.Pinned) is
// what the persistent files are rendered from. Nothing else is read
// beyond the link dump, and nothing else is ever changed. Addresses and routes that are already present
// are left alone; the only objects ever removed are those the Receipt says
// seedkeeper added and the configuration no longer has. DHCP and SLAAC are
// not configured here (the systemd-networkd render does that); their links
// are only brought up.
//
// Plan and Apply work on Linux; elsewhere Open and OpenAt return an error.
// Diff, Plan, Op and Receipt are plain data and work everywhere.
//
// # Stability
//
// This package is not part of seedkeeper's stable API (mdata,
// mdata/mdatatest, datasource, netcfg): it may change in any release. It
// works in vishvananda/netlink's terms and exposes them (netlink.Link,
// netlink.LinkAttrs, netns.NsHandle); wrapping them in types of our own
// would copy a large API for nothing, and tie a stable surface to
// netlink's releases. The stable network API is netcfg's model, parsers
// and renders; to bring this machine's links to a Config from outside
// seedkeeper, run "seedkeeper net plan|apply".
package apply
