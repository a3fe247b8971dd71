package mdata

import (
	"context"
	"errors"
	"fmt"

	"github.com/mdlayher/vsock"
	"golang.org/x/sys/unix"
)

// Vsock returns a transport over a vsock stream to CID:PORT.
func Vsock(cid, port uint32) Transport { return vsockTransport{cid, port} }

type vsockTransport struct{ cid, port uint32 }

func (v vsockTransport) String() string { return fmt.Sprintf("vsock:%d:%d", v.cid, v.port) }
func (v vsockTransport) Shared() bool   { return false }

func (v vsockTransport) Open(ctx context.Context) (Conn, error) {
	c, err := vsock.DialContext(ctx, v.cid, v.port, nil)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		// The kernel loads vsock.ko itself when a socket is made; this
		// error means the machine has no vsock at all, and waiting will
		// not bring it.
		return nil, permanent(fmt.Errorf("%s: this kernel has no vsock support: %w", v, err))
	}
	if err != nil {
		return nil, classifyOpen(err)
	}
	return c, nil
}
