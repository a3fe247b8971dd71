package mdatatest

import (
	"io"
	"sync"
	"time"
)

// stream is one byte stream the host serves: its line buffer, and the
// queue of replies a writer goroutine sends. Like Node's socket.write, a
// reply never blocks the reading of the next line.
type stream struct {
	h    *Host
	id   int
	rw   io.ReadWriter
	conn bool // a connection: Drop closes it

	mu      sync.Mutex
	buf     []byte // the partial line
	queue   []*writeOp
	epoch   int           // bumped by reset: queued replies of older epochs are dropped
	done    bool          // the stream ended: write nothing more
	drain   bool          // the input ended: write what is queued, then end
	dropped bool          // the Drop fault closed it
	kick    chan struct{} // wakes the writer
	cancel  chan struct{} // closed when the current epoch ends
}

// writeOp is one write toward the guest.
type writeOp struct {
	data    []byte
	delay   time.Duration // before the first byte (Late)
	perByte time.Duration // between bytes (Slow)
	drop    bool          // Drop: data is the half to send before dropping
	note    string        // for the transcript
	epoch   int
	cancel  chan struct{} // the stream's cancel channel of that epoch
	done    chan struct{} // closed once written or dropped; may be nil
	once    sync.Once
}

func (s *stream) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// enqueue queues ops behind the replies already queued and reports
// whether the stream still takes them.
func (s *stream) enqueue(ops ...*writeOp) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueueLocked(ops...)
}

func (s *stream) enqueueLocked(ops ...*writeOp) bool {
	if s.done {
		for _, op := range ops {
			op.finish()
		}
		return false
	}
	for _, op := range ops {
		op.epoch, op.cancel = s.epoch, s.cancel
		s.queue = append(s.queue, op)
	}
	s.wake()
	return true
}

// reset forgets the partial line and the replies not yet written.
func (s *stream) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = s.buf[:0]
	s.epoch++
	close(s.cancel)
	s.cancel = make(chan struct{})
	s.dropQueueLocked("host restarted")
	s.wake()
}

// endInput lets the writer send the replies already queued and then end,
// as Node flushes a socket's pending writes after the peer's end.
func (s *stream) endInput() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drain = true
	s.wake()
}

// stop ends the writer.
func (s *stream) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done = true
		close(s.cancel)
	}
	s.dropQueueLocked("")
	s.wake()
}

func (s *stream) dropQueueLocked(why string) {
	for _, op := range s.queue {
		if why != "" {
			s.h.event(Event{Stream: s.id, Kind: KindSent, Note: joinNote(op.note, "reply dropped: "+why)}, nil)
		}
		op.finish()
	}
	s.queue = nil
}

func (s *stream) isDropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// current reports whether an op of epoch may still be written.
func (s *stream) current(epoch int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.done && s.epoch == epoch
}

func (op *writeOp) finish() {
	if op.done != nil {
		op.once.Do(func() { close(op.done) })
	}
}

// writer writes queued replies until the stream ends.
func (s *stream) writer() {
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.done && !s.drain {
			s.mu.Unlock()
			<-s.kick
			s.mu.Lock()
		}
		if s.done || len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		op := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		s.write(op)
		op.finish()
	}
}

// write performs one op, giving up when the stream is reset or ends.
func (s *stream) write(op *writeOp) {
	if op.delay > 0 && !s.sleep(op.delay, op) {
		s.h.event(Event{Stream: s.id, Kind: KindSent, Note: joinNote(op.note, "reply dropped: host restarted")}, nil)
		return
	}
	n := 0
	var err error
	if op.perByte > 0 {
		for n < len(op.data) && err == nil {
			if n > 0 && !s.sleep(op.perByte, op) || n == 0 && !s.current(op.epoch) {
				break
			}
			var m int
			m, err = s.rw.Write(op.data[n : n+1])
			n += m
		}
	} else if s.current(op.epoch) {
		n, err = s.rw.Write(op.data)
	} else {
		s.h.event(Event{Stream: s.id, Kind: KindSent, Note: joinNote(op.note, "reply dropped: host restarted")}, nil)
		return
	}
	note := op.note
	if n < len(op.data) {
		note = joinNote(note, "cut short")
	}
	if op.drop {
		if c, ok := s.rw.(io.Closer); ok && s.conn {
			s.mu.Lock()
			s.dropped = true
			s.mu.Unlock()
			c.Close()
			note = joinNote(note, "connection closed")
		} else {
			note = joinNote(note, "rest of the reply never sent")
		}
	}
	if err != nil {
		note = joinNote(note, "write: "+err.Error())
	}
	s.h.sent(s.id, op.data[:n], note)
}

// sleep waits d unless op's epoch ends first; it reports whether op is
// still current.
func (s *stream) sleep(d time.Duration, op *writeOp) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return s.current(op.epoch)
	case <-op.cancel:
		return false
	}
}
