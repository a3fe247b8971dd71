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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode"

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
// both bounds hold while decoding, not after it.
const maxGuestinfoDecoded = 16 << 20

// guestinfoLimit is what key may decode to.
func guestinfoLimit(key string) int {
	if key == "metadata" {
		return yamlx.MaxDocument
	}
	return maxGuestinfoDecoded
}

// DefaultToolTimeout bounds each run of a guestinfo tool when
// ExecRunner.Timeout is zero.
const DefaultToolTimeout = 10 * time.Second

// ErrNoVMwareTools means neither vmware-rpctool nor vmtoolsd is installed,
// so guestinfo cannot be read. ReadVMware returns it together with
// ErrNoSource.
var ErrNoVMwareTools = errors.New("neither vmware-rpctool nor vmtoolsd is installed (install open-vm-tools)")

// CommandResult is what one command printed and how it exited.
type CommandResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// CommandRunner runs a command given as argv. It returns a nil error when
// the command ran, whatever its exit code. When the command does not
// exist, the error must wrap exec.ErrNotFound, so the caller can try the
// other tool; any other error (timeout, signal) is a failure of that tool.
type CommandRunner interface {
	Run(ctx context.Context, argv []string) (CommandResult, error)
}

// RunnerFunc adapts a function to CommandRunner.
type RunnerFunc func(ctx context.Context, argv []string) (CommandResult, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, argv []string) (CommandResult, error) {
	return f(ctx, argv)
}

// ExecRunner runs commands with os/exec. The zero value looks commands up
// in $PATH, inherits this process's environment and gives each run
// DefaultToolTimeout.
type ExecRunner struct {
	// Timeout bounds one run; 0 means DefaultToolTimeout.
	Timeout time.Duration
	// Path is the list of directories searched for the command, in
	// $PATH syntax; "" means $PATH.
	Path string
	// Env is the command's environment; nil means this process's.
	Env []string
}

