package mdata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// Limits that keep a misbehaving line from holding a session for ever or
// using unbounded memory.
const (
	// maxValue bounds one value (and one KEYS list); maxLine is the V2
	// line that carries it, base64 and header included. A longer line is
	// refused as it arrives, before more of it is kept.
	maxValue      = 16 << 20
	maxLine       = (maxValue+2)/3*4 + 64
	maxKeys       = 1 << 16 // keys in one KEYS answer
	maxHostText   = 512     // bytes of a host's FAILURE message kept
	keepBuffer    = 64 << 10
	maxDrainTime  = 2 * time.Second
	maxSkipFrames = 1000 // lines skipped while waiting for one answer
	maxRestarts   = 4    // handshakes restarted in one session start
	maxSkipProbes = 16   // "invalid command" lines skipped while negotiating
	maxResends    = 3    // requests sent again in one session when the host lost one
)

// newRequestID is replaced in tests that check exact bytes on the wire.
var newRequestID = wire.NewRequestID

// session is one open connection that has passed the probe and negotiated
// a protocol version.
type session struct {
	conn    Conn
	shared  bool
	to      Timeouts
	version int // 0 until negotiated, then 1 or 2

	buf []byte // received bytes not yet consumed
	off int

	// yielded: the port's lock is let go until the next request.
	yielded bool

	// nudges counts the bare "\n" sent while waiting for the answer to
	// the current request whose "invalid command" has not come back.
	nudges int
}

// status is a protocol status line as the host agent compares it, without a
// trailing CR. A line longer than any status line ("invalid command" is
// the longest) is none: it is "", which no status equals, and it is never
// copied into a string (an answer of many MiB is compared with
// "invalid command" once a request has been nudged).
func status(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > maxStatus {
		return ""
	}
	return string(line)
}

// maxStatus is longer than every status line the host sends.
const maxStatus = 32

// unexpectedError is a reply that makes no sense at this point of the
// protocol; the session is reset.
type unexpectedError struct {
	step string
	size int    // of the line
	word string // its first word, at most 16 bytes
}

// unexpected describes line without keeping it: say what kind of line it
// was, never its payload. On a shared line it can be someone else's answer
// (a password, a key), and this text goes to logs and systemd's STATUS.
func unexpected(step string, line []byte) *unexpectedError {
	word, _, _ := bytes.Cut(line[:min(len(line), 17)], []byte(" "))
	return &unexpectedError{step: step, size: len(line), word: string(word[:min(len(word), 16)])}
}

func (e *unexpectedError) Error() string {
	return fmt.Sprintf("unexpected reply to %s: a %d-byte line starting %s", e.step, e.size, strconv.Quote(e.word))
}

// timeoutError says which step the host did not answer.
type timeoutError struct {
	step string
	d    time.Duration
	err  error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("no answer to %s within %s", e.step, e.d)
}
func (e *timeoutError) Unwrap() error { return e.err }

// run starts the session if needed and sends r.
func (s *session) run(ctx context.Context, r request) ([]byte, error) {
	defer s.trim()
	if s.version == 0 {
		if err := s.start(ctx); err != nil {
			return nil, err
		}
	}
	if s.version == 1 {
		return s.execV1(ctx, r)
	}
	return s.execV2(ctx, r)
}

// start drains stale input (shared lines only), probes and negotiates. A
// line that is not the answer it waits for (the tail of a killed client's
// exchange, still arriving after the drain) restarts the handshake: drain
// again, probe again. Only a host that keeps doing it fails the start.
func (s *session) start(ctx context.Context) error {
	for restarts := 0; ; restarts++ {
		if s.shared || restarts > 0 {
			if err := s.drain(); err != nil {
				return err
			}
		}
		err := s.handshake(ctx)
		var ue *unexpectedError
		if err == nil || !errors.As(err, &ue) || restarts >= maxRestarts {
			return err
		}
	}
}

