package datasource

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"unicode"

	"github.com/seedkeeper/seedkeeper/internal/vmtools"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// The guestinfo tools of open-vm-tools, and the name of the transport that
// reads VMX_GUESTINFO_* environment variables instead.
const (
	ToolRPCTool     = "vmware-rpctool"
	ToolVMToolsd    = "vmtoolsd"
	TransportEnvvar = "envvar"
)

// guestinfoNoValue is what both tools print on stderr for a key the VMX
// does not have.
const guestinfoNoValue = "No value found"

// guestinfoEmpty is the value cloud-init treats as "no value" and writes
// when it redacts a key.
const guestinfoEmpty = "---"

// maxGuestinfoDecoded bounds what a base64 or gzip+base64 value may decode
// to: the bound of one seed file, which user-data and vendor-data become.
// The metadata document, YAML, is bounded lower (yamlx.MaxDocument), and
// both bounds hold while decoding, not after it. The tools are run to
// print no more than its base64 takes.
const maxGuestinfoDecoded = vmtools.MaxValue

// maxGuestinfoTotal bounds the decoded values of one guestinfo read
// (metadata, userdata, vendordata) taken together, as maxSeedTotal does
// the files of the NoCloud seeds merged, which they become: room for userdata at
// maxGuestinfoDecoded beside the metadata document, and a whole read, with
// what decoding and writing it costs, inside boot's 64 MiB peak-RSS budget
// (SECURITY.md).
const maxGuestinfoTotal = 24 << 20

// guestinfoLimit is what key may decode to.
func guestinfoLimit(key string) int {
	if key == "metadata" {
		return yamlx.MaxDocument
	}
	return maxGuestinfoDecoded
}

// ErrNoVMwareTools means neither vmware-rpctool nor vmtoolsd is installed,
// so guestinfo cannot be read. Reading the VMware source returns it
// together with ErrNoSource.
var ErrNoVMwareTools = errors.New("neither vmware-rpctool nor vmtoolsd is installed (install open-vm-tools)")

// guestinfoTool talks to the VMX through one of the tools.
type guestinfoTool struct {
	name string
	r    vmtools.Runner
	log  *slog.Logger
}

// get reads guestinfo.key, a value that may decode to at most limit
// bytes: what the tool printed, not copied. It reports ok=false for a key
// that is missing, empty or "---", an error matching errOverLimit when
// limit is below maxGuestinfoDecoded and vmtools.Exec printed more than
// such a value can take, and any other error only when the tool failed.
func (t guestinfoTool) get(ctx context.Context, key string, limit int) ([]byte, bool, error) {
	rpc := "info-get guestinfo." + key
	var res vmtools.Result
	var err error
	if er, ok := t.r.(vmtools.Exec); ok && limit < maxGuestinfoDecoded {
		res, err = er.RunLimit(ctx, vmtools.Argv(t.name, rpc), vmtools.OutputFor(limit))
		if errors.Is(err, vmtools.ErrOutput) {
			return nil, false, overLimit("%s printed more than a value of %d bytes takes", t.name, limit)
		}
	} else {
		res, err = t.r.Run(ctx, vmtools.Argv(t.name, rpc))
	}
	if err != nil {
		return nil, false, &vmtools.ToolError{Tool: t.name, Command: rpc, Err: err}
	}
	stderr := strings.TrimRight(string(res.Stderr), "\r\n")
	if stderr == guestinfoNoValue {
		t.log.Debug("guestinfo key not set", "key", "guestinfo."+key, "tool", t.name)
		return nil, false, nil
	}
	if res.ExitCode != 0 {
		return nil, false, &vmtools.ToolError{Tool: t.name, Command: rpc, ExitCode: res.ExitCode, Stderr: stderr}
	}
	out := bytes.TrimSuffix(res.Stdout, []byte("\n"))
	if len(out) == 0 {
		t.log.Warn("guestinfo tool succeeded but printed nothing; treating the key as absent",
			"key", "guestinfo."+key, "tool", t.name)
		return nil, false, nil
	}
	v := bytes.TrimRightFunc(out, unicode.IsSpace)
	if len(v) == 0 || string(v) == guestinfoEmpty {
		t.log.Debug("guestinfo key is empty", "key", "guestinfo."+key, "tool", t.name)
		return nil, false, nil
	}
	return v, true, nil
}

