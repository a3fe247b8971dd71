package mdatatest

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestListenUnix: every connection is its own session, replies queued when
// the guest shuts down its sending side are still delivered (as Node
// flushes them), and Close removes the socket.
func TestListenUnix(t *testing.T) {
	h := NewHost(vectorStore())
	sock := t.TempDir() + "/metadata.sock"
	if _, err := h.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("\n" + getUUID))
	c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "invalid command\n"+replyUUID {
		t.Errorf("got %q, %v", got, err)
	}

	c2 := dialGuest(t, sock)
	c2.send("KEYS\n")
	c2.expect("SUCCESS\nroot_authorized_keys\nuser-script\n.\n")

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v", err)
	}
	if st := h.Stats(); st.Streams != 2 {
		t.Errorf("Streams = %d", st.Streams)
	}
	if err := h.Serve(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close = %v, want ErrClosed", err)
	}
	if _, err := h.ListenUnix(sock); !errors.Is(err, ErrClosed) {
		t.Errorf("ListenUnix after Close = %v, want ErrClosed", err)
	}
}
