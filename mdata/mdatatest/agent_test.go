package mdatatest

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// TestLineHandling drives the host with raw lines and checks every reply
// byte for byte against agent.js (docs/protocol.md, "The host agent" and
// "V2 frames") and the V2 frame vectors. want "" means no reply at all.
func TestLineHandling(t *testing.T) {
	b64 := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name  string
		store func() *Store // default vectorStore
		in    string
		want  string
	}{
		// The host agent: probes and V1 lines.
		{name: "bare newline is the probe", in: "\n", want: "invalid command\n"},
		{name: "CR LF probe", in: "\r\n", want: "invalid command\n"},
		{name: "spaces only", in: " \t \n", want: "invalid command\n"},
		{name: "leading whitespace", in: " GET sdc:uuid\n", want: "invalid command\n"},
		{name: "GET without key", in: "GET\n", want: "invalid command\n"},
		{name: "GET with only spaces", in: "GET   \n", want: "invalid command\n"},
		{name: "NEGOTIATE without argument", in: "NEGOTIATE\n", want: "invalid command\n"},
		{name: "NEGOTIATE V2", in: "NEGOTIATE V2\n", want: "V2_OK\n"},
		{name: "NEGOTIATE V2 with CR", in: "NEGOTIATE V2\r\n", want: "V2_OK\n"},
		{name: "NEGOTIATE other", in: "NEGOTIATE V3\n", want: "FAILURE\n"},
		{name: "NEGOTIATE two spaces", in: "NEGOTIATE  V2\n", want: "FAILURE\n"},
		{name: "V1 GET", in: "GET sdc:uuid\n", want: "SUCCESS\n" + SampleUUID + "\n.\n"},
		{name: "V1 GET trims the key", in: "GET \t sdc:hostname \n", want: "SUCCESS\nweb01\n.\n"},
		{name: "V1 GET missing", in: "GET nope\n", want: "NOTFOUND\n"},
		{name: "V1 GET dotted", store: func() *Store {
			s := NewStore()
			s.SetString("dotted", ".leading\n..two\nmid.dle")
			return s
		}, in: "GET dotted\n", want: "SUCCESS\n..leading\n...two\nmid.dle\n.\n"},
		{name: "V1 GET trailing newline", store: func() *Store {
			s := NewStore()
			s.SetString("k", "abc\n")
			return s
		}, in: "GET k\n", want: "SUCCESS\nabc\n\n.\n"},
		{name: "V1 GET empty value", store: func() *Store {
			s := NewStore()
			s.SetString("k", "")
			return s
		}, in: "GET k\n", want: "SUCCESS\n\n.\n"},
		{name: "V1 KEYS", in: "KEYS\n", want: "SUCCESS\nroot_authorized_keys\nuser-script\n.\n"},
		{name: "V1 KEYS empty", store: NewStore, in: "KEYS\n", want: "SUCCESS\n\n.\n"},
		{name: "V1 PUT is unknown", in: "PUT foo bar\n", want: "FAILURE\n"},
		{name: "V1 DELETE is unknown", in: "DELETE user-script\n", want: "FAILURE\n"},
		{name: "garbage word", in: "hello\n", want: "FAILURE\n"},
		{name: "binary junk", in: "\x00\xff\xfe\n", want: "FAILURE\n"},

		// V2 frame vectors and the captured session.
		{name: "session GET sdc:uuid", in: "V2 25 60f18662 7ff58343 GET c2RjOnV1aWQ=\n",
			want: "V2 65 2cd4db13 7ff58343 SUCCESS NGExYjJjM2QtMDAwMC0xMTExLTIyMjItMzMzMzQ0NDQ1NTU1\n"},
		{name: "vector 2-3 GET sdc:hostname", in: "V2 29 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l\n",
			want: "V2 25 56d408d8 0a1b2c3d SUCCESS d2ViMDE=\n"},
		{name: "vector 4 NOTFOUND", in: "V2 21 c46f7668 fedcba98 GET bm9wZQ==\n",
			want: "V2 17 69c1c0a9 fedcba98 NOTFOUND\n"},
		{name: "vector 5 KEYS", in: "V2 13 53cae7d4 5e6f7a8b KEYS\n",
			want: "V2 61 a20b00d5 5e6f7a8b SUCCESS cm9vdF9hdXRob3JpemVkX2tleXMKdXNlci1zY3JpcHQ=\n"},
		{name: "vector 6 KEYS empty", store: NewStore, in: "V2 13 53cae7d4 5e6f7a8b KEYS\n",
			want: "V2 16 27444354 5e6f7a8b SUCCESS\n"},
		{name: "vector 7 PUT foo=bar", in: "V2 25 7b1c383a 9c8d7e6f PUT Wm05diBZbUZ5\n",
			want: "V2 21 d096fc1d 9c8d7e6f SUCCESS T0s=\n"},
		{name: "vector 8 PUT sdc:foo refused", in: "V2 37 c5a3ba46 01234567 PUT YzJSak9tWnZidz09IGVBPT0=\n",
			want: "V2 65 25f3803b 01234567 FAILURE Q2Fubm90IHVwZGF0ZSB0aGUgInNkYyIgTmFtZXNwYWNlLg==\n"},
		{name: "vector 9 DELETE missing key", in: "V2 20 1729f40a 89abcdef DELETE Zm9v\n",
			want: "V2 21 4b81e668 89abcdef SUCCESS T0s=\n"},
		{name: "vector 12 NEGOTIATE in a frame", in: frame("aabbccdd", "NEGOTIATE", b64("V2")),
			want: "V2 53 717dd71a aabbccdd FAILURE VW5rbm93biBjb21tYW5kIE5FR09USUFURQ==\n"},

		// V2 frame rules.
		{name: "V2 unknown code", in: frame("0a0b0c0d", "FOO", nil),
			want: frame("0a0b0c0d", "FAILURE", []byte("Unknown command FOO"))},
		{name: "V2 GET without payload", in: frame("0a0b0c0d", "GET", nil),
			want: frame("0a0b0c0d", "FAILURE", []byte("Invalid GET Request"))},
		{name: "V2 GET empty value has no payload", store: func() *Store {
			s := NewStore()
			s.SetString("k", "")
			return s
		}, in: frame("0a0b0c0d", "GET", b64("k")), want: "V2 16 " + crcHex("0a0b0c0d SUCCESS") + " 0a0b0c0d SUCCESS\n"},
		{name: "V2 PUT empty value refused", in: frame("0a0b0c0d", "PUT", wire.PutPayload("foo", nil)),
			want: frame("0a0b0c0d", "FAILURE", []byte("Invalid PUT Request"))},
		{name: "V2 PUT without payload", in: frame("0a0b0c0d", "PUT", nil),
			want: frame("0a0b0c0d", "FAILURE", []byte("Invalid PUT Request"))},
		{name: "V2 PUT three terms", in: frame("0a0b0c0d", "PUT", []byte("Zm9v YmFy YmF6")),
			want: frame("0a0b0c0d", "FAILURE", []byte("Invalid PUT Request"))},
		{name: "V2 PUT empty key", in: frame("0a0b0c0d", "PUT", []byte("ICA= YmFy")),
			want: frame("0a0b0c0d", "FAILURE", []byte("Invalid PUT Request"))},
		{name: "V2 DELETE sdc refused", in: frame("0a0b0c0d", "DELETE", b64("sdc:uuid")),
			want: frame("0a0b0c0d", "FAILURE", []byte(`Cannot update the "sdc" Namespace.`))},
		{name: "V2 DELETE empty", in: frame("0a0b0c0d", "DELETE", nil),
			want: frame("0a0b0c0d", "FAILURE", []byte("Invalid DELETE Request"))},
		{name: "V2 DELETE namespace refused", store: func() *Store {
			s := vectorStore()
			s.SetNamespaces("triton")
			return s
		}, in: frame("0a0b0c0d", "DELETE", b64("triton:x")),
			want: frame("0a0b0c0d", "FAILURE", []byte(`Cannot update the "triton" Namespace.`))},
		{name: "V2 frame with CR", in: strings.TrimSuffix(frame("0a1b2c3d", "GET", b64("sdc:hostname")), "\n") + "\r\n",
			want: "V2 25 56d408d8 0a1b2c3d SUCCESS d2ViMDE=\n"},
		{name: "V2 length with leading zero (agent uses Number())", in: "V2 029 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l\n",
			want: "V2 25 56d408d8 0a1b2c3d SUCCESS d2ViMDE=\n"},
		{name: "V2 extra spaces between fields", in: "V2  29   35acd468  0a1b2c3d GET c2RjOmhvc3RuYW1l\n",
			want: "V2 25 56d408d8 0a1b2c3d SUCCESS d2ViMDE=\n"},
		{name: "V2 short request ID is echoed", in: frame("abc", "GET", b64("sdc:hostname")),
			want: frame("abc", "SUCCESS", b64("web01"))},

		// Frames dropped without a reply.
		{name: "bad CRC", in: "V2 29 35acd469 0a1b2c3d GET c2RjOmhvc3RuYW1l\n"},
		{name: "upper-case CRC", in: "V2 29 35ACD468 0a1b2c3d GET c2RjOmhvc3RuYW1l\n"},
		{name: "short CRC", in: "V2 13 " + crcHex("0a1b2c3d KEYS")[1:] + " 0a1b2c3d KEYS\n"},
		{name: "bad length", in: "V2 28 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l\n"},
		{name: "zero length", in: "V2 0 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l\n"},
		{name: "upper-case request ID", in: "V2 29 " + crcHex("0A1B2C3D GET c2RjOmhvc3RuYW1l") + " 0A1B2C3D GET c2RjOmhvc3RuYW1l\n"},
		{name: "truncated frame", in: "V2 25 60f18662 7ff58343 GET c2Rj\n"},
		{name: "V2 alone", in: "V2\n"},
		{name: "V2 no body", in: "V2 8 12345678 0a1b2c3d\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := vectorStore()
			if tt.store != nil {
				st = tt.store()
			}
			h := NewHost(st)
			g := pipe(t, h)
			g.send(tt.in)
			if tt.want == "" {
				g.expectNothing()
				if got := h.Stats().Malformed; got != 1 {
					t.Errorf("Malformed = %d, want 1\n%s", got, h.TranscriptString())
				}
				return
			}
			g.expect(tt.want)
			// Nothing more than want was sent.
			g.expectNothing()
		})
	}
}