// guestinfoValueKeys are the keys holding data, in the order cloud-init
// reads them. Each may have a "<key>.encoding" companion.
var guestinfoValueKeys = [...]string{"metadata", "userdata", "vendordata"}

// rawGuestinfo is what a transport returned, decoded: the present value
// keys (without the "guestinfo." prefix) and what they decode to (nil for
// one dropped), and what was dropped.
type rawGuestinfo struct {
	transport string
	data      map[string][]byte
	items     []string // present keys, in read order, as the transport names them
	warnings  []string
}

// fetchGuestinfo reads every value key and, for the present ones only,
// its encoding key, and decodes each value as soon as its encoding is
// read, so that one value's text is held at a time and never beside its
// copy. The values are read in guestinfoValueKeys order, each within its
// own limit and what is left of maxGuestinfoTotal: vendordata that no
// longer fits is dropped with a warning naming it and the bound; metadata
// or userdata that does not fit fails the read. name is how the
// transport names a key. An error of get is returned as it is; any other
// is about a value.
func fetchGuestinfo(get func(key string, limit int) ([]byte, bool, error), name func(key string) string, log *slog.Logger) (*rawGuestinfo, error) {
	g := &rawGuestinfo{data: map[string][]byte{}}
	total := 0
	for _, k := range guestinfoValueKeys {
		limit := min(guestinfoLimit(k), maxGuestinfoTotal-total)
		b, ok, err := fetchGuestinfoValue(g, get, name, k, limit, log)
		if err == nil && !ok {
			continue
		}
		if err != nil && limit < guestinfoLimit(k) && errors.Is(err, errOverLimit) {
			if k != "vendordata" {
				return nil, fmt.Errorf("%s: the values of one guestinfo read add up to more than the %d byte limit", name(k), maxGuestinfoTotal)
			}
			g.warnings = append(g.warnings, fmt.Sprintf("%s dropped: the values of one guestinfo read add up to more than the %d byte limit (%d bytes were left for it)", name(k), maxGuestinfoTotal, limit))
			g.data[k] = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		total += len(b)
		g.data[k] = b
	}
	return g, nil
}

// fetchGuestinfoValue reads key, and its encoding when it is present,
// into g.items, and decodes it within limit; ok is false for an absent
// key.
func fetchGuestinfoValue(g *rawGuestinfo, get func(key string, limit int) ([]byte, bool, error), name func(key string) string, key string, limit int, log *slog.Logger) ([]byte, bool, error) {
	v, ok, err := get(key, limit)
	switch {
	case errors.Is(err, errOverLimit):
		g.items = append(g.items, name(key))
		return nil, true, fmt.Errorf("%s: %w", name(key), err)
	case err != nil:
		return nil, false, err
	case !ok:
		return nil, false, nil
	}
	g.items = append(g.items, name(key))
	enc, ok, err := get(key+".encoding", maxGuestinfoDecoded)
	if err != nil {
		return nil, false, err
	}
	if ok {
		g.items = append(g.items, name(key+".encoding"))
	}
	b, err := decodeGuestinfoValue(name(key), string(enc), v, limit, log)
	return b, true, err
}

// queryGuestinfo reads the keys with vmware-rpctool and, when that tool is
// missing or fails on any key, restarts the whole query with vmtoolsd
// (cloud-init #4444: only vmtoolsd can use secure RPC).
func queryGuestinfo(ctx context.Context, r vmtools.Runner, log *slog.Logger) (*rawGuestinfo, error) {
	query := func(tool string) (*rawGuestinfo, error) {
		t := guestinfoTool{name: tool, r: r, log: log}
		g, err := fetchGuestinfo(func(key string, limit int) ([]byte, bool, error) { return t.get(ctx, key, limit) },
			func(key string) string { return "guestinfo." + key }, log)
		if err != nil {
			return nil, err
		}
		g.transport = tool
		return g, nil
	}
	raw, rpcErr := query(ToolRPCTool)
	if rpcErr == nil {
		return raw, nil
	}
	// A value that does not decode is the same through either tool.
	var te *vmtools.ToolError
	if ctx.Err() != nil || !errors.As(rpcErr, &te) {
		return nil, rpcErr
	}
	rpcMissing := errors.Is(rpcErr, exec.ErrNotFound)
	if rpcMissing {
		log.Debug("vmware-rpctool not found; using vmtoolsd")
	} else {
		log.Warn("vmware-rpctool failed; reading every key again with vmtoolsd", "err", rpcErr)
	}
	raw, vmtErr := query(ToolVMToolsd)
	switch {
	case vmtErr == nil:
		return raw, nil
	case rpcMissing && errors.Is(vmtErr, exec.ErrNotFound):
		return nil, fmt.Errorf("%w: %w", ErrNoSource, ErrNoVMwareTools)
	case rpcMissing:
		return nil, vmtErr
	case errors.Is(vmtErr, exec.ErrNotFound):
		return nil, fmt.Errorf("%w (and vmtoolsd is not installed)", rpcErr)
	default:
		return nil, fmt.Errorf("%w; then %w", rpcErr, vmtErr)
	}
}

// envGuestinfoName is the environment variable cloud-init reads for a
// guestinfo key: "vmx.guestinfo.<key>", upper-cased, dots to underscores.
func envGuestinfoName(key string) string {
	return strings.ReplaceAll(strings.ToUpper("vmx.guestinfo."+key), ".", "_")
}

// readGuestinfoEnv reads the envvar transport. It returns nil when
// VMX_GUESTINFO is empty or no value variable has content.
func readGuestinfoEnv(getenv func(string) string, log *slog.Logger) (*rawGuestinfo, error) {
	if getenv("VMX_GUESTINFO") == "" {
		return nil, nil
	}
	g, err := fetchGuestinfo(func(key string, _ int) ([]byte, bool, error) {
		v, ok := cleanGuestinfoValue(getenv(envGuestinfoName(key)))
		return []byte(v), ok, nil
	}, envGuestinfoName, log)
	if err != nil || len(g.data) == 0 {
		return nil, err
	}
	g.transport = TransportEnvvar
	return g, nil
}

// name is how the transport names key in messages.
func (g *rawGuestinfo) name(key string) string {
	if g.transport == TransportEnvvar {
		return envGuestinfoName(key)
	}
	return "guestinfo." + key
}

// decodeGuestinfoValue decodes the value of the key named name, within
// limit; v may be overwritten.
func decodeGuestinfoValue(name, enc string, v []byte, limit int, log *slog.Logger) ([]byte, error) {
	if enc != "" && !knownGuestinfoEncoding(enc) {
		// Described, never quoted: the encoding key is the VM's text.
		log.Warn("unknown guestinfo encoding (not base64, b64, gzip+base64 or gz+b64); using the value as plain text",
			"key", name, "encoding_bytes", len(enc))
	}
	b, err := decodeGuestinfo(enc, v, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// cleanGuestinfoValue right-strips v and reports whether anything is left
// that is not cloud-init's "---".
func cleanGuestinfoValue(v string) (string, bool) {
	v = strings.TrimRightFunc(v, unicode.IsSpace)
	if v == "" || v == guestinfoEmpty {
		return "", false
	}
	return v, true
}

func knownGuestinfoEncoding(enc string) bool {
	switch enc {
	case "base64", "b64", "gzip+base64", "gz+b64":
		return true
	}
	return false
}

// errOverLimit matches every error of decodeGuestinfo about a value that
// decodes to more than its limit.
var errOverLimit = errors.New("over the limit")

// overLimitError is such an error; its text is only its message.
type overLimitError string

func (e overLimitError) Error() string   { return string(e) }
func (overLimitError) Is(err error) bool { return err == errOverLimit }

func overLimit(format string, a ...any) error { return overLimitError(fmt.Sprintf(format, a...)) }

// decodeGuestinfo decodes a value by its encoding: base64/b64,
// gzip+base64/gz+b64, anything else plain text. What it decodes to may
// be at most limit bytes, checked before each step allocates: the base64
// by its length, the gzip stream as it expands. A base64 value is
// decoded out of v, which is overwritten; plain text is v itself.
func decodeGuestinfo(enc string, v []byte, limit int) ([]byte, error) {
	switch enc {
	case "base64", "b64":
		b, err := guestinfoBase64(v, limit)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", enc, err)
		}
		return b, nil
	case "gzip+base64", "gz+b64":
		// The compressed stream is at most as long as what it
		// expands to, give or take its header.
		b, err := guestinfoBase64(v, limit+1024)
		if err == nil {
			b, err = guestinfoGunzip(b, limit)
		}
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", enc, err)
		}
		return b, nil
	}
	if len(v) > limit {
		return nil, overLimit("%d bytes, more than the %d allowed", len(v), limit)
	}
	return v, nil
}

// guestinfoBase64 decodes standard base64, ignoring line breaks and other
// ASCII whitespace (as `base64` wraps its output) and missing padding.
// It decodes in place: s is overwritten, and the result is part of it.
func guestinfoBase64(s []byte, limit int) ([]byte, error) {
	space := func(c byte) bool {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
			return true
		}
		return false
	}
	// Counted before the copy without white space is made.
	text := len(s)
	for _, c := range s {
		if space(c) {
			text--
		}
	}
	if n := base64.RawStdEncoding.DecodedLen(text - bytes.Count(s, []byte("="))); n > limit {
		return nil, overLimit("decodes to %d bytes, more than the %d allowed", n, limit)
	}
	kept := s[:0]
	for _, c := range s {
		if !space(c) {
			kept = append(kept, c)
		}
	}
	kept = bytes.TrimRight(kept, "=")
	// Decoded a chunk at a time into s itself: a chunk's bytes land
	// before the end of the text already read.
	var chunk [48 << 10]byte
	n := 0
	for i := 0; i < len(kept); i += 64 << 10 {
		m, err := base64.RawStdEncoding.Decode(chunk[:], kept[i:min(i+64<<10, len(kept))])
		if ce, ok := err.(base64.CorruptInputError); ok {
			err = base64.CorruptInputError(int64(i) + int64(ce))
		}
		if err != nil {
			return nil, fmt.Errorf("bad base64: %w", err)
		}
		n += copy(s[n:], chunk[:m])
	}
	return s[:n:n], nil
}

// guestinfoGunzip decompresses one or more gzip members, up to limit
// bytes. The output grows as it is read and never past limit+1, so a
// small stream that expands to gigabytes costs limit, not gigabytes.
func guestinfoGunzip(b []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("bad gzip: %w", err)
	}
	out := make([]byte, 0, min(4*len(b)+512, limit+1))
	for {
		if len(out) == cap(out) {
			if len(out) > limit {
				return nil, overLimit("bad gzip: expands to more than %d bytes", limit)
			}
			out = append(make([]byte, 0, min(2*cap(out), limit+1)), out...)
		}
		n, err := zr.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("bad gzip: %w", err)
		}
	}
	if len(out) > limit {
		return nil, overLimit("bad gzip: expands to more than %d bytes", limit)
	}
	return out, nil
}
