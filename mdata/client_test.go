package mdata

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptHost plays one side of a conversation: for each connection the
// client opens, the next script runs against it. A script step waits for
// exactly the line it expects and writes its reply bytes.
type scriptHost struct {
	t       *testing.T
	mu      sync.Mutex
	scripts [][]step
	opens   int
	got     []string // every line received, in order, across connections
	shared  bool
	wg      sync.WaitGroup
}

type step struct {
	expect string // a line without "\n"; "*" accepts any line
	reply  string // bytes to send back; "" sends nothing
	hang   bool   // after this step, read and ignore everything
}

func (h *scriptHost) String() string { return "script" }
func (h *scriptHost) Shared() bool   { return h.shared }

func (h *scriptHost) Open(ctx context.Context) (Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opens >= len(h.scripts) {
		h.t.Errorf("client opened connection %d; the test scripted %d", h.opens+1, len(h.scripts))
		// Permanent: the client gives up at once instead of opening
		// again every 250 ms for as long as the test's context lasts.
		return nil, permanent(fmt.Errorf("no more scripts"))
	}
	script := h.scripts[h.opens]
	h.opens++
	client, server := net.Pipe()
	h.wg.Add(1)
	go h.serve(server, script)
	return client, nil
}

func (h *scriptHost) serve(c net.Conn, script []step) {
	defer h.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for i, s := range script {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		h.mu.Lock()
		h.got = append(h.got, line)
		h.mu.Unlock()
		if s.expect != "*" && line != s.expect {
			h.t.Errorf("script step %d: got %q, want %q", i, line, s.expect)
			return
		}
		if s.reply != "" {
			if _, err := c.Write([]byte(s.reply)); err != nil {
				return
			}
		}
		if s.hang {
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				h.mu.Lock()
				h.got = append(h.got, strings.TrimSuffix(l, "\n"))
				h.mu.Unlock()
			}
		}
	}
	// Keep the connection open until the client closes it.
	for {
		if _, err := r.ReadByte(); err != nil {
			return
		}
	}
}

func (h *scriptHost) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

var fastTimeouts = Timeouts{
	Drain: 20 * time.Millisecond, Probe: 100 * time.Millisecond, Negotiate: 200 * time.Millisecond,
	Read: 200 * time.Millisecond, Write: 200 * time.Millisecond, V1: 200 * time.Millisecond,
}

// loadTimeouts are for tests of what a reply costs, not of when it
// comes: a loaded machine (guests and -race beside them) can hold the
// client or the script host for longer than fastTimeouts between two
// bytes, and a timeout would then end the session the script is for.
// Nudge is not shorter than Read, so no bare "\n" is sent into a script.
var loadTimeouts = Timeouts{
	Drain: 20 * time.Millisecond, Probe: 10 * time.Second, Negotiate: 10 * time.Second,
	Read: 30 * time.Second, Write: 30 * time.Second, V1: 10 * time.Second,
	Idle: 30 * time.Second, Nudge: 30 * time.Second,
}

func newScripted(t *testing.T, scripts ...[]step) (*Client, *scriptHost) {
	t.Helper()
	return newScriptedWith(t, fastTimeouts, scripts...)
}

func newScriptedWith(t *testing.T, to Timeouts, scripts ...[]step) (*Client, *scriptHost) {
	t.Helper()
	h := &scriptHost{t: t, scripts: scripts}
	c := New(h, &Options{Timeouts: to})
	t.Cleanup(func() { c.Close(); h.wg.Wait() })
	return c, h
}

// boundedCtx bounds a test's requests: a client that keeps starting
// sessions (the host's answers are not what the script expected) fails
// the test in minutes rather than hanging it until the package timeout.
func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fixedIDs makes the client use the given request IDs in order.
func fixedIDs(t *testing.T, ids ...string) {
	t.Helper()
	old := newRequestID
	var mu sync.Mutex
	newRequestID = func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(ids) == 0 {
			t.Errorf("more request IDs used than the test expected")
			return "ffffffff"
		}
		id := ids[0]
		ids = ids[1:]
		return id
	}
	t.Cleanup(func() { newRequestID = old })
}

