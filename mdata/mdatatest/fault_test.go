package mdatatest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

const (
	getUUID   = "V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ=\n"
	replyUUID = "V2 65 2cd4db13 7ff58343 SUCCESS NGExYjJjM2QtMDAwMC0xMTExLTIyMjItMzMzMzQ0NDQ1NTU1\n"
)

func TestFaultV1Only(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: V1Only})
	g := pipe(t, h)
	g.send("\n")
	g.expect("invalid command\n")
	g.send("NEGOTIATE V2\n")
	g.expect("FAILURE\n")
	g.send(getUUID)
	g.expect("FAILURE\n")
	g.send("V2 1 bad frame\n")
	g.expect("FAILURE\n")
	g.send("GET sdc:hostname\n")
	g.expect("SUCCESS\nweb01\n.\n")
	g.send("KEYS\n")
	g.expect("SUCCESS\nroot_authorized_keys\nuser-script\n.\n")
	if st := h.Stats(); st.Faults != 3 || st.Requests["GET"] != 2 || st.V1Requests != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestFaultV1OnlyCount(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: V1Only, Count: 1})
	g := pipe(t, h)
	g.send("NEGOTIATE V2\n")
	g.expect("FAILURE\n")
	g.send("NEGOTIATE V2\n") // the host was upgraded
	g.expect("V2_OK\n")
	g.send(getUUID)
	g.expect(replyUUID)
}

func TestFaultSilent(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: Silent, Count: 2})
	g := pipe(t, h)
	g.send("\n" + getUUID) // both unanswered
	g.send("\n")
	g.expect("invalid command\n")
	g.send(getUUID)
	g.expect(replyUUID)
	st := h.Stats()
	if st.Faults != 2 || st.Probes != 2 || st.Requests["GET"] != 2 || st.Served != 1 {
		t.Errorf("stats %+v", st)
	}

	h.SetFault(Fault{Mode: Silent})
	for range 5 {
		g.send(getUUID)
	}
	// A write returns once the host read it, maybe before it handled it.
	if err := h.Wait(ctx(t), func(s Stats) bool { return s.Faults == 7 }); err != nil {
		t.Fatal(err)
	}
	h.SetFault(Fault{})
	g.expectNothing()
}

func TestFaultGarbage(t *testing.T) {
	for _, tt := range []struct {
		mode Mode
		want string
	}{
		{GarbageLine, garbage + "\n" + replyUUID},
		{GarbagePrefix, garbage + replyUUID},
	} {
		t.Run(tt.mode.String(), func(t *testing.T) {
			h := NewHost(vectorStore())
			h.SetFault(Fault{Mode: tt.mode, Count: 1})
			g := pipe(t, h)
			g.send("\n") // probes are answered plainly
			g.expect("invalid command\n")
			g.send(getUUID)
			g.expect(tt.want)
			g.send(getUUID)
			g.expect(replyUUID)
		})
	}
	if strings.Contains(garbage, "\n") {
		t.Error("garbage must not contain a newline")
	}
}

func TestFaultStaleFrame(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: StaleFrame})
	g := pipe(t, h)
	g.send("GET sdc:hostname\n") // V1 replies are left alone
	g.expect("SUCCESS\nweb01\n.\n")
	g.send(getUUID)
	f, err := wire.ParseFrame(bytes.TrimSuffix(g.line(), []byte("\n")))
	if err != nil {
		t.Fatalf("the stale frame must be a valid frame: %v", err)
	}
	if f.RequestID == "7ff58343" || f.Code != "SUCCESS" || string(f.Payload) != StaleValue {
		t.Errorf("stale frame = %+v", f)
	}
	g.expect(replyUUID)
	if st := h.Stats(); st.Faults != 1 {
		t.Errorf("Faults = %d", st.Faults)
	}
}

func TestFaultBadCRC(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: BadCRC})
	g := pipe(t, h)
	g.send(getUUID)
	line := bytes.TrimSuffix(g.line(), []byte("\n"))
	if _, err := wire.ParseFrame(line); !errors.Is(err, wire.ErrCRC) {
		t.Fatalf("ParseFrame(%q) = %v, want ErrCRC", line, err)
	}
	fields := strings.Fields(string(line))
	if len(fields) != 6 || fields[3] != "7ff58343" || fields[4] != "SUCCESS" {
		t.Fatalf("bad-CRC frame %q must carry the request's ID", line)
	}
	// Everything but the CRC is right: fixing it gives CorruptValue.
	body := strings.Join(fields[3:], " ")
	fixed := "V2 " + fields[1] + " " + crcHex(body) + " " + body
	f, err := wire.ParseFrame([]byte(fixed))
	if err != nil || string(f.Payload) != CorruptValue {
		t.Fatalf("with the CRC fixed: %+v, %v", f, err)
	}
	g.expect(replyUUID)
}

