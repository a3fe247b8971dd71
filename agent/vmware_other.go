//go:build !linux

package agent

import (
	"errors"
	"runtime"
)

// readOwnedAddrs needs netlink.
func readOwnedAddrs(int, []string) (ownedAddrs, error) {
	return ownedAddrs{}, errors.New("reading link addresses is not supported on " + runtime.GOOS)
}
