// Package wire encodes and decodes the bytes of the SmartOS metadata
// protocol: V2 frames (length, CRC32, request ID, base64 payload) and V1
// dot-stuffed bodies. It is shared by the client (package mdata) and the
// simulated host (package mdatatest) so that both speak exactly one format.
package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Response and request codes.
const (
	CodeSuccess  = "SUCCESS"
	CodeNotFound = "NOTFOUND"
	CodeFailure  = "FAILURE"
	CodeGet      = "GET"
	CodeKeys     = "KEYS"
	CodePut      = "PUT"
	CodeDelete   = "DELETE"
)

// Lines the host sends outside V2 frames.
const (
	InvalidCommand = "invalid command"
	V2OK           = "V2_OK"
	Negotiate      = "NEGOTIATE V2"
)

// Frame is one V2 message. Payload holds the decoded payload bytes; a nil
// Payload means the frame carries none (an empty payload is sent as none,
// as the host agent does).
type Frame struct {
	RequestID string
	Code      string
	Payload   []byte
}

// Append appends f to dst as it goes on the wire: "V2 <len> <crc> <body>\n".
func (f Frame) Append(dst []byte) []byte {
	body := make([]byte, 0, len(f.RequestID)+len(f.Code)+2+base64.StdEncoding.EncodedLen(len(f.Payload)))
	body = append(body, f.RequestID...)
	body = append(body, ' ')
	body = append(body, f.Code...)
	if len(f.Payload) > 0 {
		body = append(body, ' ')
		body = base64.StdEncoding.AppendEncode(body, f.Payload)
	}
	dst = append(dst, "V2 "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, ' ')
	dst = AppendCRC(dst, body)
	dst = append(dst, ' ')
	dst = append(dst, body...)
	return append(dst, '\n')
}

// AppendCRC appends the IEEE CRC32 of body as exactly eight lower-case hex
// digits, the only form the host agent accepts.
func AppendCRC(dst, body []byte) []byte {
	const hexdigits = "0123456789abcdef"
	c := crc32.ChecksumIEEE(body)
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hexdigits[(c>>uint(shift))&0xf])
	}
	return dst
}

// Errors from ParseFrame. They all mean "not a frame for us": the caller
// skips the line.
var (
	ErrNotFrame   = errors.New("not a V2 frame")
	ErrLength     = errors.New("body length does not match")
	ErrCRC        = errors.New("CRC32 does not match")
	ErrBadBody    = errors.New("malformed frame body")
	ErrBadPayload = errors.New("payload is not valid base64")
)

// ParseFrame parses one line (without its trailing "\n"; a trailing "\r" is
// ignored) as a V2 frame and checks its length and CRC. The request ID must
// be eight hex digits and the code one upper-case word.
func ParseFrame(line []byte) (Frame, error) {
	r, err := ParseRaw(line)
	if err != nil {
		return Frame{}, err
	}
	f := Frame{RequestID: r.RequestID, Code: r.Code}
	if r.Encoded != nil {
		if f.Payload, err = r.Payload(); err != nil {
			return Frame{}, err
		}
	}
	return f, nil
}

// Raw is a checked V2 frame whose payload is still base64: the caller
// decides, from the code, how much of it to decode (all of a value, a
// bounded prefix of a FAILURE message).
type Raw struct {
	RequestID string
	Code      string
	// Encoded is the base64 payload, a slice of the line; nil when the
	// frame carries none.
	Encoded []byte
}

// ParseRaw is ParseFrame without the payload's decoding. It allocates
// nothing in proportion to the line: the fields are counted before they
// are cut (a line of a million spaces is one comparison, not a million
// slices).
func ParseRaw(line []byte) (Raw, error) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	rest, ok := bytes.CutPrefix(line, []byte("V2 "))
	if !ok {
		return Raw{}, ErrNotFrame
	}
	lenField, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok || !isDecimal(lenField) {
		return Raw{}, ErrNotFrame
	}
	crcField, body, ok := bytes.Cut(rest, []byte(" "))
	if !ok || len(crcField) != 8 {
		return Raw{}, ErrNotFrame
	}
	n, err := strconv.Atoi(string(lenField))
	if err != nil || n != len(body) || n == 0 {
		return Raw{}, ErrLength
	}
	want, err := strconv.ParseUint(string(crcField), 16, 32)
	if err != nil {
		return Raw{}, ErrNotFrame
	}
	if uint32(want) != crc32.ChecksumIEEE(body) {
		return Raw{}, ErrCRC
	}
	if c := bytes.Count(body, []byte(" ")); c < 1 || c > 2 {
		return Raw{}, ErrBadBody
	}
	id, rest, _ := bytes.Cut(body, []byte(" "))
	code, payload, hasPayload := bytes.Cut(rest, []byte(" "))
	if !IsRequestID(id) || !isCode(code) {
		return Raw{}, ErrBadBody
	}
	r := Raw{RequestID: string(id), Code: string(code)}
	if hasPayload {
		if len(payload) == 0 {
			return Raw{}, ErrBadBody
		}
		r.Encoded = payload
	}
	return r, nil
}