func TestFaultSlow(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: Slow, Delay: time.Microsecond})
	g := pipe(t, h)
	g.send("\n" + getUUID)
	want := "invalid command\n" + replyUUID
	var got []byte
	buf := make([]byte, 256)
	for len(got) < len(want) {
		g.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := g.c.Read(buf) // net.Pipe: one Read per Write
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("a read returned %d bytes; slow mode must write one byte at a time", n)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFaultLate(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: Late, Delay: time.Millisecond, Count: 1})
	g := pipe(t, h)
	g.send(getUUID)
	g.expect(replyUUID)

	// A restart while the reply waits drops it.
	h.SetFault(Fault{Mode: Late, Delay: time.Hour})
	g.send(getUUID)
	if err := h.WaitServed(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	h.Restart()
	h.SetFault(Fault{})
	g.expectNothing()
}

func TestFaultDropConnection(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: Drop})
	g := pipe(t, h)
	g.send("\n") // probes are answered in full
	g.expect("invalid command\n")
	g.send(getUUID)
	g.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(g.r)
	if err != nil && !isClosed(err) {
		t.Fatal(err)
	}
	if want := replyUUID[:len(replyUUID)/2]; string(got) != want {
		t.Errorf("got %q, want the first half %q", got, want)
	}
}

func TestFaultFailProbe(t *testing.T) {
	h := NewHost(vectorStore())
	h.SetFault(Fault{Mode: FailProbe, Count: 2})
	g := pipe(t, h)
	g.send("\n")
	g.expect("FAILURE\n")
	g.send("NEGOTIATE V2\n") // not a probe: unaffected, not counted
	g.expect("V2_OK\n")
	g.send("\n\n\n")
	g.expect("FAILURE\ninvalid command\ninvalid command\n")
}

// The stale-line modes write their line before the probe's answer, for
// Count probes, and touch nothing else.
func TestFaultStaleLinesBeforeProbe(t *testing.T) {
	for _, tc := range []struct {
		mode  Mode
		stale string
	}{
		{StaleInvalid, "invalid command\n"},
		{StaleV2OK, "V2_OK\n"},
		{Trickle, string(StaleReply("5a1e0001"))},
		{KilledMidReply, string(killedTail())},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			h := NewHost(vectorStore())
			h.SetFault(Fault{Mode: tc.mode, Count: 1, Delay: time.Microsecond})
			g := pipe(t, h)
			g.send("NEGOTIATE V2\n") // not a probe: unaffected
			g.expect("V2_OK\n")
			g.send("\n")
			g.expect(tc.stale + "invalid command\n")
			g.send(getUUID)
			g.expect(replyUUID)
			g.send("\n")
			g.expect("invalid command\n")
			if st := h.Stats(); st.Faults != 1 {
				t.Errorf("faults = %d, want 1", st.Faults)
			}
		})
	}
}

// What KilledMidReply leaves is the tail of a frame: a line of base64 that
// no client can take for a frame, and more than 2 MiB of it.
func TestKilledTailIsNoFrame(t *testing.T) {
	tail := killedTail()
	if len(tail) < 2<<20 || tail[len(tail)-1] != '\n' || bytes.Contains(tail, []byte("V2 ")) {
		t.Errorf("tail: %d bytes, ends %q", len(tail), tail[len(tail)-8:])
	}
}

func TestDownAndUp(t *testing.T) {
	h := NewHost(vectorStore())
	g := pipe(t, h)
	g.send("GET sdc:")
	if err := h.Wait(ctx(t), func(s Stats) bool { return s.BytesIn == 8 }); err != nil {
		t.Fatal(err)
	}
	h.Down() // forgets "GET sdc:"
	g.send("uuid\n" + getUUID)
	if err := h.Wait(ctx(t), func(s Stats) bool { return s.Discarded == 5+len(getUUID) }); err != nil {
		t.Fatal(err)
	}
	h.Up()
	g.expectNothing()
	if st := h.Stats(); st.Requests["GET"] != 0 {
		t.Errorf("requests sent while down were handled: %+v", st)
	}
}