var handshake = []step{
	{expect: "", reply: "invalid command\n"},
	{expect: "NEGOTIATE V2", reply: "V2_OK\n"},
}

func script(steps ...step) []step { return append(append([]step(nil), handshake...), steps...) }

// The session of the real mdata-get sdc:uuid, byte for byte
// (docs/protocol.md, "Starting a session").
func TestGetTranscript(t *testing.T) {
	fixedIDs(t, "7ff58343")
	c, h := newScripted(t, script(step{
		expect: "V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ=",
		reply:  "V2 65 2cd4db13 7ff58343 SUCCESS NGExYjJjM2QtMDAwMC0xMTExLTIyMjItMzMzMzQ0NDQ1NTU1\n",
	}))
	v, err := c.Get(context.Background(), "sdc:uuid")
	if err != nil {
		t.Fatal(err)
	}
	if string(v) != "4a1b2c3d-0000-1111-2222-333344445555" {
		t.Errorf("value = %q", v)
	}
	want := []string{"", "NEGOTIATE V2", "V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ="}
	if got := h.lines(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wire = %q, want %q", got, want)
	}
}

func TestOneSessionForManyRequests(t *testing.T) {
	fixedIDs(t, "0a1b2c3d", "5e6f7a8b", "9c8d7e6f", "89abcdef")
	c, h := newScripted(t, script(
		step{expect: "V2 29 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l", reply: "V2 25 56d408d8 0a1b2c3d SUCCESS d2ViMDE=\n"},
		step{expect: "V2 13 53cae7d4 5e6f7a8b KEYS", reply: "V2 61 a20b00d5 5e6f7a8b SUCCESS cm9vdF9hdXRob3JpemVkX2tleXMKdXNlci1zY3JpcHQ=\n"},
		step{expect: "V2 25 7b1c383a 9c8d7e6f PUT Wm05diBZbUZ5", reply: "V2 21 d096fc1d 9c8d7e6f SUCCESS T0s=\n"},
		step{expect: "V2 20 1729f40a 89abcdef DELETE Zm9v", reply: "V2 21 4b81e668 89abcdef SUCCESS T0s=\n"},
	))
	ctx := context.Background()
	if v, err := c.Get(ctx, "sdc:hostname"); err != nil || string(v) != "web01" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if keys, err := c.Keys(ctx); err != nil || strings.Join(keys, ",") != "root_authorized_keys,user-script" {
		t.Fatalf("Keys = %q, %v", keys, err)
	}
	if err := c.Put(ctx, "foo", []byte("bar")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := c.Delete(ctx, "foo"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if h.opens != 1 {
		t.Errorf("opened %d connections, want 1 session for all requests", h.opens)
	}
}

func TestAnswersStayDistinct(t *testing.T) {
	fixedIDs(t, "fedcba98", "abcdef12", "01234567")
	c, h := newScripted(t, script(
		step{expect: "V2 21 c46f7668 fedcba98 GET bm9wZQ==", reply: "V2 17 69c1c0a9 fedcba98 NOTFOUND\n"},
		step{expect: "*", reply: "V2 16 14e563ba abcdef12 SUCCESS\n"},
		step{expect: "V2 37 c5a3ba46 01234567 PUT YzJSak9tWnZidz09IGVBPT0=", reply: "V2 65 25f3803b 01234567 FAILURE Q2Fubm90IHVwZGF0ZSB0aGUgInNkYyIgTmFtZXNwYWNlLg==\n"},
	))
	ctx := context.Background()

	_, err := c.Get(ctx, "nope")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("NOTFOUND: err = %v, want ErrNotFound", err)
	}
	var op *OpError
	if !errors.As(err, &op) || op.Op != "get" || op.Key != "nope" {
		t.Errorf("NOTFOUND error %v is not an OpError for get nope", err)
	}

	v, err := c.Get(ctx, "empty")
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("empty SUCCESS: %q (nil=%v), %v; want an empty non-nil value", v, v == nil, err)
	}

	err = c.Put(ctx, "sdc:foo", []byte("x"))
	var he *HostError
	if !errors.As(err, &he) || he.Message != `Cannot update the "sdc" Namespace.` {
		t.Fatalf("FAILURE: err = %v, want HostError with the host's message", err)
	}
	if errors.Is(err, ErrNotFound) {
		t.Error("FAILURE matched ErrNotFound")
	}
	if h.opens != 1 {
		t.Errorf("answers caused %d connections; NOTFOUND and FAILURE must not be retried", h.opens)
	}
}

