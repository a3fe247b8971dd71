package wire

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// V2 frame vectors: the spec's own first (docs/protocol.md, "V2 frames"),
// the captured mdata-get session last.
var vectors = []struct {
	line    string
	id      string
	code    string
	payload string
	hasPay  bool
}{
	{"V2 21 265ae1d8 dc4fae17 SUCCESS W10=", "dc4fae17", "SUCCESS", "[]", true},
	{"V2 29 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l", "0a1b2c3d", "GET", "sdc:hostname", true},
	{"V2 25 56d408d8 0a1b2c3d SUCCESS d2ViMDE=", "0a1b2c3d", "SUCCESS", "web01", true},
	{"V2 21 c46f7668 fedcba98 GET bm9wZQ==", "fedcba98", "GET", "nope", true},
	{"V2 17 69c1c0a9 fedcba98 NOTFOUND", "fedcba98", "NOTFOUND", "", false},
	{"V2 13 53cae7d4 5e6f7a8b KEYS", "5e6f7a8b", "KEYS", "", false},
	{"V2 61 a20b00d5 5e6f7a8b SUCCESS cm9vdF9hdXRob3JpemVkX2tleXMKdXNlci1zY3JpcHQ=", "5e6f7a8b", "SUCCESS", "root_authorized_keys\nuser-script", true},
	{"V2 16 27444354 5e6f7a8b SUCCESS", "5e6f7a8b", "SUCCESS", "", false},
	{"V2 25 7b1c383a 9c8d7e6f PUT Wm05diBZbUZ5", "9c8d7e6f", "PUT", "Zm9v YmFy", true},
	{"V2 21 d096fc1d 9c8d7e6f SUCCESS T0s=", "9c8d7e6f", "SUCCESS", "OK", true},
	{"V2 37 c5a3ba46 01234567 PUT YzJSak9tWnZidz09IGVBPT0=", "01234567", "PUT", "c2RjOmZvbw== eA==", true},
	{"V2 65 25f3803b 01234567 FAILURE Q2Fubm90IHVwZGF0ZSB0aGUgInNkYyIgTmFtZXNwYWNlLg==", "01234567", "FAILURE", `Cannot update the "sdc" Namespace.`, true},
	{"V2 20 1729f40a 89abcdef DELETE Zm9v", "89abcdef", "DELETE", "foo", true},
	{"V2 21 4b81e668 89abcdef SUCCESS T0s=", "89abcdef", "SUCCESS", "OK", true},
	{"V2 29 ae9f5912 d2a2a4ca GET c2RjOnJvdXRlcw==", "d2a2a4ca", "GET", "sdc:routes", true},
	{"V2 25 b5a9ff00 abcdef12 SUCCESS dmFsdWU=", "abcdef12", "SUCCESS", "value", true},
	{"V2 29 40873553 abcdef12 SUCCESS Zm9vCmJhcg==", "abcdef12", "SUCCESS", "foo\nbar", true},
	{"V2 16 14e563ba abcdef12 SUCCESS", "abcdef12", "SUCCESS", "", false},
	{"V2 53 717dd71a aabbccdd FAILURE VW5rbm93biBjb21tYW5kIE5FR09USUFURQ==", "aabbccdd", "FAILURE", "Unknown command NEGOTIATE", true},
	{"V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ=", "7ff58343", "GET", "sdc:uuid", true},
	{"V2 65 2cd4db13 7ff58343 SUCCESS NGExYjJjM2QtMDAwMC0xMTExLTIyMjItMzMzMzQ0NDQ1NTU1", "7ff58343", "SUCCESS", "4a1b2c3d-0000-1111-2222-333344445555", true},
}

func TestVectorsEncode(t *testing.T) {
	for _, v := range vectors {
		f := Frame{RequestID: v.id, Code: v.code}
		if v.hasPay {
			f.Payload = []byte(v.payload)
		}
		if got := string(f.Append(nil)); got != v.line+"\n" {
			t.Errorf("encode %s %s %q:\n got %q\nwant %q", v.id, v.code, v.payload, got, v.line+"\n")
		}
	}
}

func TestVectorsDecode(t *testing.T) {
	for _, v := range vectors {
		f, err := ParseFrame([]byte(v.line))
		if err != nil {
			t.Errorf("ParseFrame(%q): %v", v.line, err)
			continue
		}
		if f.RequestID != v.id || f.Code != v.code || string(f.Payload) != v.payload || (f.Payload != nil) != v.hasPay {
			t.Errorf("ParseFrame(%q) = %+v, want id %s code %s payload %q", v.line, f, v.id, v.code, v.payload)
		}
	}
}

