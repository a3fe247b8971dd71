//go:build !linux

package mdata

import (
	"context"
	"fmt"

	"github.com/seedkeeper/seedkeeper/internal/goos"
)

// Vsock returns a transport over a vsock stream to CID:PORT. It is only
// supported on Linux.
func Vsock(cid, port uint32) Transport { return vsockTransport{cid, port} }

type vsockTransport struct{ cid, port uint32 }

func (v vsockTransport) String() string { return fmt.Sprintf("vsock:%d:%d", v.cid, v.port) }
func (v vsockTransport) Shared() bool   { return false }

func (v vsockTransport) Open(ctx context.Context) (Conn, error) {
	return nil, permanent(goos.Unsupported("vsock"))
}
