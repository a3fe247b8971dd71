package mdata

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/bound"
)

// Conn is one open connection to the host: a byte stream with deadlines. A
// Read or Write past its deadline fails with an error that matches
// os.ErrDeadlineExceeded. Close must unblock a pending Read or Write.
type Conn interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	Close() error
}

// Transport opens connections to the host.
type Transport interface {
	// Open returns a new connection. For a serial port it also takes the
	// port's lock, released by Conn.Close.
	Open(ctx context.Context) (Conn, error)
	// Shared reports whether the line is shared by every process of the
	// guest and outlives connections (a serial port), so that stale bytes
	// must be drained before use. Sockets give each connection a clean
	// session.
	Shared() bool
	// String names the transport as SEEDKEEPER_MDATA would: "serial:PATH",
	// "unix:PATH", "vsock:CID:PORT".
	String() string
}

// ParseTransport parses a transport in the form SEEDKEEPER_MDATA takes:
// "serial:PATH", "unix:PATH" or "vsock:CID:PORT".
func ParseTransport(s string) (Transport, error) {
	// The messages describe s and never quote it: an environment
	// variable may hold anything.
	kind, arg, ok := strings.Cut(s, ":")
	if !ok || arg == "" {
		return nil, errors.New("transport: want serial:PATH, unix:PATH or vsock:CID:PORT")
	}
	switch kind {
	case "serial":
		return Serial(arg), nil
	case "unix":
		return Unix(arg), nil
	case "vsock":
		cidS, portS, ok := strings.Cut(arg, ":")
		if !ok {
			return nil, errors.New("transport: want vsock:CID:PORT")
		}
		cid, err := bound.ParseInt("transport vsock CID", cidS, 0, math.MaxUint32)
		if err != nil {
			return nil, err
		}
		port, err := bound.ParseInt("transport vsock port", portS, 0, math.MaxUint32)
		if err != nil {
			return nil, err
		}
		return Vsock(uint32(cid), uint32(port)), nil
	}
	return nil, errors.New("transport: unknown kind (want serial, unix or vsock)")
}

// Unix returns a transport over a unix stream socket, such as a zone's
// /native/.zonecontrol/metadata.sock.
func Unix(path string) Transport { return unixTransport(path) }

type unixTransport string

func (u unixTransport) String() string { return "unix:" + string(u) }
func (u unixTransport) Shared() bool   { return false }

func (u unixTransport) Open(ctx context.Context) (Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", string(u))
	if err != nil {
		return nil, classifyOpen(err)
	}
	return c.(*net.UnixConn), nil
}

// classifyOpen marks open errors that no retry can fix. A missing device or
// socket is marked too; the client treats it as transient once the
// transport has worked (a host agent restarting recreates its socket).
func classifyOpen(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission),
		errors.Is(err, syscall.ENOTSOCK), errors.Is(err, syscall.ENOTTY):
		return permanent(err)
	}
	return err
}

// isNotExist reports whether err says the device or socket is missing.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
