package mdatatest

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// Kind says what an Event records.
type Kind int

// Event kinds. The first five classify a line the host received.
const (
	KindProbe     Kind = iota + 1 // an empty (or all-space) line: the probe
	KindNegotiate                 // a NEGOTIATE line
	KindRequest                   // a GET, KEYS, PUT or DELETE request, V1 or V2
	KindMalformed                 // a V2 frame dropped for its form, length or CRC: no reply
	KindUnknown                   // any other line: unknown command, leading whitespace, GET without a key
	KindDiscarded                 // bytes received while the host was down, thrown away
	KindSent                      // bytes written toward the guest (or a reply dropped, see Note)
	KindInjected                  // bytes given to InjectInput
	KindOpen                      // a stream started
	KindClose                     // a stream ended
	KindDown                      // the host went down
	KindUp                        // the host came up
	KindRestart                   // the host restarted
)

var kindNames = map[Kind]string{
	KindProbe: "probe", KindNegotiate: "negotiate", KindRequest: "request",
	KindMalformed: "malformed", KindUnknown: "unknown", KindDiscarded: "discarded",
	KindSent: "sent", KindInjected: "injected", KindOpen: "open", KindClose: "close",
	KindDown: "down", KindUp: "up", KindRestart: "restart",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is one entry of a host's transcript.
type Event struct {
	Time   time.Time
	Stream int    // the stream it happened on, numbered from 1; 0 for the whole host
	Kind   Kind   // what happened
	Op     string // for KindRequest: GET, KEYS, PUT or DELETE
	Data   []byte // the line received (without "\n") or the bytes sent, at most MaxEventData bytes
	Len    int    // the full length of the data
	Note   string // e.g. why a frame was malformed, which fault acted
}

// MaxEventData is how much of a line or reply an Event keeps.
const MaxEventData = 4 << 10

// maxEvents is how many events a transcript keeps (the latest ones).
const maxEvents = 10000

// String formats e on one line, e.g.
// `15:04:05.000123 #1 request GET "V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ="`.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d %s", e.Time.Format("15:04:05.000000"), e.Stream, e.Kind)
	if e.Op != "" {
		b.WriteString(" " + e.Op)
	}
	if e.Data != nil || e.Kind <= KindInjected {
		fmt.Fprintf(&b, " %q", e.Data)
		if e.Len > len(e.Data) {
			fmt.Fprintf(&b, "... (%d bytes)", e.Len)
		}
	}
	if e.Note != "" {
		b.WriteString(" (" + e.Note + ")")
	}
	return b.String()
}

// Transcript returns the host's latest events (up to 10000), oldest first:
// every line received and every reply sent, with timestamps.
func (h *Host) Transcript() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// TranscriptString is the transcript, one event a line, for test logs.
func (h *Host) TranscriptString() string {
	var b strings.Builder
	for _, e := range h.Transcript() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// eventLocked records an event (h.mu held); e.Time and e.Len are filled
// in.
func (h *Host) eventLocked(e Event, data []byte) {
	if len(h.events) >= 2*maxEvents {
		h.events = append(h.events[:0], h.events[len(h.events)-maxEvents:]...)
	}
	e.Time, e.Len = time.Now(), len(data)
	if len(data) > MaxEventData {
		data = data[:MaxEventData]
	}
	e.Data = bytes.Clone(data)
	h.events = append(h.events, e)
	if h.Logf != nil {
		h.Logf("mdatatest: %v", e)
	}
}

func (h *Host) event(e Event, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.eventLocked(e, data)
}

// sent records bytes written to a stream.
func (h *Host) sent(stream int, data []byte, note string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats.BytesOut += len(data)
	h.eventLocked(Event{Stream: stream, Kind: KindSent, Note: note}, data)
	h.notifyLocked()
}
