package mdatatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// ErrClosed is returned by Serve, ServePTY, StartPTY and ListenUnix on a
// host that has been closed.
var ErrClosed = errors.New("mdatatest: host closed")

// Host is a simulated host metadata agent. It serves any number of byte
// streams at once, each with its own line buffer: a net.Conn or unix
// socket connection is one guest session, while a pty is one long-lived
// stream shared by every guest process that opens it, so partial lines and
// unread replies persist from one client to the next, as on a KVM serial
// port. Its methods are safe for concurrent use.
type Host struct {
	// Logf, if set before the host serves anything, receives every
	// transcript event as it happens (t.Logf is a good choice).
	Logf func(format string, args ...any)

	store *Store

	mu        sync.Mutex
	fault     Fault
	faultUses int
	down      bool
	downGen   int
	upTimer   *time.Timer
	pending   []byte // InjectInput
	streams   map[*stream]struct{}
	nextID    int
	stats     Stats
	events    []Event
	changed   chan struct{}
	closed    bool
	closers   []io.Closer
	wg        sync.WaitGroup
}

// NewHost returns a host serving st, or an empty store if st is nil.
func NewHost(st *Store) *Host {
	if st == nil {
		st = NewStore()
	}
	return &Host{
		store:   st,
		streams: make(map[*stream]struct{}),
		stats:   Stats{Requests: map[string]int{}},
		changed: make(chan struct{}),
	}
}

// Store returns the store the host serves.
func (h *Host) Store() *Store { return h.store }

// SetFault makes the host misbehave as f says from the next line on; the
// count of uses starts again. SetFault(Fault{}) restores normal service.
func (h *Host) SetFault(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fault, h.faultUses = f, 0
}

// Fault returns the fault last set.
func (h *Host) Fault() Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fault
}

// faultActive reports whether the current fault still has uses left.
func (h *Host) faultActive() bool {
	return h.fault.Mode != Normal && (h.fault.Count == 0 || h.faultUses < h.fault.Count)
}

func (h *Host) useFault() {
	h.faultUses++
	h.stats.Faults++
}

// Down stops the host agent, as when it is not connected to the VM's
// chardev: bytes that arrive while it is down are discarded unread, and
// partial lines and replies not yet written are forgotten.
func (h *Host) Down() { h.setDown(true, 0) }

// Up starts the host agent again after Down. Its line buffers start empty.
func (h *Host) Up() { h.setDown(false, 0) }

// DownFor calls Down now and Up after d (unless Down, Up or DownFor is
// called again first): the LP #1667735 scenario of a host agent that
// comes up late.
func (h *Host) DownFor(d time.Duration) { h.setDown(true, d) }

// Restart simulates the agent restarting mid-session: it forgets every
// partial line and drops replies not yet written, and stays up.
func (h *Host) Restart() {
	h.mu.Lock()
	h.pending = nil
	h.eventLocked(Event{Kind: KindRestart}, nil)
	streams := h.streamList()
	h.mu.Unlock()
	for _, s := range streams {
		s.reset()
	}
}

func (h *Host) setDown(down bool, upAfter time.Duration) {
	h.mu.Lock()
	h.downGen++
	if h.upTimer != nil {
		h.upTimer.Stop()
		h.upTimer = nil
	}
	if down && upAfter > 0 {
		gen := h.downGen
		h.upTimer = time.AfterFunc(upAfter, func() {
			h.mu.Lock()
			same := h.downGen == gen
			h.mu.Unlock()
			if same {
				h.Up()
			}
		})
	}
	if h.down == down {
		h.mu.Unlock()
		return
	}
	h.down = down
	kind := KindUp
	if down {
		kind = KindDown
		h.pending = nil
	}
	h.eventLocked(Event{Kind: kind}, nil)
	h.notifyLocked()
	streams := h.streamList()
	h.mu.Unlock()
	if down {
		for _, s := range streams {
			s.reset()
		}
	}
}