var strict = base64.StdEncoding.Strict()

// Payload decodes the whole payload (an empty slice when there is none).
func (r Raw) Payload() ([]byte, error) {
	p := make([]byte, strict.DecodedLen(len(r.Encoded)))
	n, err := strict.Decode(p, r.Encoded)
	if err != nil {
		return nil, ErrBadPayload
	}
	return p[:n], nil
}

// PayloadInPlace decodes the whole payload over its own encoding and
// returns the decoded bytes, a slice of the line ParseRaw was given: a
// value of many MiB costs no second buffer. The line is overwritten
// (the decoder writes behind where it reads, 3 bytes for every 4), so it
// must not be read again; on an error its payload is left half decoded.
// It accepts exactly what Payload accepts.
func (r Raw) PayloadInPlace() ([]byte, error) {
	n, err := strict.Decode(r.Encoded, r.Encoded)
	if err != nil {
		return nil, ErrBadPayload
	}
	return r.Encoded[:n:n], nil
}

// PayloadPrefix decodes at most limit bytes of the payload and returns
// them with the length of the whole decoded payload (counted, not
// decoded). Only the prefix is checked as base64.
func (r Raw) PayloadPrefix(limit int) (p []byte, total int, err error) {
	enc := r.Encoded
	if len(enc)%4 != 0 {
		return nil, 0, ErrBadPayload
	}
	total = len(enc) / 4 * 3
	for i := len(enc) - 1; i >= 0 && i >= len(enc)-2 && enc[i] == '='; i-- {
		total--
	}
	if n := (limit + 2) / 3 * 4; n < len(enc) {
		enc = enc[:n]
	}
	p = make([]byte, strict.DecodedLen(len(enc)))
	n, err := strict.Decode(p, enc)
	if err != nil {
		return nil, 0, ErrBadPayload
	}
	return p[:min(n, limit)], total, nil
}

func isDecimal(b []byte) bool {
	if len(b) == 0 || len(b) > 10 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// IsRequestID reports whether b is eight lower-case hex digits.
func IsRequestID(b []byte) bool {
	if len(b) != 8 {
		return false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// maxCode bounds a code: the protocol's longest is eight letters, and a
// code is kept in errors.
const maxCode = 32

func isCode(b []byte) bool {
	if len(b) == 0 || len(b) > maxCode {
		return false
	}
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// NewRequestID returns eight lower-case hex digits from the system's random
// source.
func NewRequestID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; keep IDs well-formed anyway.
		panic(fmt.Sprintf("mdata: reading random request ID: %v", err))
	}
	return fmt.Sprintf("%08x", binary.BigEndian.Uint32(b[:]))
}

// PutPayload builds the inner PUT payload: base64(key) + " " + base64(value).
// Frame.Append encodes it once more, giving the protocol's double encoding.
func PutPayload(key string, value []byte) []byte {
	p := base64.StdEncoding.AppendEncode(nil, []byte(key))
	p = append(p, ' ')
	return base64.StdEncoding.AppendEncode(p, value)
}

// AppendV1Body appends value as a V1 body: every line that starts with "."
// gets one more ".", then "\n.\n" ends it.
func AppendV1Body(dst, value []byte) []byte {
	for {
		line, rest, more := bytes.Cut(value, []byte("\n"))
		if len(line) > 0 && line[0] == '.' {
			dst = append(dst, '.')
		}
		dst = append(dst, line...)
		dst = append(dst, '\n')
		if !more {
			break
		}
		value = rest
	}
	return append(dst, ".\n"...)
}

// V1Body collects the lines of a V1 body. Unlike the reference C client it
// keeps leading empty lines, so it returns exactly what the host sent.
type V1Body struct {
	buf   []byte
	lines int
}

// Line adds one received line (without "\n") and reports whether it was the
// terminating ".".
func (b *V1Body) Line(line []byte) (done bool) {
	if len(line) == 1 && line[0] == '.' {
		return true
	}
	if b.lines > 0 {
		b.buf = append(b.buf, '\n')
	}
	b.lines++
	b.buf = append(b.buf, bytes.TrimPrefix(line, []byte("."))...)
	return false
}

// Bytes returns the value collected so far.
func (b *V1Body) Bytes() []byte {
	if b.buf == nil {
		return []byte{}
	}
	return b.buf
}