// Frames that are not the answer are skipped: a stale reply with another
// request ID (a killed client's), a frame with a bad CRC, a frame whose
// length is wrong, and garbage. None of them carries the right value.
func TestSkipsFramesThatAreNotTheAnswer(t *testing.T) {
	fixedIDs(t, "abcdef12")
	junk := "" +
		"V2 25 b5a9ff00 00000001 SUCCESS dmFsdWU=\n" + // CRC of another body
		"V2 29 40873553 abcdef12 SUCCESS Zm9vCmJhcg==X\n" + // length off by one
		"V2 25 b5a9ff01 abcdef12 SUCCESS dmFsdWU=\n" + // bad CRC, right ID
		"\x00\xff garbage\n" +
		"V2 25 " + "12345678 deadbeef SUCCESS d3Jvbmc=\n" // bad CRC, other ID
	stale := string(mustFrame("99999999", "SUCCESS", "wrong")) // valid, other ID
	c, _ := newScripted(t, script(step{
		expect: "*",
		reply:  junk + stale + "junk before frame " + string(mustFrame("abcdef12", "SUCCESS", "right")),
	}))
	v, err := c.Get(context.Background(), "k")
	if err != nil || string(v) != "right" {
		t.Fatalf("Get = %q, %v; want right", v, err)
	}
}

func mustFrame(id, code, payload string) []byte {
	return frameBytes(id, code, []byte(payload))
}

func TestV1Fallback(t *testing.T) {
	c, h := newScripted(t, []step{
		{expect: "", reply: "invalid command\n"},
		{expect: "NEGOTIATE V2", reply: "FAILURE\n"},
		{expect: "GET dotted", reply: "SUCCESS\n..leading\n...two\nmid.dle\n.\n"},
		{expect: "GET blank", reply: "SUCCESS\n\n\nfoo\n\nbar\n\n.\n"},
		{expect: "KEYS", reply: "SUCCESS\na\nb\n.\n"},
		{expect: "GET gone", reply: "NOTFOUND\n"},
	})
	ctx := context.Background()
	if v, err := c.Get(ctx, "dotted"); err != nil || string(v) != ".leading\n..two\nmid.dle" {
		t.Fatalf("dotted = %q, %v", v, err)
	}
	// Leading blank lines survive (the C client drops them).
	if v, err := c.Get(ctx, "blank"); err != nil || string(v) != "\n\nfoo\n\nbar\n" {
		t.Fatalf("blank = %q, %v", v, err)
	}
	if keys, err := c.Keys(ctx); err != nil || strings.Join(keys, ",") != "a,b" {
		t.Fatalf("keys = %q, %v", keys, err)
	}
	if _, err := c.Get(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("gone: %v", err)
	}
	n := len(h.lines())
	err := c.Put(ctx, "k", []byte("v"))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "host does not support PUT") {
		t.Fatalf("PUT on V1: %v", err)
	}
	if err := c.Delete(ctx, "k"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("DELETE on V1: %v", err)
	}
	if got := h.lines(); len(got) != n {
		t.Errorf("PUT/DELETE on a V1 host sent %q", got[n:])
	}
}