// InjectInput leaves b in the host's input, as a client killed in the
// middle of writing a request leaves a partial line in the agent's buffer:
// the host treats b as received just before the next bytes that arrive on
// any stream. E.g. "V2 25 60f18662 7ff58343 GET c2Rj" turns the next
// client's probe into a broken frame that gets no reply.
func (h *Host) InjectInput(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, b...)
	h.eventLocked(Event{Kind: KindInjected, Note: "input"}, b)
}

// InjectOutput writes b toward the guest on every stream the host serves,
// as unread replies to a killed client: on a pty they wait in the guest's
// receive queue until a client reads or flushes them. It returns once b
// is written; on a synchronous stream such as net.Pipe that is when the
// peer has read it.
func (h *Host) InjectOutput(b []byte) error {
	h.mu.Lock()
	streams := h.streamList()
	h.mu.Unlock()
	if len(streams) == 0 {
		return errors.New("mdatatest: no stream to inject output into")
	}
	var dones []chan struct{}
	for _, s := range streams {
		done := make(chan struct{})
		if s.enqueue(&writeOp{data: bytes.Clone(b), note: "injected", done: done}) {
			dones = append(dones, done)
		}
	}
	for _, d := range dones {
		<-d
	}
	return nil
}

// Serve serves rw as one connection (one guest session) until reading
// from it fails or ends, or the host is closed. When the input ends, the
// replies already queued are written before Serve returns nil. It returns
// ErrClosed if the host was already closed, and other read errors. The
// Drop fault closes rw if it is an io.Closer, and so does Close.
func (h *Host) Serve(rw io.ReadWriter) error {
	s, err := h.addStream(rw, true)
	if err != nil {
		return err
	}
	return h.serve(s)
}

// ListenUnix listens on a unix socket at path and serves each connection
// as its own session, as the agent does for zones. Closing the listener
// (or the host) stops accepting and removes the socket file.
func (h *Host) ListenUnix(path string) (*net.UnixListener, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("mdatatest: %w", err)
	}
	if err := h.addCloser(ln); err != nil {
		ln.Close()
		return nil, err
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			if err := h.serveBackground(c); err != nil {
				c.Close()
				return
			}
		}
	}()
	return ln, nil
}

// ServePTY serves the master side of p as the one stream of a serial port
// shared by every guest process, until p or the host is closed. The Drop
// fault stops a reply halfway but keeps the stream.
func (h *Host) ServePTY(p *PTY) error {
	s, err := h.addStream(p.master, false)
	if err != nil {
		return err
	}
	return h.serve(s)
}

// StartPTY creates a pty (see NewPTY) and serves it in the background
// until the host is closed. Clients open PTY.Path.
func (h *Host) StartPTY() (*PTY, error) {
	p, err := NewPTY()
	if err != nil {
		return nil, err
	}
	s, err := h.addStream(p.master, false)
	if err == nil {
		err = h.addCloser(p)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.serve(s)
	}()
	return p, nil
}

// Close stops the host: it closes its listeners and ptys and every stream
// that is an io.Closer, and waits for the goroutines it started.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	if h.upTimer != nil {
		h.upTimer.Stop()
	}
	closers := h.closers
	streams := h.streamList()
	h.mu.Unlock()
	for _, c := range closers {
		c.Close()
	}
	for _, s := range streams {
		s.stop()
		if c, ok := s.rw.(io.Closer); ok {
			c.Close()
		}
	}
	h.wg.Wait()
	return nil
}

func (h *Host) addCloser(c io.Closer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	h.closers = append(h.closers, c)
	return nil
}

func (h *Host) addStream(rw io.ReadWriter, conn bool) (*stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	h.nextID++
	s := &stream{h: h, id: h.nextID, rw: rw, conn: conn, kick: make(chan struct{}, 1), cancel: make(chan struct{})}
	h.streams[s] = struct{}{}
	h.stats.Streams++
	h.eventLocked(Event{Stream: s.id, Kind: KindOpen}, nil)
	h.notifyLocked()
	return s, nil
}

func (h *Host) streamList() []*stream {
	l := make([]*stream, 0, len(h.streams))
	for s := range h.streams {
		l = append(l, s)
	}
	return l
}

