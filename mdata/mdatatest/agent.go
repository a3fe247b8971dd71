package mdatatest

import (
	"encoding/base64"
	"hash/crc32"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// answer is the result of handling one line, as agent.js's
// makeMetadataHandler does it.
type answer struct {
	kind  Kind
	op    string // for KindRequest: GET, KEYS, PUT or DELETE
	v2    bool   // the line was a valid V2 frame
	reqID string // the frame's request ID
	note  string // why a line was malformed or unknown
	out   []byte // the reply; nil for none
	// v1Refused says the V1Only fault changed this answer.
	v1Refused bool
}

// handleLine answers one input line (without its "\n"). v1only makes it the
// pre-V2 agent, which knows neither NEGOTIATE nor V2 frames.
func handleLine(st *Store, line []byte, v1only bool) answer {
	text := strings.TrimRightFunc(string(line), jsSpace)
	if text == "" {
		return answer{kind: KindProbe, out: []byte(wire.InvalidCommand + "\n")}
	}
	// agent.js: /^([^\s]+)\s?(.*)/ — a leading space means no match.
	if r, _ := utf8.DecodeRuneInString(text); jsSpace(r) {
		return answer{kind: KindUnknown, note: "leading whitespace", out: []byte(wire.InvalidCommand + "\n")}
	}
	cmd, want := splitCommand(text)
	if (cmd == "NEGOTIATE" || cmd == "GET") && want == "" {
		return answer{kind: KindUnknown, note: cmd + " without an argument", out: []byte(wire.InvalidCommand + "\n")}
	}

	a := answer{}
	if v1only && (cmd == "NEGOTIATE" || cmd == "V2") {
		a.kind, a.note = KindNegotiate, "v1-only host"
		if cmd == "V2" {
			a.kind, a.op = classifyFrame(want)
			a.v2 = true
		}
		a.out, a.v1Refused = []byte(wire.CodeFailure+"\n"), true
		return a
	}
	if cmd == "V2" {
		f, why := parseV2(want)
		if why != "" {
			return answer{kind: KindMalformed, note: why}
		}
		cmd, want, a.reqID, a.v2 = f.code, string(decodeBase64(f.arg)), f.reqID, true
	}

	switch {
	case cmd == wire.CodeGet:
		a.kind, a.op = KindRequest, cmd
		key := strings.TrimFunc(want, jsSpace)
		if key == "" {
			return a.failure("Invalid GET Request")
		}
		if v, ok := st.Get(key); ok {
			return a.success(v)
		}
		return a.reply(wire.CodeNotFound, nil)
	case !a.v2 && cmd == "NEGOTIATE":
		a.kind = KindNegotiate
		if want == "V2" {
			a.out = []byte(wire.V2OK + "\n")
		} else {
			a.out = []byte(wire.CodeFailure + "\n")
		}
		return a
	case a.v2 && cmd == wire.CodeDelete:
		a.kind, a.op = KindRequest, cmd
		key := strings.TrimFunc(want, jsSpace)
		if key == "" {
			return a.failure("Invalid DELETE Request")
		}
		if msg := st.guestUpdate(key, nil, true); msg != "" {
			return a.failure(msg)
		}
		return a.success([]byte("OK"))
	case a.v2 && cmd == wire.CodePut:
		a.kind, a.op = KindRequest, cmd
		terms := strings.Split(strings.TrimFunc(want, jsSpace), " ")
		if len(terms) != 2 {
			return a.failure("Invalid PUT Request")
		}
		key := strings.TrimFunc(string(decodeBase64(terms[0])), jsSpace)
		if key == "" {
			return a.failure("Invalid PUT Request")
		}
		if msg := st.guestUpdate(key, decodeBase64(terms[1]), false); msg != "" {
			return a.failure(msg)
		}
		return a.success([]byte("OK"))
	case cmd == wire.CodeKeys:
		a.kind, a.op = KindRequest, cmd
		return a.success([]byte(strings.Join(st.Keys(), "\n")))
	default:
		a.kind, a.note = KindUnknown, "unknown command"
		return a.failure("Unknown command " + cmd)
	}
}

func (a answer) success(v []byte) answer {
	if a.v2 {
		return a.reply(wire.CodeSuccess, v)
	}
	a.out = wire.AppendV1Body([]byte(wire.CodeSuccess+"\n"), v)
	return a
}

func (a answer) failure(msg string) answer { return a.reply(wire.CodeFailure, []byte(msg)) }

// reply sets the answer to code with payload; V1 replies carry no payload.
func (a answer) reply(code string, payload []byte) answer {
	if a.v2 {
		a.out = wire.Frame{RequestID: a.reqID, Code: code, Payload: payload}.Append(nil)
	} else {
		a.out = []byte(code + "\n")
	}
	return a
}

// guestUpdate applies a guest PUT (del false) or DELETE of key and returns
// the agent's refusal message, or "" on success. As in agent.js a PUT
// whose value decodes to nothing removes the key.
func (s *Store) guestUpdate(key string, value []byte, del bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(key, "sdc:") {
		return `Cannot update the "sdc" Namespace.`
	}
	if ns := s.namespaceOf(key); ns != "" {
		return `Cannot update the "` + ns + `" Namespace.`
	}
	t, k := s.writeTable(key)
	if del || len(value) == 0 {
		t.del(k)
	} else {
		t.set(k, value)
	}
	return ""
}

// splitCommand splits a line the way /^([^\s]+)\s?(.*)/ does: the command
// up to the first space, one space skipped, then the rest up to the first
// line terminator (JavaScript's "." does not match \n, \r, U+2028, U+2029).
func splitCommand(text string) (cmd, want string) {
	i := strings.IndexFunc(text, jsSpace)
	if i < 0 {
		return text, ""
	}
	cmd = text[:i]
	_, size := utf8.DecodeRuneInString(text[i:])
	return cmd, upToLineEnd(text[i+size:])
}

type v2req struct{ reqID, code, arg string }

// parseV2 checks what follows "V2 " the way agent.js parse_v2_request
// does, returning a reason when the frame is to be dropped without reply:
//
//	/\s*([0-9]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(.*)/  (unanchored)
//	clen > 0 && clen == len(reqid + " " + rest)
//	crc == sprintf("%08x", crc32(reqid + " " + rest))  (a string compare)
//	rest =~ /\s*(\S+)\s*(.*)/ -> code, base64 argument
//
// Lengths and CRCs are over bytes; agent.js uses UTF-16 code units, which
// differ only for non-ASCII frames that no client sends.
func parseV2(s string) (v2req, string) {
	var clen, crc, reqID, rest string
	matched := false
	// The regex is unanchored. A match that starts inside a run of digits
	// (or in the spaces before it) ends exactly as the one that starts at
	// the run's first digit, so only those starts need trying.
	for p := 0; p < len(s) && !matched; p++ {
		if !isDigit(s[p]) || p > 0 && isDigit(s[p-1]) {
			continue
		}
		clen, crc, reqID, rest, matched = matchV2At(s, p)
	}
	if !matched {
		return v2req{}, "frame does not match the V2 pattern"
	}
	body := reqID + " " + rest
	clen = strings.TrimLeft(clen, "0")
	if n, err := strconv.Atoi(clen); err != nil || len(clen) > 12 || n <= 0 || n != len(body) {
		return v2req{}, "body length does not match"
	}
	want := string(wire.AppendCRC(nil, []byte(body)))
	if crc != want {
		return v2req{}, "CRC32 does not match (want " + want + ")"
	}
	if rest == "" {
		return v2req{}, "empty frame body"
	}
	// rest starts with a non-space (the \s+ before it is greedy).
	i := strings.IndexFunc(rest, jsSpace)
	if i < 0 {
		return v2req{reqID: reqID, code: rest}, ""
	}
	arg := rest[i:]
	arg = arg[len(arg)-len(strings.TrimLeftFunc(arg, jsSpace)):]
	return v2req{reqID: reqID, code: rest[:i], arg: arg}, ""
}

// matchV2At matches \s*([0-9]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(.*) at
// position p, where s[p] is a digit. All runs are greedy and their classes
// are disjoint, so there is no backtracking to do.
func matchV2At(s string, p int) (clen, crc, reqID, rest string, ok bool) {
	i := p
	run := func(class func(byte) bool) string {
		j := i
		for j < len(s) && class(s[j]) {
			j++
		}
		r := s[i:j]
		i = j
		return r
	}
	spaces := func() bool {
		j := i
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !jsSpace(r) {
				break
			}
			j += size
		}
		moved := j > i
		i = j
		return moved
	}
	if clen = run(isDigit); clen == "" || !spaces() {
		return
	}
	if crc = run(isLowerHex); crc == "" || !spaces() {
		return
	}
	if reqID = run(isLowerHex); reqID == "" || !spaces() {
		return
	}
	return clen, crc, reqID, upToLineEnd(s[i:]), true
}