func crcHex(body string) string { return string(wire.AppendCRC(nil, []byte(body))) }

// TestPutDeleteEffects checks what guest PUT and DELETE do to the store.
func TestPutDeleteEffects(t *testing.T) {
	st := vectorStore()
	h := NewHost(st)
	g := pipe(t, h)
	ok := func(id string) string { return frame(id, "SUCCESS", []byte("OK")) }

	g.send("V2 25 7b1c383a 9c8d7e6f PUT Wm05diBZbUZ5\n")
	g.expect("V2 21 d096fc1d 9c8d7e6f SUCCESS T0s=\n")
	if v, found := st.Get("foo"); !found || string(v) != "bar" {
		t.Fatalf("after PUT foo=bar: Get = %q, %v", v, found)
	}
	// The key is trimmed, the value is not.
	g.send(frame("00000001", "PUT", wire.PutPayload(" spaced ", []byte(" v \n"))))
	g.expect(ok("00000001"))
	if v, _ := st.Get("spaced"); string(v) != " v \n" {
		t.Errorf("spaced = %q", v)
	}
	// _pw keys and operator-script go to internal metadata.
	g.send(frame("00000002", "PUT", wire.PutPayload("root_pw", []byte("secret"))))
	g.expect(ok("00000002"))
	g.send(frame("00000003", "PUT", wire.PutPayload("operator-script", []byte("#!/bin/sh"))))
	g.expect(ok("00000003"))
	want := []string{"root_authorized_keys", "user-script", "foo", "spaced", "root_pw"}
	if got := st.Keys(); !slices.Equal(got, want) {
		t.Errorf("Keys = %q, want %q", got, want)
	}
	// agent.js quirk: operator-script is only readable as sdc:operator-script.
	g.send(frame("00000004", "GET", []byte("operator-script")))
	g.expect(frame("00000004", "NOTFOUND", nil))
	g.send(frame("00000005", "GET", []byte("sdc:operator-script")))
	g.expect(frame("00000005", "SUCCESS", []byte("#!/bin/sh")))
	// A value that Node's lenient base64 decodes to nothing removes the key.
	g.send(frame("00000006", "PUT", []byte("Zm9v !!!!")))
	g.expect(ok("00000006"))
	if _, found := st.Get("foo"); found {
		t.Error("PUT foo with a value decoding to nothing did not remove foo")
	}
	g.send(frame("00000007", "DELETE", []byte("spaced")))
	g.expect(ok("00000007"))
	g.send(frame("00000008", "DELETE", []byte("spaced")))
	g.expect(ok("00000008"))
	if _, found := st.Get("spaced"); found {
		t.Error("DELETE spaced did not remove it")
	}
	st2 := h.Stats()
	if st2.Requests["PUT"] != 5 || st2.Requests["DELETE"] != 2 || st2.Requests["GET"] != 2 || st2.Served != 9 {
		t.Errorf("stats = %+v", st2)
	}
}