// TestDownFor is the LP #1667735 shape: the host comes up while a client
// keeps probing, and then answers.
func TestDownFor(t *testing.T) {
	h := NewHost(vectorStore())
	h.DownFor(20 * time.Millisecond)
	g := pipe(t, h)
	buf := make([]byte, 64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the host never came up")
		}
		g.send("\n")
		g.c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		n, err := g.r.Read(buf)
		if err == nil {
			if string(buf[:n]) != "invalid command\n" {
				t.Fatalf("got %q", buf[:n])
			}
			break
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatal(err)
		}
	}
	if st := h.Stats(); st.Discarded == 0 || st.Probes != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestRestartForgetsPartialLine(t *testing.T) {
	for _, restart := range []bool{false, true} {
		h := NewHost(vectorStore())
		g := pipe(t, h)
		g.send("GET sdc:u")
		if err := h.Wait(ctx(t), func(s Stats) bool { return s.BytesIn == 9 }); err != nil {
			t.Fatal(err)
		}
		if restart {
			h.Restart()
			g.send("uid\n") // a line "uid": an unknown command
			g.expect("FAILURE\n")
		} else {
			g.send("uid\n")
			g.expect("SUCCESS\n" + SampleUUID + "\n.\n")
		}
	}
}

func TestInjectInput(t *testing.T) {
	h := NewHost(vectorStore())
	h.InjectInput([]byte("V2 25 60f18662 7ff58343 GET c2Rj"))
	g := pipe(t, h)
	g.send("\n") // completes the broken frame: no reply
	g.expectNothing()
	if st := h.Stats(); st.Malformed != 1 || st.Probes != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestInjectOutput(t *testing.T) {
	h := NewHost(vectorStore())
	if err := h.InjectOutput([]byte("x")); err == nil {
		t.Error("InjectOutput with no stream: want an error")
	}
	g := pipe(t, h)
	if err := h.Wait(ctx(t), func(s Stats) bool { return s.Streams == 1 }); err != nil {
		t.Fatal(err)
	}
	stale := frame("01020304", "SUCCESS", []byte("old"))
	done := make(chan error)
	go func() { done <- h.InjectOutput([]byte(stale)) }()
	g.expect(stale)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	g.expectNothing()
}

func TestTranscript(t *testing.T) {
	h := NewHost(vectorStore())
	var logged []string
	h.Logf = func(format string, args ...any) { logged = append(logged, format) }
	g := pipe(t, h)
	g.send("\nNEGOTIATE V2\n" + getUUID)
	g.expect("invalid command\nV2_OK\n" + replyUUID)
	if err := h.Wait(ctx(t), func(s Stats) bool { return s.BytesOut == 22+len(replyUUID) }); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h.Transcript() {
		got = append(got, e.Kind.String()+" "+e.Op+" "+string(e.Data))
		if e.Time.IsZero() {
			t.Errorf("event without time: %v", e)
		}
	}
	want := []string{
		"open  ",
		"probe  ",
		"negotiate  NEGOTIATE V2",
		"request GET " + strings.TrimSuffix(getUUID, "\n"),
		"sent  invalid command\n",
		"sent  V2_OK\n",
		"sent  " + replyUUID,
	}
	// Sent events are written by another goroutine: compare as sets per kind order.
	if len(got) != len(want) {
		t.Fatalf("transcript:\n%s", h.TranscriptString())
	}
	recv, sent := 0, 0
	for _, g := range got {
		if strings.HasPrefix(g, "sent") {
			if g != want[4+sent] {
				t.Errorf("sent event %d = %q, want %q", sent, g, want[4+sent])
			}
			sent++
		} else {
			if g != want[recv] {
				t.Errorf("event %d = %q, want %q", recv, g, want[recv])
			}
			recv++
		}
	}
	if len(logged) < len(want) {
		t.Errorf("Logf called %d times", len(logged))
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes() {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("sideways"); err == nil || !strings.Contains(err.Error(), "stale-frame") {
		t.Errorf("ParseMode(sideways) error = %v; want one listing the modes", err)
	}
	if s := (Fault{Mode: Slow, Delay: time.Millisecond, Count: 3}).String(); s != "slow 1ms x3" {
		t.Errorf("Fault.String = %q", s)
	}
}