// Anything but "invalid command" to the probe restarts the handshake on
// the same connection: drain, probe again (here the host first answers a
// partial line a killed client left behind, then a stale V1 reply).
func TestProbeMismatchRestartsHandshake(t *testing.T) {
	fixedIDs(t, "abcdef12")
	c, h := newScripted(t, []step{
		{expect: "", reply: "FAILURE\n"},
		{expect: "", reply: "NOTFOUND\n"},
		{expect: "", reply: "invalid command\n"},
		{expect: "NEGOTIATE V2", reply: "V2_OK\n"},
		{expect: "*", reply: string(mustFrame("abcdef12", "SUCCESS", "v"))},
	})
	v, err := c.Get(context.Background(), "k")
	if err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if h.opens != 1 {
		t.Errorf("opens = %d, want 1", h.opens)
	}
}

// A stale "invalid command" ahead of the probe's answer (a killed client's
// probe): the probe takes the stale one, and the real one, arriving while
// NEGOTIATE waits, is skipped rather than taken for NEGOTIATE's answer.
func TestStaleInvalidCommandBeforeNegotiate(t *testing.T) {
	fixedIDs(t, "abcdef12")
	c, h := newScripted(t, []step{
		{expect: "", reply: "invalid command\ninvalid command\n"},
		{expect: "NEGOTIATE V2", reply: "V2_OK\n"},
		{expect: "*", reply: string(mustFrame("abcdef12", "SUCCESS", "v"))},
	})
	v, err := c.Get(context.Background(), "k")
	if err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if h.opens != 1 {
		t.Errorf("opens = %d, want 1", h.opens)
	}
}

// A stale V2_OK where the probe's answer should be restarts the handshake;
// the V2_OK is never taken for an answer to NEGOTIATE that was not sent.
func TestStaleV2OKRestartsHandshake(t *testing.T) {
	fixedIDs(t, "abcdef12")
	c, h := newScripted(t, []step{
		{expect: "", reply: "V2_OK\n"},
		{expect: "", reply: "invalid command\n"},
		{expect: "NEGOTIATE V2", reply: "V2_OK\n"},
		{expect: "*", reply: string(mustFrame("abcdef12", "SUCCESS", "v"))},
	})
	v, err := c.Get(context.Background(), "k")
	if err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	want := []string{"", "", "NEGOTIATE V2"}
	if got := h.lines(); len(got) < 3 || strings.Join(got[:3], "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q, want %q then the GET", got, want)
	}
}