// Run runs argv and collects its output. A command that is killed or
// cannot be started is an error; a non-zero exit is not.
func (r ExecRunner) Run(ctx context.Context, argv []string) (CommandResult, error) {
	if len(argv) == 0 {
		return CommandResult{}, errors.New("empty command")
	}
	prog, err := r.lookPath(argv[0])
	if err != nil {
		return CommandResult{}, err
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	stdout := &cappedBuffer{max: maxToolOutput}
	stderr := &cappedBuffer{max: maxToolStderr}
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = r.Env
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// A child that keeps the pipes open must not hold us past the deadline.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	res := CommandResult{Stdout: stdout.b, Stderr: stderr.b}
	var exit *exec.ExitError
	switch {
	case stdout.over:
		return CommandResult{}, fmt.Errorf("%s: %w: printed more than %d bytes", argv[0], errToolOutput, maxToolOutput)
	case err == nil:
		return res, nil
	case parent.Err() != nil:
		return res, fmt.Errorf("%s: %w", argv[0], parent.Err())
	case ctx.Err() != nil:
		return res, fmt.Errorf("%s: no answer within %v: %w", argv[0], timeout, ctx.Err())
	case errors.As(err, &exit) && exit.Exited():
		res.ExitCode = exit.ExitCode()
		return res, nil
	default:
		return res, fmt.Errorf("%s: %w", argv[0], err)
	}
}

// maxToolOutput bounds what one run of a guestinfo tool may print: the
// base64 of the largest value (maxGuestinfoDecoded and a gzip header),
// wrapped in lines. Output past it is not kept, and the run fails.
const maxToolOutput = (maxGuestinfoDecoded+1024)/3*4*77/76 + 4096

// maxToolStderr is how much of a tool's stderr is kept: it is foreign
// text, shown in errors; the rest is dropped as it arrives.
const maxToolStderr = 4096

var errToolOutput = errors.New("output over the limit")

// cappedBuffer keeps the first max bytes written to it and drops the rest
// (still taking it, so that the child does not block on a full pipe),
// noting that it did.
type cappedBuffer struct {
	b    []byte
	max  int
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := min(len(p), c.max-len(c.b))
	if len(c.b)+n > cap(c.b) {
		// Doubling, not append's slower growth: what is copied and
		// dropped on the way to max stays under max.
		c.b = append(make([]byte, 0, min(max(2*cap(c.b), len(c.b)+n, 4096), c.max)), c.b...)
	}
	c.b = append(c.b, p[:n]...)
	if n < len(p) {
		c.over = true
	}
	return len(p), nil
}

// lookPath finds name in r.Path, or in $PATH when r.Path is empty.
func (r ExecRunner) lookPath(name string) (string, error) {
	if r.Path == "" || strings.ContainsRune(name, '/') {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(r.Path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// ToolError is a guestinfo tool that failed: it could not be run, or it
// exited non-zero with something other than "No value found".
type ToolError struct {
	Tool     string // ToolRPCTool or ToolVMToolsd
	Command  string // the RPC text, e.g. "info-get guestinfo.metadata"
	ExitCode int    // when it ran
	Stderr   string // what it printed on stderr, trailing newlines stripped
	Err      error  // why it could not be run; nil when it ran
}

func (e *ToolError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s %q: %v", e.Tool, e.Command, e.Err)
	}
	msg := e.Stderr
	if msg == "" {
		msg = "(nothing on stderr)"
	} else if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return fmt.Sprintf("%s %q: exit status %d: %s", e.Tool, e.Command, e.ExitCode, msg)
}

func (e *ToolError) Unwrap() error { return e.Err }

// guestinfoTool talks to the VMX through one of the tools.
type guestinfoTool struct {
	name string
	r    CommandRunner
	log  *slog.Logger
}

func (t guestinfoTool) argv(rpc string) []string {
	if t.name == ToolVMToolsd {
		return []string{ToolVMToolsd, "--cmd", rpc}
	}
	return []string{t.name, rpc}
}

// get reads guestinfo.key. It reports ok=false for a key that is missing,
// empty or "---", and an error only when the tool failed.
func (t guestinfoTool) get(ctx context.Context, key string) (string, bool, error) {
	rpc := "info-get guestinfo." + key
	res, err := t.r.Run(ctx, t.argv(rpc))
	if err != nil {
		return "", false, &ToolError{Tool: t.name, Command: rpc, Err: err}
	}
	stderr := strings.TrimRight(string(res.Stderr), "\r\n")
	if stderr == guestinfoNoValue {
		t.log.Debug("guestinfo key not set", "key", "guestinfo."+key, "tool", t.name)
		return "", false, nil
	}
	if res.ExitCode != 0 {
		return "", false, &ToolError{Tool: t.name, Command: rpc, ExitCode: res.ExitCode, Stderr: stderr}
	}
	out := strings.TrimSuffix(string(res.Stdout), "\n")
	if out == "" {
		t.log.Warn("guestinfo tool succeeded but printed nothing; treating the key as absent",
			"key", "guestinfo."+key, "tool", t.name)
		return "", false, nil
	}
	v, ok := cleanGuestinfoValue(out)
	if !ok {
		t.log.Debug("guestinfo key is empty", "key", "guestinfo."+key, "tool", t.name)
	}
	return v, ok, nil
}

// set writes guestinfo.key; an empty value becomes one space, because the
// VMX cannot hold an empty string.
func (t guestinfoTool) set(ctx context.Context, key, value string) error {
	if value == "" {
		value = " "
	}
	rpc := "info-set guestinfo." + key + " " + value
	res, err := t.r.Run(ctx, t.argv(rpc))
	if err != nil {
		return &ToolError{Tool: t.name, Command: "info-set guestinfo." + key, Err: err}
	}
	if res.ExitCode != 0 {
		return &ToolError{Tool: t.name, Command: "info-set guestinfo." + key, ExitCode: res.ExitCode,
			Stderr: strings.TrimRight(string(res.Stderr), "\r\n")}
	}
	return nil
}

// guestinfoValueKeys are the keys holding data, in the order cloud-init
// reads them. Each may have a "<key>.encoding" companion.
var guestinfoValueKeys = [...]string{"metadata", "userdata", "vendordata"}

// rawGuestinfo is what a transport returned before decoding: the present
// keys (without the "guestinfo." prefix) and their cleaned values.
type rawGuestinfo struct {
	transport string
	values    map[string]string
	items     []string // present keys, in read order, as the transport names them
}

// fetchGuestinfo reads every value key and, for the present ones only,
// its encoding key.
func fetchGuestinfo(get func(key string) (string, bool, error)) (map[string]string, []string, error) {
	vals := map[string]string{}
	var order []string
	for _, k := range guestinfoValueKeys {
		v, ok, err := get(k)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		vals[k] = v
		order = append(order, k)
		enc, ok, err := get(k + ".encoding")
		if err != nil {
			return nil, nil, err
		}
		if ok {
			vals[k+".encoding"] = enc
			order = append(order, k+".encoding")
		}
	}
	return vals, order, nil
}

// queryGuestinfo reads the keys with vmware-rpctool and, when that tool is
// missing or fails on any key, restarts the whole query with vmtoolsd
// (cloud-init #4444: only vmtoolsd can use secure RPC).
func queryGuestinfo(ctx context.Context, r CommandRunner, log *slog.Logger) (*rawGuestinfo, error) {
	query := func(tool string) (*rawGuestinfo, error) {
		t := guestinfoTool{name: tool, r: r, log: log}
		vals, order, err := fetchGuestinfo(func(key string) (string, bool, error) { return t.get(ctx, key) })
		if err != nil {
			return nil, err
		}
		items := make([]string, len(order))
		for i, k := range order {
			items[i] = "guestinfo." + k
		}
		return &rawGuestinfo{transport: tool, values: vals, items: items}, nil
	}
	raw, rpcErr := query(ToolRPCTool)
	if rpcErr == nil {
		return raw, nil
	}
	if ctx.Err() != nil {
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
func readGuestinfoEnv(getenv func(string) string) *rawGuestinfo {
	if getenv("VMX_GUESTINFO") == "" {
		return nil
	}
	vals, order, _ := fetchGuestinfo(func(key string) (string, bool, error) {
		v, ok := cleanGuestinfoValue(getenv(envGuestinfoName(key)))
		return v, ok, nil
	})
	if len(vals) == 0 {
		return nil
	}
	items := make([]string, len(order))
	for i, k := range order {
		items[i] = envGuestinfoName(k)
	}
	return &rawGuestinfo{transport: TransportEnvvar, values: vals, items: items}
}

// name is how the transport names key in messages.
func (g *rawGuestinfo) name(key string) string {
	if g.transport == TransportEnvvar {
		return envGuestinfoName(key)
	}
	return "guestinfo." + key
}

// decode returns the decoded value of key, or nil when it is absent.
func (g *rawGuestinfo) decode(key string, log *slog.Logger) ([]byte, error) {
	v, ok := g.values[key]
	if !ok {
		return nil, nil
	}
	enc := g.values[key+".encoding"]
	if enc != "" && !knownGuestinfoEncoding(enc) {
		log.Warn("unknown guestinfo encoding; using the value as plain text",
			"key", g.name(key), "encoding", enc)
	}
	b, err := decodeGuestinfo(enc, v, guestinfoLimit(key))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.name(key), err)
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

// decodeGuestinfo decodes a value by its encoding: base64/b64,
// gzip+base64/gz+b64, anything else plain text. What it decodes to may
// be at most limit bytes, checked before each step allocates: the base64
// by its length, the gzip stream as it expands.
func decodeGuestinfo(enc, v string, limit int) ([]byte, error) {
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
		return nil, fmt.Errorf("%d bytes, more than the %d allowed", len(v), limit)
	}
	return []byte(v), nil
}

// guestinfoBase64 decodes standard base64, ignoring line breaks and other
// ASCII whitespace (as `base64` wraps its output) and missing padding.
func guestinfoBase64(s string, limit int) ([]byte, error) {
	space := func(r rune) bool {
		switch r {
		case ' ', '\t', '\r', '\n', '\v', '\f':
			return true
		}
		return false
	}
	// Counted before the copy without white space is made.
	text := len(s)
	for _, r := range s {
		if space(r) {
			text--
		}
	}
	if n := base64.RawStdEncoding.DecodedLen(text - strings.Count(s, "=")); n > limit {
		return nil, fmt.Errorf("decodes to %d bytes, more than the %d allowed", n, limit)
	}
	s = strings.Map(func(r rune) rune {
		if space(r) {
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(s, "=")
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad base64: %w", err)
	}
	return b, nil
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
				return nil, fmt.Errorf("bad gzip: expands to more than %d bytes", limit)
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
		return nil, fmt.Errorf("bad gzip: expands to more than %d bytes", limit)
	}
	return out, nil
}