// classifyFrame says what a V2 line would be to a V2 agent, for the
// transcript of a V1-only host.
func classifyFrame(want string) (Kind, string) {
	f, why := parseV2(want)
	if why != "" {
		return KindMalformed, ""
	}
	switch f.code {
	case wire.CodeGet, wire.CodeKeys, wire.CodePut, wire.CodeDelete:
		return KindRequest, f.code
	}
	return KindUnknown, ""
}

// decodeBase64 decodes like Node's lenient Buffer(s, 'base64'): characters
// outside the alphabet are skipped, "-" and "_" count as "+" and "/", the
// first "=" ends the data, and a trailing partial group yields what bits
// it holds.
func decodeBase64(s string) []byte {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b
	}
	out := make([]byte, 0, len(s)*3/4)
	var acc uint32
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '=' {
			break
		}
		v := b64value(c)
		if v < 0 {
			continue
		}
		acc = acc<<6 | uint32(v)
		if n++; n == 4 {
			out = append(out, byte(acc>>16), byte(acc>>8), byte(acc))
			acc, n = 0, 0
		}
	}
	switch n {
	case 2:
		out = append(out, byte(acc>>4))
	case 3:
		out = append(out, byte(acc>>10), byte(acc>>2))
	}
	return out
}

func b64value(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+' || c == '-':
		return 62
	case c == '/' || c == '_':
		return 63
	}
	return -1
}

// jsSpace reports whether r is in JavaScript's \s class, which agent.js
// uses to split and trim lines (String.prototype.trim uses the same set).
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// upToLineEnd returns s up to its first JavaScript line terminator.
func upToLineEnd(s string) string {
	if i := strings.IndexFunc(s, func(r rune) bool {
		return r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029
	}); i >= 0 {
		return s[:i]
	}
	return s
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isLowerHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' }

// crcOf is the CRC32 the host would write for body.
func crcOf(body []byte) uint32 { return crc32.ChecksumIEEE(body) }