func TestPutPayloadVector(t *testing.T) {
	// Vector 7: PUT foo=bar.
	f := Frame{RequestID: "9c8d7e6f", Code: CodePut, Payload: PutPayload("foo", []byte("bar"))}
	if got, want := string(f.Append(nil)), "V2 25 7b1c383a 9c8d7e6f PUT Wm05diBZbUZ5\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCRC(t *testing.T) {
	if got := string(AppendCRC(nil, []byte("123456789"))); got != "cbf43926" {
		t.Errorf("CRC(123456789) = %s, want cbf43926", got)
	}
	// Zero-filled: the agent compares the string.
	for _, body := range []string{"", "a", "V2"} {
		if got := AppendCRC(nil, []byte(body)); len(got) != 8 || strings.ToLower(string(got)) != string(got) {
			t.Errorf("CRC(%q) = %q, want 8 lower-case hex digits", body, got)
		}
	}
}

func TestParseFrameRejects(t *testing.T) {
	for _, tc := range []struct {
		line string
		want error
	}{
		{"SUCCESS", ErrNotFrame},
		{"V2 ", ErrNotFrame},
		{"V2 21 265ae1d8", ErrNotFrame},
		{"V2 22 265ae1d8 dc4fae17 SUCCESS W10=", ErrLength},
		{"V2 0 00000000 ", ErrLength},
		{"V2 +21 265ae1d8 dc4fae17 SUCCESS W10=", ErrNotFrame},
		{"V2 21 265ae1d9 dc4fae17 SUCCESS W10=", ErrCRC},
		{"V2 21 265ae1d 0dc4fae17 SUCCESS W10=", ErrNotFrame},
		{"V2 21 zzzzzzzz dc4fae17 SUCCESS W10=", ErrNotFrame},
	} {
		if _, err := ParseFrame([]byte(tc.line)); !errors.Is(err, tc.want) {
			t.Errorf("ParseFrame(%q) err = %v, want %v", tc.line, err, tc.want)
		}
	}
	// Valid CRC and length, but a bad body or payload.
	for _, body := range []string{"DC4FAE17 SUCCESS", "dc4fae1 SUCCESS", "dc4fae17 success", "dc4fae17", "dc4fae17 SUCCESS a b", "dc4fae17 SUCCESS "} {
		line := frameWithBody(body)
		if _, err := ParseFrame(line); !errors.Is(err, ErrBadBody) {
			t.Errorf("ParseFrame(%q) err = %v, want ErrBadBody", line, err)
		}
	}
	if _, err := ParseFrame(frameWithBody("dc4fae17 SUCCESS W10")); !errors.Is(err, ErrBadPayload) {
		t.Errorf("unpadded payload: err = %v, want ErrBadPayload", err)
	}
	if _, err := ParseFrame(frameWithBody("dc4fae17 SUCCESS W1*=")); !errors.Is(err, ErrBadPayload) {
		t.Errorf("bad alphabet: err = %v, want ErrBadPayload", err)
	}
}

func TestParseFrameAcceptsCR(t *testing.T) {
	if _, err := ParseFrame([]byte("V2 21 265ae1d8 dc4fae17 SUCCESS W10=\r")); err != nil {
		t.Fatal(err)
	}
}

func frameWithBody(body string) []byte {
	var b []byte
	b = append(b, "V2 "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, ' ')
	b = AppendCRC(b, []byte(body))
	b = append(b, ' ')
	return append(b, body...)
}

func TestRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewRequestID()
		if !IsRequestID([]byte(id)) {
			t.Fatalf("NewRequestID() = %q", id)
		}
		seen[id] = true
	}
	if len(seen) < 95 {
		t.Errorf("only %d distinct IDs in 100", len(seen))
	}
}

func TestV1Body(t *testing.T) {
	for _, tc := range []struct{ value, wire string }{
		{".leading\n..two\nmid.dle", "..leading\n...two\nmid.dle\n.\n"},
		{"abc\n", "abc\n\n.\n"},
		{"", "\n.\n"},
		{"\n\nfoo\n\nbar\n", "\n\nfoo\n\nbar\n\n.\n"},
		{".", "..\n.\n"},
	} {
		if got := string(AppendV1Body(nil, []byte(tc.value))); got != tc.wire {
			t.Errorf("AppendV1Body(%q) = %q, want %q", tc.value, got, tc.wire)
		}
		if got := decodeV1(t, tc.wire); got != tc.value {
			t.Errorf("decode(%q) = %q, want %q", tc.wire, got, tc.value)
		}
	}
}

func decodeV1(t testing.TB, wire string) string {
	var b V1Body
	lines := strings.Split(wire, "\n")
	for i, l := range lines {
		if b.Line([]byte(l)) {
			if rest := strings.Join(lines[i+1:], "\n"); rest != "" {
				t.Fatalf("bytes after terminator: %q", rest)
			}
			return string(b.Bytes())
		}
	}
	t.Fatalf("no terminator in %q", wire)
	return ""
}

