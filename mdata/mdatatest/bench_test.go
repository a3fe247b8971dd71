package mdatatest

import (
	"bytes"
	"testing"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// BenchmarkServeGET is one V2 GET round trip through the host over
// net.Pipe: the simulator's own cost per request.
func BenchmarkServeGET(b *testing.B) {
	h := NewHost(Default())
	g := pipe(b, h)
	for b.Loop() {
		g.send(getUUID)
		g.expect(replyUUID)
	}
}

// BenchmarkHandlePut4MiB parses and stores a 4 MiB PUT frame.
func BenchmarkHandlePut4MiB(b *testing.B) {
	line := bytes.TrimSuffix(wire.Frame{RequestID: "0a0b0c0d", Code: "PUT",
		Payload: wire.PutPayload("big", bytes.Repeat([]byte{0xa5}, 4<<20))}.Append(nil), []byte("\n"))
	st := NewStore()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if a := handleLine(st, line, false); a.kind != KindRequest {
			b.Fatal(a.note)
		}
	}
}
