// Package linkaddr reads the links of a network namespace over netlink
// for a source's duties (sourceduty.Links): their usable addresses and
// default routes, their address and route changes, and the NIC of
// cloud-init's fallback network configuration.
package linkaddr

import (
	"context"

	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
)

// Links reads the links of the network namespace Netns (a file
// descriptor; 0 or less is the process's own).
type Links struct{ Netns int }

var _ sourceduty.Links = Links{}

// Addrs reads the links named and the main table's default routes: only
// those links are looked at.
func (l Links) Addrs(names []string) (sourceduty.Addrs, error) { return readAddrs(l.Netns, names) }

// Subscribe sends after every address or route change in the namespace
// until ctx ends; the channel is closed when either subscription ends.
func (l Links) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	return subscribeAddrRoute(ctx, l.Netns)
}

// FallbackNIC picks the NIC of cloud-init's fallback network config.
func (l Links) FallbackNIC(ctx context.Context, allows func(driver string) bool) (name, mac string, err error) {
	return fallbackNIC(ctx, l.Netns, allows)
}