// serve runs the read loop of s; a goroutine writes its replies.
func (h *Host) serve(s *stream) error {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writer()
	}()
	ended := false // the input ended normally: flush the replies queued
	defer func() {
		if ended {
			s.endInput()
		} else {
			s.stop()
		}
		<-writerDone
		s.stop()
		h.mu.Lock()
		delete(h.streams, s)
		h.eventLocked(Event{Stream: s.id, Kind: KindClose}, nil)
		h.notifyLocked()
		h.mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.rw.Read(buf)
		if n > 0 {
			h.receive(s, buf[:n])
		}
		if err != nil {
			h.mu.Lock()
			closed := h.closed
			h.mu.Unlock()
			if errors.Is(err, io.EOF) && !closed {
				ended = true
				return nil
			}
			if closed || s.isDropped() || errors.Is(err, net.ErrClosed) ||
				errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
				return nil
			}
			return fmt.Errorf("mdatatest: reading stream %d: %w", s.id, err)
		}
	}
}

// receive handles bytes read from s: split into lines, answer each.
func (h *Host) receive(s *stream, data []byte) {
	h.mu.Lock()
	h.stats.BytesIn += len(data)
	if h.down {
		h.stats.Discarded += len(data)
		h.eventLocked(Event{Stream: s.id, Kind: KindDiscarded, Note: "host down"}, data)
		h.notifyLocked()
		h.mu.Unlock()
		return
	}
	pending := h.pending
	h.pending = nil
	h.notifyLocked()
	h.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	from := len(s.buf) // no "\n" before this
	s.buf = append(s.buf, pending...)
	s.buf = append(s.buf, data...)
	start := 0
	for {
		i := bytes.IndexByte(s.buf[from:], '\n')
		if i < 0 {
			break
		}
		end := from + i
		h.handle(s, s.buf[start:end])
		start, from = end+1, end+1
	}
	n := copy(s.buf, s.buf[start:])
	s.buf = s.buf[:n]
	if cap(s.buf) > 1<<20 && n < cap(s.buf)/4 {
		s.buf = bytes.Clone(s.buf)
	}
}

// handle answers one line of s (s.mu held), applying the fault.
func (h *Host) handle(s *stream, line []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.notifyLocked()
	active := h.faultActive()
	f := h.fault
	a := handleLine(h.store, line, active && f.Mode == V1Only)
	if a.v1Refused {
		h.useFault()
	}
	switch a.kind {
	case KindProbe:
		h.stats.Probes++
	case KindNegotiate:
		h.stats.Negotiations++
	case KindRequest:
		h.stats.Requests[a.op]++
		if !a.v2 {
			h.stats.V1Requests++
		}
	case KindMalformed:
		h.stats.Malformed++
	case KindUnknown:
		h.stats.Unknown++
	}
	ev := Event{Stream: s.id, Kind: a.kind, Op: a.op, Note: a.note}
	if a.out != nil && active && f.Mode == Silent {
		h.useFault()
		ev.Note = joinNote(ev.Note, "silent: no reply")
		a.out = nil
	}
	h.eventLocked(ev, line)
	if a.out == nil {
		return
	}
	if active && f.Mode == FailProbe && a.kind == KindProbe {
		h.useFault()
		a.out = []byte(wire.CodeFailure + "\n")
	}
	if a.kind == KindRequest {
		h.stats.Served++
	}
	req := a.kind == KindRequest
	op := &writeOp{data: a.out}
	var ops []*writeOp
	probe := a.kind == KindProbe
	switch {
	case !active:
	case probe && f.Mode == Trickle:
		h.useFault()
		ops = append(ops, &writeOp{data: StaleReply("5a1e0001"), perByte: cmpOr(f.Delay, 5*time.Millisecond), note: f.Mode.String()})
	case probe && f.Mode == StaleInvalid:
		h.useFault()
		ops = append(ops, &writeOp{data: []byte(wire.InvalidCommand + "\n"), note: f.Mode.String()})
	case probe && f.Mode == StaleV2OK:
		h.useFault()
		ops = append(ops, &writeOp{data: []byte(wire.V2OK + "\n"), note: f.Mode.String()})
	case probe && f.Mode == KilledMidReply:
		h.useFault()
		ops = append(ops, &writeOp{data: killedTail(), note: f.Mode.String()})
	case f.Mode == Slow:
		h.useFault()
		op.perByte = cmpOr(f.Delay, time.Millisecond)
		op.note = f.Mode.String()
	case !req:
	case f.Mode == GarbageLine:
		h.useFault()
		ops = append(ops, &writeOp{data: []byte(garbage + "\n"), note: f.Mode.String()})
	case f.Mode == GarbagePrefix:
		h.useFault()
		op.data = append([]byte(garbage), a.out...)
		op.note = f.Mode.String()
	case f.Mode == StaleFrame && a.v2:
		h.useFault()
		ops = append(ops, &writeOp{data: staleFrame(a.reqID), note: f.Mode.String()})
	case f.Mode == BadCRC && a.v2:
		h.useFault()
		ops = append(ops, &writeOp{data: badCRCFrame(a.reqID), note: f.Mode.String()})
	case f.Mode == Late:
		h.useFault()
		op.delay = cmpOr(f.Delay, time.Second)
		op.note = f.Mode.String()
	case f.Mode == Drop:
		h.useFault()
		op.data = a.out[:max(1, len(a.out)/2)]
		op.drop = true
		op.note = f.Mode.String()
	}
	ops = append(ops, op)
	s.enqueueLocked(ops...)
}

