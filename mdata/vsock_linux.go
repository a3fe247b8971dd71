package mdata

import (
	"context"
	"fmt"

	"github.com/mdlayher/vsock"
)

// Vsock returns a transport over a vsock stream to CID:PORT.
func Vsock(cid, port uint32) Transport { return vsockTransport{cid, port} }

type vsockTransport struct{ cid, port uint32 }

func (v vsockTransport) String() string { return fmt.Sprintf("vsock:%d:%d", v.cid, v.port) }
func (v vsockTransport) Shared() bool   { return false }

func (v vsockTransport) Open(ctx context.Context) (Conn, error) {
	type result struct {
		c   *vsock.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := vsock.Dial(v.cid, v.port, nil)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, classifyOpen(r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
