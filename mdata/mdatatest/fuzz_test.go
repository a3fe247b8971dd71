package mdatatest

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// FuzzHandleLine feeds arbitrary lines to the agent's line handler. Every
// answer must be one of the agent's reply shapes, V2 replies must carry a
// correct length and CRC, and every frame the shared codec accepts as a
// request, in its canonical form, must be answered, never dropped as
// malformed.
func FuzzHandleLine(f *testing.F) {
	for _, s := range []string{
		"", " ", "\r", " GET x", "GET", "GET sdc:uuid", "KEYS", "NEGOTIATE V2", "NEGOTIATE",
		"PUT a b", "hello", "\x00\xff", "V2", "V2 1 2 3 4",
		"V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ=",
		"V2 25 60f18662 7ff58343 GET c2Rj",
		"V2 13 53cae7d4 5e6f7a8b KEYS",
		"V2 25 7b1c383a 9c8d7e6f PUT Wm05diBZbUZ5",
		"V2 37 c5a3ba46 01234567 PUT YzJSak9tWnZidz09IGVBPT0=",
		"V2 20 1729f40a 89abcdef DELETE Zm9v",
		"V2 029 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l",
		"x V2 29 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l",
		"V2 \u2028 29 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l",
		"GET a\rb", "GET \u00a0x\u3000",
		"V2 99999999999999999999 0 0 GET",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("NEGOTIATE V2"), true)
	f.Add([]byte("V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ="), true)
	f.Fuzz(func(t *testing.T, line []byte, v1only bool) {
		st := vectorStore()
		st.SetString("dotted", ".a\n..b")
		if bytes.IndexByte(line, '\n') >= 0 {
			return // lines never hold a newline
		}
		a := handleLine(st, line, v1only)
		if a.kind == KindMalformed {
			// Only the V1-only host answers (FAILURE) to malformed frames.
			if a.out != nil && (!v1only || string(a.out) != "FAILURE\n") {
				t.Fatalf("malformed frame answered %q", a.out)
			}
			// A frame exactly as the codec writes it must never be dropped.
			// (The codec also reads upper-case CRCs, as the C client does;
			// the agent drops those.)
			if f, err := wire.ParseFrame(line); err == nil && !v1only && isRequestCode(f.Code) &&
				string(f.Append(nil)) == string(line)+"\n" {
				t.Fatalf("the host drops a frame the codec accepts: %q (%v)", line, a.note)
			}
			return
		}
		out := string(a.out)
		switch {
		case out == "invalid command\n", out == "V2_OK\n", out == "FAILURE\n", out == "NOTFOUND\n":
		case strings.HasPrefix(out, "SUCCESS\n") && strings.HasSuffix(out, "\n.\n"):
			if a.v2 {
				t.Fatalf("V1 body for a V2 request: %q", out)
			}
		case strings.HasPrefix(out, "V2 "):
			checkV2Reply(t, out)
		default:
			t.Fatalf("line %q: unexpected reply %q", line, out)
		}
	})
}

func isRequestCode(c string) bool {
	return c == "GET" || c == "KEYS" || c == "PUT" || c == "DELETE"
}

// checkV2Reply checks a reply frame's length and CRC independently of the
// host's own parser.
func checkV2Reply(t *testing.T, out string) {
	t.Helper()
	fields := strings.SplitN(strings.TrimSuffix(out, "\n"), " ", 4)
	if len(fields) != 4 || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("reply frame %q", out)
	}
	n, err := strconv.Atoi(fields[1])
	if err != nil || n != len(fields[3]) {
		t.Fatalf("reply frame %q: length %s, body %d bytes", out, fields[1], len(fields[3]))
	}
	if fields[2] != crcHex(fields[3]) {
		t.Fatalf("reply frame %q: CRC %s, want %s", out, fields[2], crcHex(fields[3]))
	}
}

// FuzzPutGet stores arbitrary bytes under an arbitrary key with frames
// made by the shared codec and reads them back: the host and the codec
// must agree on every value, binary or not.
func FuzzPutGet(f *testing.F) {
	f.Add("foo", []byte("bar"))
	f.Add("k", []byte{0, 0xff, '\n', '.'})
	f.Add(" spaced ", []byte(" "))
	f.Add("sdc:x", []byte("y"))
	f.Add("k", []byte{})
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		st := NewStore()
		line := strings.TrimSuffix(frame("01234567", "PUT", wire.PutPayload(key, value)), "\n")
		a := handleLine(st, []byte(line), false)
		if a.kind != KindRequest || a.op != "PUT" {
			t.Fatalf("PUT %q: kind %v %s", key, a.kind, a.note)
		}
		reply, err := wire.ParseFrame(bytes.TrimSuffix(a.out, []byte("\n")))
		if err != nil {
			t.Fatalf("PUT reply %q: %v", a.out, err)
		}
		k := strings.TrimFunc(key, jsSpace)
		if reply.Code != "SUCCESS" {
			// Refusals: an empty key or value, a read-only key, or a key
			// that is not valid base64 text for Node.
			if len(value) != 0 && k != "" && !strings.HasPrefix(k, "sdc:") {
				t.Fatalf("PUT %q (%d bytes) refused: %s", key, len(value), reply.Payload)
			}
			return
		}
		got, ok := st.Get(k)
		if !ok || !bytes.Equal(got, value) {
			t.Fatalf("PUT %q then Get(%q) = %q, %v; want %q", key, k, got, ok, value)
		}
		g := handleLine(st, []byte(strings.TrimSuffix(frame("89abcdef", "GET", []byte(k)), "\n")), false)
		r, err := wire.ParseFrame(bytes.TrimSuffix(g.out, []byte("\n")))
		if err != nil || r.Code != "SUCCESS" || !bytes.Equal(r.Payload, value) {
			t.Fatalf("GET %q = %+v, %v; want %q", k, r, err, value)
		}
	})
}
