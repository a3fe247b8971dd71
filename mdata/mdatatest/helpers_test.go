package mdatatest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// guest is the client end of a net.Pipe served by a Host.
type guest struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

// pipe starts h on one end of a net.Pipe and returns the other.
func pipe(t testing.TB, h *Host) *guest {
	t.Helper()
	server, client := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- h.Serve(server) }()
	t.Cleanup(func() {
		client.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		h.Close()
	})
	return &guest{t: t, c: client, r: bufio.NewReaderSize(client, 64<<10)}
}

func (g *guest) send(s string) {
	g.t.Helper()
	g.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(g.c, s); err != nil {
		g.t.Fatalf("writing %q: %v", s, err)
	}
}

// expect reads exactly len(want) bytes and compares them with want.
func (g *guest) expect(want string) {
	g.t.Helper()
	g.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	n, err := io.ReadFull(g.r, got)
	if err != nil || string(got) != want {
		g.t.Fatalf("reply:\n got %q (err %v)\nwant %q", got[:n], err, want)
	}
}

// line reads one line, "\n" included.
func (g *guest) line() []byte {
	g.t.Helper()
	g.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	l, err := g.r.ReadBytes('\n')
	if err != nil {
		g.t.Fatalf("reading a line: %v (got %q)", err, l)
	}
	return l
}

// expectNothing proves no reply was sent for what went before: the next
// probe's answer is the next thing on the stream.
func (g *guest) expectNothing() {
	g.t.Helper()
	g.send("\n")
	g.expect("invalid command\n")
}

// frame builds a V2 request line.
func frame(reqID, code string, payload []byte) string {
	return string(wire.Frame{RequestID: reqID, Code: code, Payload: payload}.Append(nil))
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// vectorStore holds the data the V2 frame vectors were made with.
func vectorStore() *Store {
	s := NewStore()
	s.SetString("sdc:uuid", SampleUUID)
	s.SetString("sdc:hostname", "web01")
	s.SetString("root_authorized_keys", "ssh-ed25519 AAAA test")
	s.SetString("user-script", "#!/bin/sh\ntrue\n")
	return s
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed)
}

func dialGuest(t testing.TB, path string) *guest {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &guest{t: t, c: c, r: bufio.NewReader(c)}
}