// staleFrame is a valid SUCCESS frame for another request ID.
func staleFrame(reqID string) []byte {
	other := "5a1e0000"
	if n, err := strconv.ParseUint(reqID, 16, 32); err == nil && len(reqID) == 8 {
		other = fmt.Sprintf("%08x", uint32(n)^0x5a5a5a5a)
	}
	return StaleReply(other)
}

// badCRCFrame is a SUCCESS frame for reqID whose CRC is off by one.
func badCRCFrame(reqID string) []byte {
	f := wire.Frame{RequestID: reqID, Code: wire.CodeSuccess, Payload: []byte(CorruptValue)}.Append(nil)
	// "V2 <len> <crc> <body>\n"
	lenEnd := bytes.IndexByte(f[3:], ' ') + 3
	body := f[lenEnd+10 : len(f)-1]
	copy(f[lenEnd+1:], fmt.Sprintf("%08x", crcOf(body)+1))
	return f
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// notifyLocked wakes everyone in Wait.
func (h *Host) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Stats counts what a host has seen since it was made.
type Stats struct {
	Streams      int            // streams (connections, ptys) served
	Probes       int            // empty lines received
	Negotiations int            // NEGOTIATE lines received
	Requests     map[string]int // GET, KEYS, PUT and DELETE requests received, V1 and V2, by op
	V1Requests   int            // of those, V1 requests
	Served       int            // requests answered (a fault may mangle or delay the answer)
	Malformed    int            // V2 frames dropped for their form, length or CRC
	Unknown      int            // other lines: unknown commands, leading whitespace, GET without a key
	Faults       int            // times a fault acted
	BytesIn      int            // bytes received
	BytesOut     int            // bytes written
	Discarded    int            // bytes received while down, thrown away
}

// Stats returns a copy of the host's counters. Two clients whose frames
// interleaved on one stream show up as Malformed or Unknown lines.
func (h *Host) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.statsLocked()
}

func (h *Host) statsLocked() Stats {
	st := h.stats
	st.Requests = maps.Clone(h.stats.Requests)
	return st
}

// Wait blocks until cond holds for the host's stats or ctx ends, without
// polling; the error then says what the stats were.
func (h *Host) Wait(ctx context.Context, cond func(Stats) bool) error {
	for {
		h.mu.Lock()
		st := h.statsLocked()
		ch := h.changed
		h.mu.Unlock()
		if cond(st) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("mdatatest: waiting for the host: %w (stats: %+v)", ctx.Err(), st)
		}
	}
}

// WaitServed blocks until the host has answered at least n requests in
// total, or ctx ends.
func (h *Host) WaitServed(ctx context.Context, n int) error {
	return h.Wait(ctx, func(st Stats) bool { return st.Served >= n })
}
