package mdata

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/alloctest"
	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// rawFrame is a V2 line around any body, with the right length and CRC:
// what a hostile host can send as easily as an honest one.
func rawFrame(body []byte) string {
	b := []byte("V2 " + strconv.Itoa(len(body)) + " ")
	b = wire.AppendCRC(b, body)
	b = append(b, ' ')
	b = append(b, body...)
	return string(append(b, '\n'))
}

const hostileLine = 8 << 20

// One 8 MiB line from the host cost the client 225 MiB: the frame was
// split at every space before its fields were counted (a slice header per
// space). The fields are counted first now, so the cost of any line is a
// small multiple of its length: the receive buffer, and the script host's
// own copy of what it sends (about twice the line in all, 16 MiB here; it
// was 225 MiB).
func TestHostileFrameCostsLittleMoreThanItsLength(t *testing.T) {
	ctx := boundedCtx(t)
	fixedIDs(t, "0000beef")
	spaces := rawFrame(append([]byte("0000beef SUCCESS"), bytes.Repeat([]byte(" "), hostileLine)...))
	good := string(frameBytes("0000beef", "SUCCESS", []byte("v")))
	c, _ := newScriptedWith(t, loadTimeouts, script(step{expect: "*", reply: spaces + good}))
	var v []byte
	var err error
	n := alloctest.Bytes(func() { v, err = c.Get(ctx, "k") })
	if err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v; want the frame after the hostile one", v, err)
	}
	if n > 6*hostileLine {
		t.Errorf("an %d-byte line cost %d bytes (%.1f times its length), want at most 6 times", hostileLine, n, float64(n)/hostileLine)
	}
	t.Logf("an %d MiB line: %.1f MiB allocated", hostileLine>>20, float64(n)/(1<<20))
}

// KEYS: 8 MiB of empty lines used to become 8 million strings (190 MiB).
// Keys are counted before anything is allocated for them; more than
// maxKeys is an error, not a list.
func TestHostileKeysAreCountedFirst(t *testing.T) {
	ctx := boundedCtx(t)
	fixedIDs(t, "0000beef", "0000bef0")
	empty := string(frameBytes("0000beef", "SUCCESS", bytes.Repeat([]byte("\n"), hostileLine)))
	many := string(frameBytes("0000bef0", "SUCCESS", bytes.Repeat([]byte("k\n"), maxKeys+1)))
	c, _ := newScriptedWith(t, loadTimeouts, script(step{expect: "*", reply: empty}, step{expect: "*", reply: many}))
	var keys []string
	var err error
	n := alloctest.Bytes(func() { keys, err = c.Keys(ctx) })
	if err != nil || len(keys) != 0 {
		t.Fatalf("Keys = %d keys, %v; want none", len(keys), err)
	}
	// The line (11 MiB of base64) grows the buffer, the value is decoded
	// once and copied once into the string the keys share.
	if n > 8*hostileLine {
		t.Errorf("KEYS of %d empty lines cost %d bytes (%.1f times), want at most 8 times", hostileLine, n, float64(n)/hostileLine)
	}
	t.Logf("KEYS of 8 Mi empty lines: %.1f MiB allocated", float64(n)/(1<<20))
	keys, err = c.Keys(ctx)
	var op *OpError
	if err == nil || !errors.As(err, &op) || !strings.Contains(err.Error(), "more than the 65536 allowed") {
		t.Fatalf("Keys of %d keys = %d, %v; want an error", maxKeys+1, len(keys), err)
	}
}

