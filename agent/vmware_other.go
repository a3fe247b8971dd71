//go:build !linux

package agent

import (
	"context"
	"errors"
	"runtime"
)

// readOwnedAddrs needs netlink.
func readOwnedAddrs(int, []string) (ownedAddrs, error) {
	return ownedAddrs{}, errors.New("reading link addresses is not supported on " + runtime.GOOS)
}

// subscribeAddrRoute needs netlink.
func subscribeAddrRoute(context.Context, int) (<-chan struct{}, error) {
	return nil, errors.New("address events are not supported on " + runtime.GOOS)
}

// fallbackNIC needs netlink.
func fallbackNIC(context.Context, int, func(string) bool) (string, string, error) {
	return "", "", errors.New("reading links is not supported on " + runtime.GOOS)
}