// A GET the host lost (it restarted after reading it): the "\n" sent
// after Nudge of silence comes back as "invalid command" with no answer
// before it, so the request goes again with a new ID on the same session,
// long before the read timeout (an hour here; the context allows 20s).
func TestLostRequestIsSentAgainAfterNudge(t *testing.T) {
	fixedIDs(t, "00000001", "00000002")
	h := &scriptHost{t: t, scripts: [][]step{script(
		step{expect: "*"},
		step{expect: "", reply: "invalid command\n"},
		step{expect: "*", reply: string(mustFrame("00000002", "SUCCESS", "v"))},
	)}}
	to := fastTimeouts
	to.Read, to.Nudge = time.Hour, 30*time.Millisecond
	c := New(h, &Options{Timeouts: to})
	t.Cleanup(func() { c.Close(); h.wg.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := c.Get(ctx, "k")
	if err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if h.opens != 1 {
		t.Errorf("opens = %d, want 1", h.opens)
	}
	got := h.lines()
	if len(got) < 5 || !strings.Contains(got[2], " 00000001 GET ") || got[3] != "" || !strings.Contains(got[4], " 00000002 GET ") {
		t.Errorf("lines = %q, want the handshake, GET 00000001, a bare line, GET 00000002", got)
	}
}

// A reply cut off mid-line: Idle after its last byte the session is reset
// and the request sent again, although the read timeout is an hour.
func TestReplyCutOffMidLineTimesOutOnIdle(t *testing.T) {
	fixedIDs(t, "00000001", "00000002")
	full := string(mustFrame("00000001", "SUCCESS", "value"))
	h := &scriptHost{t: t, scripts: [][]step{
		script(step{expect: "*", reply: full[:len(full)/2], hang: true}),
		script(step{expect: "*", reply: string(mustFrame("00000002", "SUCCESS", "value"))}),
	}}
	to := fastTimeouts
	to.Read, to.Idle = time.Hour, 30*time.Millisecond
	c := New(h, &Options{Timeouts: to})
	t.Cleanup(func() { c.Close(); h.wg.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := c.Get(ctx, "k")
	if err != nil || string(v) != "value" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if h.opens != 2 {
		t.Errorf("opens = %d, want 2", h.opens)
	}
}

// A slow line is not cut off: bytes 20ms apart, with an Idle of 100ms and
// a whole reply that takes far longer than Idle.
func TestSlowLineIsNotCutOff(t *testing.T) {
	t.Parallel() // waits out real timers: overlaps the package's other waits
	client, server := net.Pipe()
	defer client.Close()
	s := &session{conn: client, to: fastTimeouts}
	s.to.Idle = 100 * time.Millisecond
	line := "V2 this line arrives one byte at a time"
	go func() {
		for i := range len(line) {
			time.Sleep(20 * time.Millisecond)
			server.Write([]byte{line[i]})
		}
		server.Write([]byte("\n"))
	}()
	got, err := s.readLine(context.Background(), "GET", time.Second, false)
	if err != nil || string(got) != line {
		t.Fatalf("readLine = %q, %v", got, err)
	}
}

// A host that stops answering mid-request: the client times out, opens a
// new session and sends the request again with a fresh request ID.
func TestTimeoutRetriesWithFreshID(t *testing.T) {
	fixedIDs(t, "00000001", "00000002")
	c, h := newScripted(t,
		script(step{expect: "*", hang: true}),
		script(step{expect: "*", reply: string(mustFrame("00000002", "SUCCESS", "v"))}),
	)
	v, err := c.Get(context.Background(), "k")
	if err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	var ids []string
	for _, l := range h.lines() {
		if strings.HasPrefix(l, "V2 ") {
			ids = append(ids, strings.Fields(l)[3])
		}
	}
	if strings.Join(ids, ",") != "00000001,00000002" {
		t.Errorf("request IDs on the wire = %v, want a fresh one after the reset", ids)
	}
}

// A silent host: the call returns ErrUnavailable when the context ends,
// wrapping the context's error, and says what it was waiting for.
func TestSilentHostHonoursDeadline(t *testing.T) {
	t.Parallel() // waits out real timers: overlaps the package's other waits
	var scripts [][]step
	for range 100 {
		scripts = append(scripts, []step{{expect: "", hang: true}})
	}
	c, _ := newScripted(t, scripts...)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "k"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrUnavailable wrapping DeadlineExceeded", err)
		}
		if !strings.Contains(err.Error(), "probe") {
			t.Errorf("err = %v; want it to say the probe was not answered", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get hung long past its deadline")
	}
}

func TestCancelledContextUnblocksRead(t *testing.T) {
	fixedIDs(t, "00000001")
	c, _ := newScripted(t, script(step{expect: "*", hang: true}))
	c.to.Read = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "k"); done <- err }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not unblock the read")
	}
}

func TestProgressWhileWaiting(t *testing.T) {
	t.Parallel() // waits out real timers: overlaps the package's other waits
	var scripts [][]step
	for range 100 {
		scripts = append(scripts, []step{{expect: "", hang: true}})
	}
	h := &scriptHost{t: t, scripts: scripts}
	var mu sync.Mutex
	var msgs []string
	c := New(h, &Options{Timeouts: fastTimeouts, ProgressInterval: 600 * time.Millisecond,
		Progress: func(m string) { mu.Lock(); msgs = append(msgs, m); mu.Unlock() }})
	t.Cleanup(func() { c.Close(); h.wg.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 1600*time.Millisecond)
	defer cancel()
	c.Get(ctx, "k")
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) < 2 || !strings.HasPrefix(msgs[0], "waiting for the metadata host on script") ||
		!strings.HasPrefix(msgs[1], "still waiting") {
		t.Errorf("progress = %q; want a first line and then still-waiting lines", msgs)
	}
	if attempts := h.opens; len(msgs) >= attempts {
		t.Errorf("%d progress lines for %d attempts; want fewer lines than attempts", len(msgs), attempts)
	}
}

func TestPermanentOpenErrorIsNotRetried(t *testing.T) {
	c := New(Serial("/nonexistent/ttyS1"), &Options{Timeouts: fastTimeouts})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Get(ctx, "k")
	if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "/nonexistent/ttyS1") {
		t.Fatalf("err = %v; want an immediate error naming the device", err)
	}
}