// TestBinaryValues round-trips values a text protocol could break, via
// V2 PUT then GET, and V1 GET for the ones without newlines.
func TestBinaryValues(t *testing.T) {
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>11)
	}
	values := map[string][]byte{
		"one":      {'x'},
		"nul":      []byte("a\x00b\x00"),
		"non-utf8": {0xff, 0xfe, 0x80, 'z', 0xc0},
		"64KiB":    bytes.Repeat([]byte("0123456789abcdef"), 4<<10),
		"4MiB":     big,
		"newlines": []byte("\n\nfoo\n\nbar\n"),
	}
	st := NewStore()
	h := NewHost(st)
	g := pipe(t, h)
	for name, v := range values {
		g.send(frame("0000beef", "PUT", wire.PutPayload(name, v)))
		g.expect(frame("0000beef", "SUCCESS", []byte("OK")))
		g.send(frame("0000cafe", "GET", []byte(name)))
		f, err := wire.ParseFrame(bytes.TrimSuffix(g.line(), []byte("\n")))
		if err != nil || f.Code != "SUCCESS" || !bytes.Equal(f.Payload, v) {
			t.Errorf("%s: GET = %s %d bytes, %v; want %d bytes", name, f.Code, len(f.Payload), err, len(v))
		}
	}
	// An empty value can only come from the test side; GET gives an empty SUCCESS.
	st.Set("empty", nil)
	g.send(frame("0000cafe", "GET", []byte("empty")))
	g.expect("V2 16 " + crcHex("0000cafe SUCCESS") + " 0000cafe SUCCESS\n")
	// V1 carries a NUL and non-UTF-8 bytes unchanged too.
	g.send("GET non-utf8\n")
	g.expect("SUCCESS\n\xff\xfe\x80z\xc0\n.\n")
}

