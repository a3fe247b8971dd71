//go:build !linux

package apply

import (
	"context"

	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/internal/goos"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

var errNotSupported = goos.Unsupported("applying network configuration")

// Handle reads and changes the links of one network namespace. Only Linux
// has one.
type Handle struct{}

// Open returns an error: only Linux is supported.
func Open() (*Handle, error) { return nil, errNotSupported }

// OpenAt returns an error: only Linux is supported.
func OpenAt(ns netns.NsHandle) (*Handle, error) { return nil, errNotSupported }

// Close does nothing.
func (h *Handle) Close() error { return nil }

// Driver returns an error: only Linux is supported.
func (h *Handle) Driver(name string) (string, error) { return "", errNotSupported }

// Plan returns an error: only Linux is supported.
func (h *Handle) Plan(ctx context.Context, cfg *netcfg.Config, allow Allowlist, rc *Receipt) (*Plan, error) {
	return nil, errNotSupported
}

func (h *Handle) read(ctx context.Context, cfg *netcfg.Config, allow Allowlist) ([]Link, error) {
	return nil, errNotSupported
}

// Apply returns an error: only Linux is supported.
func (h *Handle) Apply(ctx context.Context, p *Plan) (*Result, error) {
	return nil, errNotSupported
}

// LockReceipt returns an error: only Linux is supported.
func LockReceipt(path string) (unlock func(), err error) { return nil, errNotSupported }