// A FAILURE message is the host's text: it is cut to maxHostText bytes as
// it is decoded, never kept whole, and the error says how much was left.
func TestHostFailureTextIsTruncatedWhereItEnters(t *testing.T) {
	ctx := boundedCtx(t)
	fixedIDs(t, "0000beef", "0000bef0")
	long := bytes.Repeat([]byte("é"), hostileLine/2) // two bytes each: the cut must not split one
	c, _ := newScriptedWith(t, loadTimeouts, script(
		step{expect: "*", reply: string(frameBytes("0000beef", "FAILURE", long))},
		step{expect: "*", reply: string(frameBytes("0000bef0", "FAILURE", []byte("short")))},
	))
	var err error
	n := alloctest.Bytes(func() { _, err = c.Get(ctx, "k") })
	var he *HostError
	if !errors.As(err, &he) || he.Code != "FAILURE" {
		t.Fatalf("Get = %v, want a HostError", err)
	}
	if len(he.Message) > maxHostText+40 || !strings.HasSuffix(he.Message, "... (8388096 more bytes)") || !strings.HasPrefix(he.Message, "éé") {
		t.Errorf("message of %d bytes: ...%q", len(he.Message), he.Message[max(0, len(he.Message)-40):])
	}
	if strings.ContainsRune(he.Message, '\uFFFD') {
		t.Error("the cut split a character")
	}
	// The line buffer and the host's copy; never the decoded message.
	if line := uint64(4 * hostileLine / 3); n > 6*line {
		t.Errorf("a FAILURE line of %d bytes cost %d bytes (%.1f times its length), want at most 6 times", line, n, float64(n)/float64(line))
	}
	if _, err := c.Get(ctx, "k"); !errors.As(err, &he) || he.Message != "short" {
		t.Errorf("short FAILURE = %v", err)
	}
}

// The longest value allowed comes through; one byte more is refused as
// the line arrives, and a code the protocol does not have is not kept
// whole either.
func TestLineLimitIsTheValueLimit(t *testing.T) {
	ctx := boundedCtx(t)
	fixedIDs(t, "0000beef", "0000bef0")
	value := bytes.Repeat([]byte{0xa5}, maxValue)
	ok := frameBytes("0000beef", "SUCCESS", value)
	if len(ok) > maxLine+1 {
		t.Fatalf("a %d-byte value makes a %d-byte line, more than maxLine %d", maxValue, len(ok), maxLine)
	}
	c, _ := newScriptedWith(t, loadTimeouts, script(step{expect: "*", reply: string(ok)}))
	v, err := c.Get(ctx, "k")
	if err != nil || !bytes.Equal(v, value) {
		t.Fatalf("Get of a %d-byte value: %d bytes, %v", maxValue, len(v), err)
	}
	if cap(c.sess.buf) > keepBuffer {
		t.Errorf("the session keeps a %d-byte buffer after the answer", cap(c.sess.buf))
	}

	s := &session{buf: bytes.Repeat([]byte("x"), maxLine+1), to: fastTimeouts}
	if _, err := s.readLine(context.Background(), "GET", fastTimeouts.Read, false); err == nil || !strings.Contains(err.Error(), "line longer than") {
		t.Errorf("a line of maxLine+1 bytes: %v", err)
	}
	if _, err := wire.ParseRaw([]byte(strings.TrimSuffix(rawFrame([]byte("0000beef "+strings.Repeat("A", 33))), "\n"))); err == nil {
		t.Error("a 33-letter code was taken")
	}
}

// SEEDKEEPER_MDATA's vsock CID and port go through the one range check,
// and no message about the variable quotes it (it may hold anything).
func TestParseTransportRangeCheckedWithoutQuoting(t *testing.T) {
	for in, want := range map[string]string{
		"vsock:4294967296:1":      "transport vsock CID: out of range (want between 0 and 4294967295)",
		"vsock:2:-1":              "transport vsock port: out of range (want between 0 and 4294967295)",
		"vsock:2":                 "transport: want vsock:CID:PORT",
		"SECRET:x":                "transport: unknown kind (want serial, unix or vsock)",
		"SECRETWITHOUTAKIND":      "transport: want serial:PATH, unix:PATH or vsock:CID:PORT",
		"vsock:SECRET:SECRETPORT": "transport vsock CID: out of range",
	} {
		_, err := ParseTransport(in)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseTransport: error = %v, want %q", err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "4294967296")) {
			t.Errorf("%q quotes the input", err)
		}
	}
}

// replayHost answers each line the client writes with the next of its
// replies (nil: no answer), handed to the client's reads without a copy:
// what reading them costs is the client's alone.
type replayHost struct{ replies [][]byte }

func (h *replayHost) String() string { return "replay" }
func (h *replayHost) Shared() bool   { return false }
func (h *replayHost) Open(context.Context) (Conn, error) {
	return &replayConn{replies: h.replies}, nil
}

type replayConn struct {
	replies [][]byte
	pending [][]byte // answered, not yet read
}