// TestInterleavedFramesAreCounted shows how a test proves that two
// clients never interleaved: interleaved writes become malformed or
// unknown lines.
func TestInterleavedFramesAreCounted(t *testing.T) {
	h := NewHost(vectorStore())
	g := pipe(t, h)
	a := frame("aaaaaaaa", "GET", []byte("sdc:uuid"))
	b := frame("bbbbbbbb", "GET", []byte("sdc:hostname"))
	g.send(a[:10] + b + a[10:])
	// The tail of a is a line starting with hex digits: an unknown command.
	g.expect("FAILURE\n")
	g.expectNothing()
	st := h.Stats()
	if st.Malformed != 1 || st.Unknown != 1 || st.Served != 0 {
		t.Errorf("interleaved frames: stats %+v, want 2 bad lines and nothing served\n%s", st, h.TranscriptString())
	}
}

func TestDecodeBase64Lenient(t *testing.T) {
	for in, want := range map[string]string{
		"Zm9v":      "foo",
		"Zm9vYg==":  "foob",
		"Zm9vYg":    "foob",
		"Zm9vYmE":   "fooba",
		"Zm9v!YmFy": "foobar",
		"Zm9v=YmFy": "foo",
		"-_-_":      "\xfb\xff\xbf",
		"!!!!":      "",
		"Z":         "",
		"":          "",
	} {
		if got := string(decodeBase64(in)); got != want {
			t.Errorf("decodeBase64(%q) = %q, want %q", in, got, want)
		}
	}
	if got := decodeBase64(base64.StdEncoding.EncodeToString([]byte{0, 1, 2})); !bytes.Equal(got, []byte{0, 1, 2}) {
		t.Errorf("strict input: %v", got)
	}
}