// handshake sends the bare "\n" probe, requires "invalid command", and
// negotiates V2 (FAILURE: a V1 host).
func (s *session) handshake(ctx context.Context) error {
	if err := s.write(ctx, []byte("\n")); err != nil {
		return err
	}
	// While the probe goes unanswered it is sent again every Nudge: a
	// partial line a killed client left in the host's buffer swallows the
	// first one.
	line, err := s.readLine(ctx, "probe", s.to.Probe, true)
	if err != nil {
		return err
	}
	if status(line) != wire.InvalidCommand {
		return unexpected("probe", line)
	}
	if err := s.write(ctx, []byte(wire.Negotiate+"\n")); err != nil {
		return err
	}
	for skipped := 0; ; skipped++ {
		line, err = s.readLine(ctx, "NEGOTIATE", s.to.Negotiate, false)
		if err != nil {
			return err
		}
		// The answers to probes sent again, or to a stale probe whose
		// answer the first probe took, come before NEGOTIATE's.
		if status(line) != wire.InvalidCommand || skipped >= maxSkipProbes {
			break
		}
	}
	s.nudges = 0
	switch status(line) {
	case wire.V2OK:
		s.version = 2
	case wire.CodeFailure:
		s.version = 1
	default:
		return unexpected("NEGOTIATE", line)
	}
	return nil
}

// drain reads and discards what is pending on the line and whatever
// follows until it has been quiet for the drain gap. The gap is short:
// stale lines that arrive after it are told apart by the handshake and by
// request IDs.
func (s *session) drain() error {
	s.buf, s.off = s.buf[:0], 0
	var scratch [32 << 10]byte
	total := 0
	start := time.Now()
	for {
		if err := s.conn.SetReadDeadline(time.Now().Add(s.to.Drain)); err != nil {
			return err
		}
		n, err := s.conn.Read(scratch[:])
		total += n
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			return fmt.Errorf("draining: %w", err)
		}
		if time.Since(start) > maxDrainTime {
			return fmt.Errorf("draining: the line kept sending data (%d bytes in %s)", total, time.Since(start).Round(time.Millisecond))
		}
	}
}

// trim lets go of a receive buffer that a large answer grew, keeping what
// is still unread: a session that lives on (seedkeeper watch) does not hold
// the largest line it ever saw.
func (s *session) trim() {
	if cap(s.buf) <= keepBuffer || len(s.buf)-s.off > keepBuffer {
		return
	}
	s.buf = append(make([]byte, 0, keepBuffer), s.buf[s.off:]...)
	s.off = 0
}

// room returns the capacity the receive buffer needs before the next read.
// A line that starts with a V2 frame's header says how long it is: the
// buffer gets room for that line at once (a large value is read into one
// buffer, not a chain of doubling copies that ends past it). Any other
// line, or one that goes on past what its header said, doubles the buffer.
// Never beyond the longest line allowed (and its "\n"): the buffer, not
// the host, decides what is held.
func (s *session) room() int {
	c := cap(s.buf)
	if c-len(s.buf) >= 4096 {
		return c
	}
	if n := announced(s.buf); n > len(s.buf) {
		if n <= c {
			return c
		}
		return min(n, maxLine+1)
	}
	return min(2*c+8192, maxLine+1)
}

// announced returns the length of the line, "\r\n" included, that the V2
// frame header at the start of b announces, or 0 when b does not start
// with a whole header.
func announced(b []byte) int {
	rest, ok := bytes.CutPrefix(b, []byte("V2 "))
	if !ok {
		return 0
	}
	i := bytes.IndexByte(rest[:min(len(rest), 11)], ' ')
	if i < 1 {
		return 0
	}
	n, err := strconv.Atoi(string(rest[:i]))
	if err != nil || n < 0 {
		return 0
	}
	// "V2 ", the length and a space, the CRC and a space, the body, a CR
	// the host may send, "\n".
	return 3 + i + 1 + 8 + 1 + n + 2
}

func (s *session) write(ctx context.Context, b []byte) error {
	// A host that stops reading must not hold us past the context's
	// deadline (a cancelled context closes the connection instead).
	dl, _ := ctx.Deadline()
	if err := s.conn.SetWriteDeadline(dl); err != nil {
		return err
	}
	for len(b) > 0 {
		n, err := s.conn.Write(b)
		if err != nil {
			return fmt.Errorf("writing: %w", err)
		}
		b = b[n:]
	}
	return nil
}