func FuzzParseFrame(f *testing.F) {
	for _, v := range vectors {
		f.Add([]byte(v.line))
	}
	f.Add([]byte("V2 99999999999 00000000 x"))
	f.Add([]byte("V2 1 00000000  "))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := ParseFrame(line)
		if err != nil {
			return
		}
		// Anything accepted re-encodes to a frame that parses the same.
		again, err := ParseFrame(bytes.TrimSuffix(fr.Append(nil), []byte("\n")))
		if err != nil {
			t.Fatalf("re-encoded frame of %q does not parse: %v", line, err)
		}
		if again.RequestID != fr.RequestID || again.Code != fr.Code || !bytes.Equal(again.Payload, fr.Payload) {
			t.Fatalf("round trip changed %+v into %+v", fr, again)
		}
	})
}

func FuzzV1Body(f *testing.F) {
	f.Add([]byte(".leading\n..two\nmid.dle"))
	f.Add([]byte(""))
	f.Add([]byte("\n\n.\n"))
	f.Add([]byte("..\n.\n"))
	f.Fuzz(func(t *testing.T, value []byte) {
		// Any value survives encode/decode exactly (binary-safe, leading
		// blank lines kept).
		wire := string(AppendV1Body(nil, value))
		if got := decodeV1(t, wire); got != string(value) {
			t.Fatalf("round trip of %q gave %q", value, got)
		}
		// Arbitrary lines never panic.
		var b V1Body
		for _, l := range bytes.Split(value, []byte("\n")) {
			b.Line(l)
		}
	})
}

// A prefix of the payload is the start of the whole one, and the length
// counted without decoding is the decoded length.
func FuzzPayloadPrefix(f *testing.F) {
	f.Add([]byte("hello"), 3)
	f.Add([]byte(""), 0)
	f.Add([]byte("ab"), 1)
	f.Add(bytes.Repeat([]byte{0xff}, 100), 50)
	f.Fuzz(func(t *testing.T, payload []byte, limit int) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		line := Frame{RequestID: "0000beef", Code: CodeFailure, Payload: payload}.Append(nil)
		r, err := ParseRaw(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		if len(payload) == 0 {
			if r.Encoded != nil {
				t.Fatalf("an empty payload came back as %q", r.Encoded)
			}
			return
		}
		p, total, err := r.PayloadPrefix(limit)
		if err != nil || total != len(payload) || !bytes.Equal(p, payload[:min(limit, len(payload))]) {
			t.Fatalf("PayloadPrefix(%d) = %q, %d, %v; payload %q", limit, p, total, err, payload)
		}
	})
}

// Spaces are counted before the body is cut: a body of more than three
// fields is refused however many spaces it has.
func TestParseRawCountsFieldsFirst(t *testing.T) {
	for _, body := range []string{"0000beef SUCCESS a b", "0000beef SUCCESS  ", "0000beef  SUCCESS", "0000beef", "0000beef SUCCESS " + strings.Repeat(" ", 1<<20)} {
		line := []byte("V2 " + strconv.Itoa(len(body)) + " ")
		line = AppendCRC(line, []byte(body))
		line = append(append(line, ' '), body...)
		if _, err := ParseRaw(line); err != ErrBadBody {
			t.Errorf("body of %d bytes: %v, want ErrBadBody", len(body), err)
		}
	}
}

// Decoding in place takes exactly what decoding into a new slice takes,
// and gives the same bytes: any text, base64 or not (a CR inside is
// skipped by both, misplaced padding refused by both), at every length the
// decoder's 8-, 4- and 1-quantum paths see.
func FuzzPayloadInPlace(f *testing.F) {
	f.Add([]byte("aGVsbG8="))
	f.Add([]byte("aGVs\rbG8="))
	f.Add([]byte("aGVsbG8=aGVs"))
	f.Add([]byte("aGVsbG8"))
	f.Add([]byte("\r\r\r\raGVsbG8gd29ybGQhISE="))
	f.Add([]byte(strings.Repeat("QUJD", 100) + "\r" + strings.Repeat("REVG", 100)))
	f.Fuzz(func(t *testing.T, enc []byte) {
		want, wantErr := Raw{Encoded: enc}.Payload()
		got, err := Raw{Encoded: bytes.Clone(enc)}.PayloadInPlace()
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("PayloadInPlace(%q) = %q, %v; Payload = %q, %v", enc, got, err, want, wantErr)
		}
	})
}

// A large payload decodes in place to the value it carries, its slice of
// the line capped at its length.
func TestPayloadInPlaceLarge(t *testing.T) {
	value := make([]byte, 3<<20+2)
	for i := range value {
		value[i] = byte(i*7 + i>>9)
	}
	line := bytes.TrimSuffix(Frame{RequestID: "0000beef", Code: CodeSuccess, Payload: value}.Append(nil), []byte("\n"))
	r, err := ParseRaw(line)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.PayloadInPlace()
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("PayloadInPlace: %d bytes, %v; want the %d-byte value", len(got), err, len(value))
	}
	if &got[0] != &r.Encoded[0] || cap(got) != len(got) {
		t.Errorf("the value is not the line's own bytes, capped (cap %d, len %d)", cap(got), len(got))
	}
}
