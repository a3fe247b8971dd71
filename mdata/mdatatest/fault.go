package mdatatest

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// Mode is a way for the simulated host to misbehave. The zero Mode is Normal.
type Mode int

// Fault modes. Each says what one "use" of the fault is, which is what
// Fault.Count counts.
const (
	// Normal answers like agent.js.
	Normal Mode = iota
	// V1Only is a pre-2013 agent: FAILURE to NEGOTIATE and to every V2
	// frame, "invalid command" to empty lines, V1 GET and KEYS still work.
	// A use is one NEGOTIATE line or V2 frame refused.
	V1Only
	// Silent reads every line and answers none. A use is one line left
	// unanswered.
	Silent
	// GarbageLine writes a line of binary junk (ended by "\n") before the
	// reply to a request. A client that skips lines it cannot parse gets
	// the right value. A use is one reply.
	GarbageLine
	// GarbagePrefix writes binary junk without a newline right before the
	// reply to a request, so the reply line itself arrives corrupted and
	// the client has to time out and try again. A use is one reply.
	GarbagePrefix
	// StaleFrame writes a valid, CRC-correct V2 SUCCESS frame with another
	// request ID and the value StaleValue before the reply to a V2 request
	// (what a killed client leaves behind). A use is one reply.
	StaleFrame
	// BadCRC writes a V2 SUCCESS frame with the right request ID but a
	// wrong CRC and the value CorruptValue before the reply to a V2
	// request. A client that does not check the CRC returns the wrong
	// value. A use is one reply.
	BadCRC
	// Slow writes every reply (including the answers to probes and
	// NEGOTIATE) one byte at a time with Fault.Delay between bytes
	// (default 1ms). A use is one reply.
	Slow
	// Late waits Fault.Delay (default 1s) before writing the reply to a
	// request, as a PUT does while VM.update runs. A restart or Down while
	// waiting drops the reply. A use is one reply.
	Late
	// Drop writes the first half of the reply to a request and then, on a
	// socket or net.Conn, closes the connection; on a pty the rest of that
	// reply is never sent. A use is one reply.
	Drop
	// FailProbe answers "FAILURE" instead of "invalid command" to an empty
	// line (the probe). cloud-init retries at once on it; the reference
	// client resets. A use is one probe.
	FailProbe
	// Trickle writes, before the answer to a probe, a stale V2 SUCCESS
	// frame (StaleValue, another request ID) one byte every Fault.Delay
	// (default 5ms): the tail of a killed client's reply still coming down
	// a slow line after the client's drain ended. A use is one probe.
	Trickle
	// StaleInvalid writes a stale "invalid command" line before the answer
	// to a probe, as a killed client's probe leaves behind: the probe takes
	// the stale line and the real answer arrives while NEGOTIATE waits. A
	// use is one probe.
	StaleInvalid
	// StaleV2OK writes a stale "V2_OK" line before the answer to a probe,
	// as a killed client's NEGOTIATE leaves behind. A use is one probe.
	StaleV2OK
	// KilledMidReply writes, before the answer to a probe, the second half
	// of a V2 SUCCESS frame carrying a 4 MiB value (StaleValue repeated):
	// what is left on the line after a client was killed in the middle of
	// a multi-MiB reply. A use is one probe.
	KilledMidReply
	numModes
)

var modeNames = [numModes]string{
	Normal:         "normal",
	V1Only:         "v1-only",
	Silent:         "silent",
	GarbageLine:    "garbage-line",
	GarbagePrefix:  "garbage-prefix",
	StaleFrame:     "stale-frame",
	BadCRC:         "bad-crc",
	Slow:           "slow",
	Late:           "late",
	Drop:           "drop",
	FailProbe:      "fail-probe",
	Trickle:        "trickle",
	StaleInvalid:   "stale-invalid",
	StaleV2OK:      "stale-v2ok",
	KilledMidReply: "killed-mid-reply",
}

// String returns the mode's name as ParseMode accepts it, e.g. "stale-frame".
func (m Mode) String() string {
	if m >= 0 && m < numModes {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode returns the Mode named s (see Mode.String).
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("unknown fault mode %q (known: %s)", s, strings.Join(modeNames[:], ", "))
}

// Modes returns every mode, Normal first, for tests that run a matrix.
func Modes() []Mode {
	ms := make([]Mode, numModes)
	for i := range ms {
		ms[i] = Mode(i)
	}
	return ms
}

// Fault is the misbehaviour a Host applies; set it with Host.SetFault, at
// any time.
type Fault struct {
	Mode Mode
	// Count limits the fault to its first Count uses (see the modes for
	// what a use is), after which the host behaves normally again: use it
	// to test recovery. Zero means every time, for good.
	Count int
	// Delay is the pause of Slow (per byte, default 1ms), Trickle (per
	// byte, default 5ms) and Late (per reply, default 1s). Other modes
	// ignore it.
	Delay time.Duration
}

// String describes f, e.g. "stale-frame x2".
func (f Fault) String() string {
	s := f.Mode.String()
	if f.Delay > 0 {
		s += " " + f.Delay.String()
	}
	if f.Count > 0 {
		s += fmt.Sprintf(" x%d", f.Count)
	}
	return s
}

// The values the misleading frames of StaleFrame and BadCRC carry. A client
// that returns one of them accepted a frame it should have skipped.
const (
	StaleValue   = "stale reply from an earlier session"
	CorruptValue = "value from a frame with a bad CRC"
)

// garbage is the junk GarbageLine and GarbagePrefix write: NUL, bytes that
// are not UTF-8, an escape sequence and text that looks almost like a reply.
const garbage = "\x00\xff\xfe\x1b[2J\x7fSUCC\x80ESS V2 \x00"

// StaleReply returns a valid V2 SUCCESS frame for request ID reqID that
// carries StaleValue: what a killed client leaves unread on a serial line.
// Give it to InjectOutput.
func StaleReply(reqID string) []byte {
	return wire.Frame{RequestID: reqID, Code: wire.CodeSuccess, Payload: []byte(StaleValue)}.Append(nil)
}

// killedTail is what KilledMidReply writes: the second half of a valid
// SUCCESS frame for another request ID whose value is 4 MiB.
func killedTail() []byte {
	v := bytes.Repeat([]byte(StaleValue+" "), (4<<20)/(len(StaleValue)+1)+1)[:4<<20]
	f := wire.Frame{RequestID: "0dead0ff", Code: wire.CodeSuccess, Payload: v}.Append(nil)
	return f[len(f)/2:]
}