// readLine returns the next line without its "\n", byte for byte (a V1
// value may hold CRs; status lines are compared through status).
//
// Timeouts are on inactivity, never on a whole line, so a slow line and a
// value of many MiB both get through: wait bounds the silence before the
// first byte of the line, s.to.Idle each silence once the line has begun
// (a reply cut off mid-line is noticed that soon). With nudge, every
// s.to.Nudge of silence before the first byte sends a bare "\n", counted
// in s.nudges: a live host answers it at once with "invalid command". The
// context bounds the whole wait.
func (s *session) readLine(ctx context.Context, step string, wait time.Duration, nudge bool) ([]byte, error) {
	idle := min(s.to.Idle, wait)
	nudge = nudge && s.to.Nudge < wait
	last := time.Now() // the last byte, or the start of the wait
	lastNudge := last
	for {
		if i := bytes.IndexByte(s.buf[s.off:], '\n'); i >= 0 {
			line := s.buf[s.off : s.off+i]
			s.off += i + 1
			return line, nil
		}
		if s.off > 0 {
			n := copy(s.buf, s.buf[s.off:])
			s.buf, s.off = s.buf[:n], 0
		}
		if len(s.buf) > maxLine {
			return nil, fmt.Errorf("reading %s: line longer than %d bytes", step, maxLine)
		}
		if c := s.room(); c > cap(s.buf) {
			nb := make([]byte, len(s.buf), c)
			copy(nb, s.buf)
			s.buf = nb
		}
		begun := len(s.buf) > 0
		limit := wait
		if begun {
			limit = idle
		}
		dl := last.Add(limit)
		nudgeDue := false
		if nudge && !begun {
			if nd := lastNudge.Add(s.to.Nudge); nd.Before(dl) {
				dl, nudgeDue = nd, true
			}
		}
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl, nudgeDue = d, false
		}
		if err := s.conn.SetReadDeadline(dl); err != nil {
			return nil, err
		}
		n, err := s.conn.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if n > 0 {
			last = time.Now()
		}
		if err != nil && n == 0 {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("reading %s: %w", step, err)
			}
			if nudgeDue {
				if err := s.write(ctx, []byte("\n")); err != nil {
					return nil, err
				}
				s.nudges++
				lastNudge = time.Now()
				continue
			}
			if begun {
				return nil, &timeoutError{step + " (reply cut off)", idle, err}
			}
			return nil, &timeoutError{step, limit, err}
		}
	}
}

// execV2 sends one V2 frame and waits for the frame that answers it.
//
// While a GET or KEYS goes unanswered, a bare "\n" is sent every Nudge.
// The host answers lines in order and answers these two at once, so an
// "invalid command" to a "\n" sent after the request means the request
// was lost (the host restarted, or the line ate it): it is sent again at
// once, with a new request ID. PUT and DELETE are answered only once the
// host has updated its store, after lines that came later, so they are
// not nudged.
func (s *session) execV2(ctx context.Context, r request) ([]byte, error) {
	timeout := s.to.Read
	nudge := true
	if r.code == wire.CodePut || r.code == wire.CodeDelete {
		timeout, nudge = s.to.Write, false
	}
	for resends := 0; ; resends++ {
		v, err := s.sendV2(ctx, r, timeout, nudge)
		if !errors.Is(err, errLost) || resends >= maxResends {
			return v, err
		}
	}
}

// errLost: the host answered a later line but not the request.
var errLost = errors.New("the host answered a later probe but not the request")

func (s *session) sendV2(ctx context.Context, r request, timeout time.Duration, nudge bool) ([]byte, error) {
	id := newRequestID()
	f := wire.Frame{RequestID: id, Code: r.code, Payload: r.payload}
	s.nudges = 0
	if err := s.write(ctx, f.Append(nil)); err != nil {
		return nil, err
	}
	for skipped := 0; skipped < maxSkipFrames; skipped++ {
		line, err := s.readLine(ctx, r.code, timeout, nudge)
		if err != nil {
			return nil, err
		}
		if s.nudges > 0 && status(line) == wire.InvalidCommand {
			return nil, errLost
		}
		reply, ok := findFrame(line, id)
		if !ok {
			// Garbage, a corrupt frame, a stale reply meant for a
			// client that was killed, an answer to an earlier probe:
			// not our answer.
			continue
		}
		switch reply.Code {
		case wire.CodeSuccess:
			v, err := s.payload(reply)
			if err != nil {
				// The CRC matched, so this is what the host sent.
				return nil, fmt.Errorf("reading %s: the answer's payload is not base64", r.code)
			}
			return v, nil
		case wire.CodeNotFound:
			return nil, ErrNotFound
		default:
			return nil, hostError(reply)
		}
	}
	return nil, fmt.Errorf("%d lines without an answer to %s", maxSkipFrames, r.code)
}