func TestParseTransport(t *testing.T) {
	for in, want := range map[string]string{
		"serial:/dev/ttyS1":           "serial:/dev/ttyS1",
		"unix:/native/.zonecontrol/x": "unix:/native/.zonecontrol/x",
		"vsock:2:1024":                "vsock:2:1024",
	} {
		tr, err := ParseTransport(in)
		if err != nil || tr.String() != want {
			t.Errorf("ParseTransport(%q) = %v, %v", in, tr, err)
		}
	}
	for _, bad := range []string{"", "serial:", "tcp:1.2.3.4:5", "vsock:x:1", "vsock:2", "/dev/ttyS1"} {
		if _, err := ParseTransport(bad); err == nil {
			t.Errorf("ParseTransport(%q) succeeded", bad)
		}
	}
}

func TestLineTooLongIsAnError(t *testing.T) {
	s := &session{buf: bytes.Repeat([]byte("x"), maxLine+1), to: fastTimeouts}
	if _, err := s.readLine(context.Background(), "GET", time.Second, false); err == nil {
		t.Fatal("no error for an endless line")
	}
}

// V1 values come back byte for byte, CRs included: only status lines are
// compared without a trailing CR.
func TestV1KeepsCR(t *testing.T) {
	c, _ := newScripted(t, []step{
		{expect: "", reply: "invalid command\r\n"},
		{expect: "NEGOTIATE V2", reply: "FAILURE\r\n"},
		{expect: "GET crlf", reply: "SUCCESS\r\nline1\r\nline2\r\n\n.\n"},
	})
	v, err := c.Get(context.Background(), "crlf")
	if err != nil || string(v) != "line1\r\nline2\r\n" {
		t.Fatalf("Get = %q, %v; want the CRs kept", v, err)
	}
}

// The text of an unexpected reply goes to logs and systemd's STATUS; on a
// shared line it can be someone else's answer, so its payload never shows.
func TestUnexpectedReplyHidesPayload(t *testing.T) {
	secret := "SHVudGVyMjohU3VwZXJTZWNyZXRQYXNzd29yZA=="
	e := unexpected("probe", []byte("V2 45 0123abcd 89abcdef SUCCESS "+secret))
	if strings.Contains(e.Error(), secret) || !strings.Contains(e.Error(), `"V2"`) {
		t.Errorf("%q", e.Error())
	}
}

// A line of many frame-like candidates is searched once: the only place a
// valid frame can start is the last "V2 ".
func TestFindFrameTakesTheLastCandidate(t *testing.T) {
	junk := bytes.Repeat([]byte("V2 25 b5a9ff01 abcdef12 SUCCESS dmFsdWU="), 50000) // bad CRC
	line := append(junk, bytes.TrimSuffix(frameBytes("abcdef12", "SUCCESS", []byte("right")), []byte("\n"))...)
	f, ok := findFrame(line, "abcdef12")
	if p, err := f.Payload(); !ok || err != nil || string(p) != "right" {
		t.Fatalf("findFrame = %+v, %v", f, ok)
	}
	if _, ok := findFrame(junk, "abcdef12"); ok {
		t.Fatal("found a frame in a line whose last candidate is not one")
	}
}
