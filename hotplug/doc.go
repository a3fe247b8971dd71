// Package hotplug keeps the network of owned NICs applied while the machine
// runs: it subscribes to rtnetlink link events, lists the existing links,
// reconciles them against the metadata, and handles NICs added later, for
// drivers on the allowlist only.
package hotplug