// payload decodes the payload of a SUCCESS frame read into s.buf. A small
// one is copied out; a large one is decoded over its own base64 and handed
// out with the buffer that holds it, the session reading on into a new
// one: a value of many MiB is never held twice.
func (s *session) payload(f wire.Raw) ([]byte, error) {
	if len(f.Encoded) < keepBuffer {
		return f.Payload()
	}
	v, err := f.PayloadInPlace()
	rest := s.buf[s.off:]
	s.buf, s.off = append(make([]byte, 0, max(keepBuffer, len(rest))), rest...), 0
	return v, err
}

// findFrame finds a valid frame with request ID id in line, allowing junk
// before it (a line that picked up garbage before the frame started). A
// valid frame holds no "V2 " after its start (base64 has no space), so only
// the last "V2 " can begin it: linear in the line, however hostile.
func findFrame(line []byte, id string) (wire.Raw, bool) {
	i := bytes.LastIndex(line, []byte("V2 "))
	if i < 0 {
		return wire.Raw{}, false
	}
	f, err := wire.ParseRaw(line[i:])
	if err != nil || f.RequestID != id {
		return wire.Raw{}, false
	}
	return f, true
}

// hostError keeps at most maxHostText bytes of the host's message, cut at
// a character boundary, and says how much more there was: the host may
// send megabytes, and the message goes into errors, logs and STATUS.
func hostError(f wire.Raw) *HostError {
	msg, total, err := f.PayloadPrefix(maxHostText + utf8.UTFMax)
	if err != nil {
		return &HostError{Code: f.Code, Message: "(a message that is not base64)"}
	}
	if total > maxHostText {
		cut := maxHostText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		return &HostError{Code: f.Code, Message: fmt.Sprintf("%s... (%d more bytes)", msg[:cut], total-cut)}
	}
	return &HostError{Code: f.Code, Message: string(msg)}
}

// execV1 sends a V1 GET or KEYS. V1 replies carry no request ID, so on a
// shared line the stale input is drained before every request.
func (s *session) execV1(ctx context.Context, r request) ([]byte, error) {
	var req []byte
	switch r.code {
	case wire.CodeGet:
		if bytes.ContainsAny(r.payload, "\n\r") {
			return nil, fmt.Errorf("%w: a V1 host cannot take a key with a line break", errBadKey)
		}
		req = append(append([]byte("GET "), r.payload...), '\n')
	case wire.CodeKeys:
		req = []byte("KEYS\n")
	default:
		return nil, fmt.Errorf("%w: host does not support %s", ErrUnsupported, r.code)
	}
	if s.shared {
		if err := s.drain(); err != nil {
			return nil, err
		}
	}
	if err := s.write(ctx, req); err != nil {
		return nil, err
	}
	line, err := s.readLine(ctx, r.code, s.to.V1, false)
	if err != nil {
		return nil, err
	}
	switch status(line) {
	case wire.CodeSuccess:
		var body wire.V1Body
		total := 0
		for {
			l, err := s.readLine(ctx, r.code, s.to.V1, false)
			if err != nil {
				return nil, err
			}
			if body.Line(l) {
				return body.Bytes(), nil
			}
			if total += len(l) + 1; total > maxValue+1 {
				return nil, fmt.Errorf("reading %s: a V1 value longer than %d bytes", r.code, maxValue)
			}
		}
	case wire.CodeNotFound:
		return nil, ErrNotFound
	case wire.InvalidCommand:
		return nil, fmt.Errorf("%w: host does not support %s", ErrUnsupported, r.code)
	case wire.CodeFailure:
		return nil, &HostError{Code: wire.CodeFailure, Message: wire.CodeFailure}
	}
	// Without request IDs a line we cannot place may be left over from
	// someone else's exchange: start again rather than guess.
	return nil, unexpected(r.code, line)
}
