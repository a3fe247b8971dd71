package mdatatest

import (
	"context"
	"io"
	"net"

	"github.com/seedkeeper/seedkeeper/mdata"
)

// Transport returns a transport to h for an mdata.Client: every Open is a
// new session over net.Pipe, served until either end closes it, as a zone
// socket gives each connection a clean session (Shared is false, so the
// client does not drain). Open fails with ErrClosed once h is closed. Use it
// with mdata.New to choose the client's options, such as short timeouts
// for a test of a fault. Its String is "mdatatest:pipe", a name
// ParseTransport does not accept: the transport exists only in-process.
func (h *Host) Transport() mdata.Transport { return pipeTransport{h} }

// Client returns a client of h over Transport with the default options,
// as httptest.Server.Client returns one for its server. Closing h ends
// the client's session; a request made after that cannot open a new one
// (ErrClosed) and, like a request to any host that is gone, is tried
// again until its context ends.
func (h *Host) Client() *mdata.Client { return mdata.New(h.Transport(), nil) }

type pipeTransport struct{ h *Host }

func (t pipeTransport) Open(ctx context.Context) (mdata.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	guest, host := net.Pipe()
	if err := t.h.serveBackground(host); err != nil {
		guest.Close()
		host.Close()
		return nil, err
	}
	return guest, nil
}

func (pipeTransport) Shared() bool   { return false }
func (pipeTransport) String() string { return "mdatatest:pipe" }

// serveBackground serves rw as one connection in a goroutine that Close
// waits for, and closes rw when the session ends.
func (h *Host) serveBackground(rw io.ReadWriteCloser) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	h.wg.Add(1) // under mu, so never after Close has begun to wait
	h.mu.Unlock()
	s, err := h.addStream(rw, true)
	if err != nil {
		h.wg.Done()
		return err
	}
	go func() {
		defer h.wg.Done()
		defer rw.Close()
		h.serve(s)
	}()
	return nil
}
