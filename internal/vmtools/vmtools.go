// Package vmtools runs open-vm-tools' guestinfo tools, vmware-rpctool and
// vmtoolsd, for the VMware source: one command per RPC, bounded in time
// and in what it may print, found in $PATH (or a directory list a test
// gives), with the failure of a tool as one error type. It is seedkeeper's
// own plumbing: datasource reads and writes guestinfo through it, and
// tests stand in for the tools with a Runner.
package vmtools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The guestinfo tools of open-vm-tools.
const (
	RPCTool  = "vmware-rpctool"
	VMToolsd = "vmtoolsd"
)

// DefaultTimeout bounds each run of a tool when Exec.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Result is what one command printed and how it exited.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Runner runs a command given as argv. It returns a nil error when the
// command ran, whatever its exit code. When the command does not exist,
// the error must wrap exec.ErrNotFound, so the caller can try the other
// tool; any other error (timeout, signal) is a failure of that tool.
type Runner interface {
	Run(ctx context.Context, argv []string) (Result, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, argv []string) (Result, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, argv []string) (Result, error) {
	return f(ctx, argv)
}

// Exec runs commands with os/exec. The zero value looks commands up in
// $PATH, inherits this process's environment and gives each run
// DefaultTimeout.
type Exec struct {
	// Timeout bounds one run; 0 means DefaultTimeout.
	Timeout time.Duration
	// Path is the list of directories searched for the command, in
	// $PATH syntax; "" means $PATH.
	Path string
	// Env is the command's environment; nil means this process's.
	Env []string
}

// MaxValue is the largest guestinfo value the tools are run to read,
// decoded: the bound of one seed file, which user-data and vendor-data
// become. Exec.Run keeps what a tool prints for it (OutputFor).
const MaxValue = 16 << 20

// maxOutput bounds what one run of Exec.Run may print: the base64 of the
// largest value, wrapped in lines. Output past it is not kept, and the
// run fails.
var maxOutput = OutputFor(MaxValue)

// OutputFor is what a tool may print for a value that decodes to at most
// limit bytes (a gzip header and base64 lines of 76 included).
func OutputFor(limit int) int { return (limit+1024)/3*4*77/76 + 4096 }

// maxStderr is how much of a tool's stderr is kept: it is foreign text,
// shown in errors; the rest is dropped as it arrives.
const maxStderr = 4096

// ErrOutput is wrapped by the error of a run that printed more on stdout
// than it may.
var ErrOutput = errors.New("output over the limit")

// Run runs argv and collects its output, at most OutputFor(MaxValue)
// bytes of stdout. A command that is killed or cannot be started is an
// error; a non-zero exit is not.
func (r Exec) Run(ctx context.Context, argv []string) (Result, error) {
	return r.RunLimit(ctx, argv, maxOutput)
}

// RunLimit is Run keeping at most maxOut bytes of stdout: a run that
// prints more fails with an error wrapping ErrOutput.
func (r Exec) RunLimit(ctx context.Context, argv []string, maxOut int) (Result, error) {
	if len(argv) == 0 {
		return Result{}, errors.New("empty command")
	}
	prog, err := r.lookPath(argv[0])
	if err != nil {
		return Result{}, err
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	stdout := &cappedBuffer{max: maxOut}
	stderr := &cappedBuffer{max: maxStderr}
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = r.Env
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// A child that keeps the pipes open must not hold us past the deadline.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	res := Result{Stdout: stdout.b, Stderr: stderr.b}
	var exit *exec.ExitError
	switch {
	case stdout.over:
		return Result{}, fmt.Errorf("%s: %w: printed more than %d bytes", argv[0], ErrOutput, maxOut)
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
func (r Exec) lookPath(name string) (string, error) {
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
// exited non-zero (for a read, with something other than "No value
// found").
type ToolError struct {
	Tool     string // RPCTool or VMToolsd
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

// Argv is the command that sends rpc through tool: one argument to
// vmware-rpctool, after --cmd to vmtoolsd, as cloud-init sends it.
func Argv(tool, rpc string) []string {
	if tool == VMToolsd {
		return []string{VMToolsd, "--cmd", rpc}
	}
	return []string{tool, rpc}
}

// keyName is what a guestinfo key name may look like; a space would make
// info-set write a different key.
var keyName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// ValidKey reports whether s may be a guestinfo key name (without the
// "guestinfo." prefix).
func ValidKey(s string) bool { return keyName.MatchString(s) }

// Set writes guestinfo.key through tool (RPCTool or VMToolsd) with r (nil:
// Exec{}), as cloud-init does: one "info-set guestinfo.KEY VALUE" RPC, an
// empty value sent as one space, because the VMX cannot hold an empty
// string. A key that is not a guestinfo key name, or a value with a
// control character, is refused before any tool runs; a tool that fails
// is a *ToolError, whose Command leaves the value out.
func Set(ctx context.Context, r Runner, tool, key, value string) error {
	if tool != RPCTool && tool != VMToolsd {
		return fmt.Errorf("setting guestinfo.%s: %q is not a guestinfo tool", key, tool)
	}
	if !ValidKey(key) {
		return fmt.Errorf("setting a guestinfo key: a name of %d bytes that is not a guestinfo key name", len(key))
	}
	if i := strings.IndexFunc(value, func(c rune) bool { return c < 0x20 || c == 0x7f }); i >= 0 {
		return fmt.Errorf("setting guestinfo.%s: control character at byte %d of the value", key, i+1)
	}
	if r == nil {
		r = Exec{}
	}
	if value == "" {
		value = " "
	}
	res, err := r.Run(ctx, Argv(tool, "info-set guestinfo."+key+" "+value))
	if err != nil {
		return &ToolError{Tool: tool, Command: "info-set guestinfo." + key, Err: err}
	}
	if res.ExitCode != 0 {
		return &ToolError{Tool: tool, Command: "info-set guestinfo." + key, ExitCode: res.ExitCode,
			Stderr: strings.TrimRight(string(res.Stderr), "\r\n")}
	}
	return nil
}

// customizationFlagLine is how open-vm-tools finds
// disable_vmware_customization in cloud-init's configuration: a line
// match, not YAML. It is a POSIX extended expression matched against the
// line with its newline: "." matches a newline too ((?s)), and Go's \s is
// the C library's [[:space:]] but for \v; "true" and "false" only, in
// lower case.
var customizationFlagLine = regexp.MustCompile(`(?s)^\s*disable_vmware_customization\s*:\s*(true|false)\s*(\s+#.*)?$`)

// CustomizationFlag is disable_vmware_customization in one file of
// cloud-init's configuration (b) as open-vm-tools reads it: the last
// matching line wins; "true", "false", or "" when no line sets it.
func CustomizationFlag(b []byte) string {
	v := ""
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if m := customizationFlagLine.FindSubmatch(line); m != nil {
			v = string(m[1])
		}
	}
	return v
}

// CustomizationFlagLine reports whether line (with its newline) is one
// open-vm-tools takes as setting disable_vmware_customization.
func CustomizationFlagLine(line string) bool { return customizationFlagLine.MatchString(line) }
