//go:build !linux

package linkaddr

import (
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"

	"context"
	"errors"
	"runtime"
)

// readAddrs needs netlink.
func readAddrs(int, []string) (sourceduty.Addrs, error) {
	return sourceduty.Addrs{}, errors.New("reading link addresses is not supported on " + runtime.GOOS)
}

// subscribeAddrRoute needs netlink.
func subscribeAddrRoute(context.Context, int) (<-chan struct{}, error) {
	return nil, errors.New("address events are not supported on " + runtime.GOOS)
}

// fallbackNIC needs netlink.
func fallbackNIC(context.Context, int, func(string) bool) (string, string, error) {
	return "", "", errors.New("reading links is not supported on " + runtime.GOOS)
}
