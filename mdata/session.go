package mdata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// Limits that keep a misbehaving line from holding a session for ever or
// using unbounded memory.
const (
	maxLine       = 64 << 20 // a 4 MiB value is a 5.6 MB base64 line
	maxDrain      = 1 << 20  // bytes of stale input before we give up draining
	maxDrainTime  = 2 * time.Second
	maxSkipFrames = 1000 // lines skipped while waiting for one answer
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
}

// status is a protocol status line as the host agent compares it, without a
// trailing CR.
func status(line []byte) string { return string(bytes.TrimSuffix(line, []byte("\r"))) }

// unexpectedError is a reply that makes no sense at this point of the
// protocol; the session is reset.
type unexpectedError struct {
	step string
	line []byte
}

func (e *unexpectedError) Error() string {
	// Say what kind of line it was, never its payload: on a shared line it
	// can be someone else's answer (a password, a key), and this text goes
	// to logs and systemd's STATUS.
	word, _, _ := bytes.Cut(e.line, []byte(" "))
	if len(word) > 16 {
		word = word[:16]
	}
	return fmt.Sprintf("unexpected reply to %s: a %d-byte line starting %s", e.step, len(e.line), strconv.Quote(string(word)))
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

// start drains stale input (shared lines only), probes and negotiates.
func (s *session) start(ctx context.Context) error {
	if s.shared {
		if err := s.drain(); err != nil {
			return err
		}
	}
	if err := s.write(ctx, []byte("\n")); err != nil {
		return err
	}
	line, err := s.readLine(ctx, "probe", s.to.Probe)
	if err != nil {
		return err
	}
	if status(line) != wire.InvalidCommand {
		return &unexpectedError{"probe", line}
	}
	if err := s.write(ctx, []byte(wire.Negotiate+"\n")); err != nil {
		return err
	}
	line, err = s.readLine(ctx, "NEGOTIATE", s.to.Negotiate)
	if err != nil {
		return err
	}
	switch status(line) {
	case wire.V2OK:
		s.version = 2
	case wire.CodeFailure:
		s.version = 1
	default:
		return &unexpectedError{"NEGOTIATE", line}
	}
	return nil
}

// drain reads and discards input until the line has been silent for the
// drain timeout.
func (s *session) drain() error {
	s.buf, s.off = s.buf[:0], 0
	var scratch [4096]byte
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
		if total > maxDrain || time.Since(start) > maxDrainTime {
			return fmt.Errorf("draining: the line kept sending data (%d bytes in %s)", total, time.Since(start).Round(time.Millisecond))
		}
	}
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
// timeout bounds the wait for each read, the context the whole wait.
func (s *session) readLine(ctx context.Context, step string, timeout time.Duration) ([]byte, error) {
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
		if len(s.buf) >= maxLine {
			return nil, fmt.Errorf("reading %s: line longer than %d bytes", step, maxLine)
		}
		if cap(s.buf)-len(s.buf) < 4096 {
			nb := make([]byte, len(s.buf), 2*cap(s.buf)+8192)
			copy(nb, s.buf)
			s.buf = nb
		}
		dl := time.Now().Add(timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl = d
		}
		if err := s.conn.SetReadDeadline(dl); err != nil {
			return nil, err
		}
		n, err := s.conn.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil && n == 0 {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, &timeoutError{step, timeout, err}
			}
			return nil, fmt.Errorf("reading %s: %w", step, err)
		}
	}
}

// execV2 sends one V2 frame and waits for the frame that answers it.
func (s *session) execV2(ctx context.Context, r request) ([]byte, error) {
	id := newRequestID()
	f := wire.Frame{RequestID: id, Code: r.code, Payload: r.payload}
	if err := s.write(ctx, f.Append(nil)); err != nil {
		return nil, err
	}
	timeout := s.to.Read
	if r.code == wire.CodePut || r.code == wire.CodeDelete {
		timeout = s.to.Write
	}
	for skipped := 0; skipped < maxSkipFrames; skipped++ {
		line, err := s.readLine(ctx, r.code, timeout)
		if err != nil {
			return nil, err
		}
		reply, ok := findFrame(line, id)
		if !ok {
			// Garbage, a corrupt frame or a stale reply meant for a
			// client that was killed: not our answer.
			continue
		}
		switch reply.Code {
		case wire.CodeSuccess:
			if reply.Payload == nil {
				return []byte{}, nil
			}
			return reply.Payload, nil
		case wire.CodeNotFound:
			return nil, ErrNotFound
		default:
			return nil, &HostError{Code: reply.Code, Message: string(reply.Payload)}
		}
	}
	return nil, fmt.Errorf("%d lines without an answer to %s", maxSkipFrames, r.code)
}

// findFrame finds a valid frame with request ID id in line, allowing junk
// before it (a line that picked up garbage before the frame started). A
// valid frame holds no "V2 " after its start (base64 has no space), so only
// the last "V2 " can begin it: linear in the line, however hostile.
func findFrame(line []byte, id string) (wire.Frame, bool) {
	i := bytes.LastIndex(line, []byte("V2 "))
	if i < 0 {
		return wire.Frame{}, false
	}
	f, err := wire.ParseFrame(line[i:])
	if err != nil || f.RequestID != id {
		return wire.Frame{}, false
	}
	return f, true
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
	line, err := s.readLine(ctx, r.code, s.to.V1)
	if err != nil {
		return nil, err
	}
	switch status(line) {
	case wire.CodeSuccess:
		var body wire.V1Body
		total := 0
		for {
			l, err := s.readLine(ctx, r.code, s.to.V1)
			if err != nil {
				return nil, err
			}
			if body.Line(l) {
				return body.Bytes(), nil
			}
			if total += len(l) + 1; total > maxLine {
				return nil, fmt.Errorf("reading %s: a V1 value longer than %d bytes", r.code, maxLine)
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
	return nil, &unexpectedError{r.code, line}
}