func (c *replayConn) Write(p []byte) (int, error) {
	if bytes.HasSuffix(p, []byte("\n")) && len(c.replies) > 0 {
		if c.replies[0] != nil {
			c.pending = append(c.pending, c.replies[0])
		}
		c.replies = c.replies[1:]
	}
	return len(p), nil
}

// Read returns at once: with nothing pending, the deadline has passed.
func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(p, c.pending[0])
	if c.pending[0] = c.pending[0][n:]; len(c.pending[0]) == 0 {
		c.pending = c.pending[1:]
	}
	return n, nil
}

func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }
func (c *replayConn) Close() error                     { return nil }

// The largest value costs about its line once: the receive buffer is
// sized from the length the frame's header announces, not doubled up to
// it, the payload is decoded into the line's own bytes, which the session
// then gives up, and a line is compared with a status line without being
// copied. It cost 2.8 times the line (the doubling copies, a buffer grown
// past the line, a second buffer for the decoded value), and once the
// request had been nudged (a slow host) one more copy of the line, as a
// string: a process holding the value peaked at 52-66 MiB.
func TestLargestValueCostsItsLineOnce(t *testing.T) {
	value := bytes.Repeat([]byte("0123456789abcdef"), maxValue/16)
	for _, nudged := range []bool{false, true} {
		t.Run(map[bool]string{false: "answered at once", true: "answered after a nudge"}[nudged], func(t *testing.T) {
			ctx := boundedCtx(t)
			fixedIDs(t, "0000beef", "0000bef0")
			line := frameBytes("0000beef", "SUCCESS", value)
			small := frameBytes("0000bef0", "SUCCESS", []byte("v"))
			replies := [][]byte{[]byte("invalid command\n"), []byte("V2_OK\n"), line}
			to := loadTimeouts
			if nudged {
				// The GET goes unanswered; the nudge gets the answer
				// and its own "invalid command" after it.
				replies = [][]byte{[]byte("invalid command\n"), []byte("V2_OK\n"), nil, line, []byte("invalid command\n")}
				to.Nudge = time.Millisecond
			}
			h := &replayHost{replies: append(replies, small)}
			c := New(h, &Options{Timeouts: to})
			defer c.Close()
			var v []byte
			var err error
			n := alloctest.Bytes(func() { v, err = c.Get(ctx, "k") })
			if err != nil || !bytes.Equal(v, value) {
				t.Fatalf("Get of a %d-byte value: %d bytes, %v", len(value), len(v), err)
			}
			if nudged && c.sess.nudges == 0 {
				t.Fatal("the request was not nudged")
			}
			if limit := uint64(len(line)) * 13 / 10; n > limit {
				t.Errorf("a %d-byte line cost %d bytes (%.2f times its length), want at most 1.3 times", len(line), n, float64(n)/float64(len(line)))
			}
			t.Logf("a %.1f MiB line: %.1f MiB allocated", float64(len(line))/(1<<20), float64(n)/(1<<20))
			if cap(c.sess.buf) > keepBuffer {
				t.Errorf("the session keeps a %d-byte buffer after the answer", cap(c.sess.buf))
			}
			// The value is the caller's: the next answer, read into the
			// session's new buffer, does not overwrite it.
			if w, err := c.Get(ctx, "k"); err != nil || string(w) != "v" || !bytes.Equal(v, value) {
				t.Errorf("the next Get = %q, %v; the first value intact: %v", w, err, bytes.Equal(v, value))
			}
		})
	}
}

// BenchmarkGetLargestValue reads one value at maxValue on a new session
// each time, from a host whose replies cost nothing: B/op is the client's
// cost of the largest value.
func BenchmarkGetLargestValue(b *testing.B) {
	old := newRequestID
	newRequestID = func() string { return "0000beef" }
	b.Cleanup(func() { newRequestID = old })
	value := bytes.Repeat([]byte("0123456789abcdef"), maxValue/16)
	line := frameBytes("0000beef", "SUCCESS", value)
	ctx := context.Background()
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		c := New(&replayHost{replies: [][]byte{[]byte("invalid command\n"), []byte("V2_OK\n"), line}}, &Options{Timeouts: loadTimeouts})
		if v, err := c.Get(ctx, "k"); err != nil || len(v) != len(value) {
			b.Fatal(len(v), err)
		}
		c.Close()
	}
}
