package vmtools

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/alloctest"
)

// A guestinfo tool's output was collected whole, however much it printed:
// stdout is kept to the base64 of the largest value and the run fails
// past it; stderr, foreign text shown in errors, is kept to 4 KiB.
func TestExecOutputBounded(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	var err error
	n := alloctest.Bytes(func() {
		_, err = Exec{}.Run(context.Background(), []string{"sh", "-c", "head -c 64000000 /dev/zero"})
	})
	if !errors.Is(err, ErrOutput) {
		t.Errorf("a tool printing 64 MB: err = %v, want ErrOutput", err)
	}
	if n > 3*uint64(maxOutput) {
		t.Errorf("a tool printing 64 MB cost %d bytes", n)
	}
	res, err := Exec{}.Run(context.Background(), []string{"sh", "-c", "head -c 1000000 /dev/zero >&2; exit 3"})
	if err != nil || res.ExitCode != 3 || len(res.Stderr) > maxStderr {
		t.Errorf("a tool printing 1 MB on stderr: %d bytes kept, exit %d, err %v", len(res.Stderr), res.ExitCode, err)
	}
	if _, err := (Exec{}).RunLimit(context.Background(), []string{"sh", "-c", "printf 12345"}, 4); !errors.Is(err, ErrOutput) {
		t.Errorf("5 bytes printed against a limit of 4: err = %v, want ErrOutput", err)
	}
}

// A tool missing from Exec.Path is exec.ErrNotFound, what makes the
// reader try the other tool, even when $PATH has one of that name.
func TestExecPathNotFound(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	_, err := Exec{Path: t.TempDir()}.Run(context.Background(), []string{"sh", "-c", "true"})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("sh looked up in an empty directory: err = %v, want exec.ErrNotFound", err)
	}
	sh, _ := exec.LookPath("sh")
	res, err := Exec{Path: filepath.Dir(sh)}.Run(context.Background(), []string{"sh", "-c", "echo $0"})
	if err != nil || string(res.Stdout) != "sh\n" {
		t.Errorf("sh from %s: %q, %v; want it run as sh", filepath.Dir(sh), res.Stdout, err)
	}
}

// Set refuses what would write another key or break the RPC, before any
// tool runs, and never quotes the value.
func TestSetRefuses(t *testing.T) {
	never := RunnerFunc(func(_ context.Context, argv []string) (Result, error) {
		t.Errorf("unexpected command %q", argv)
		return Result{}, errors.New("not run")
	})
	for _, tc := range []struct{ tool, key, value, want string }{
		{RPCTool, "local ipv4", "x", "a name of 10 bytes that is not a guestinfo key name"},
		{RPCTool, "", "x", "a name of 0 bytes"},
		{RPCTool, "local-ipv4", "192.0.2.1\ninfo-set guestinfo.SECRET x", "control character at byte 10"},
		{"sh", "local-ipv4", "x", `"sh" is not a guestinfo tool`},
	} {
		err := Set(context.Background(), never, tc.tool, tc.key, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Set(%q, %q): %v, want an error saying %q without the value", tc.tool, tc.key, err, tc.want)
		}
	}
}

// A tool that exits non-zero is a *ToolError with its exit status and
// stderr, and a Command without the value.
func TestSetToolFails(t *testing.T) {
	fail := RunnerFunc(func(context.Context, []string) (Result, error) {
		return Result{ExitCode: 1, Stderr: []byte("Permission denied\r\n")}, nil
	})
	err := Set(context.Background(), fail, VMToolsd, "local-ipv4", "192.0.2.1")
	var te *ToolError
	if !errors.As(err, &te) || te.ExitCode != 1 || te.Stderr != "Permission denied" || te.Command != "info-set guestinfo.local-ipv4" {
		t.Fatalf("err = %#v, want a ToolError for the info-set, exit 1, the tool's stderr", err)
	}
	if got, want := err.Error(), `vmtoolsd "info-set guestinfo.local-ipv4": exit status 1: Permission denied`; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
}

// Set sends the RPC as cloud-init does: one argument to vmware-rpctool,
// after --cmd to vmtoolsd; an empty value as one space.
func ExampleSet() {
	show := RunnerFunc(func(_ context.Context, argv []string) (Result, error) {
		fmt.Printf("%q\n", argv)
		return Result{}, nil
	})
	ctx := context.Background()
	_ = Set(ctx, show, RPCTool, "local-ipv4", "192.0.2.10")
	_ = Set(ctx, show, VMToolsd, "local-ipv6", "2001:db8::10")
	_ = Set(ctx, show, RPCTool, "metadata.encoding", "")
	// Output:
	// ["vmware-rpctool" "info-set guestinfo.local-ipv4 192.0.2.10"]
	// ["vmtoolsd" "--cmd" "info-set guestinfo.local-ipv6 2001:db8::10"]
	// ["vmware-rpctool" "info-set guestinfo.metadata.encoding  "]
}

// The flag is read as open-vm-tools reads it: by line, the last matching
// line winning, lower-case true/false only, a comment line not read.
func TestCustomizationFlag(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "",
		"disable_vmware_customization: false\n": "false",
		"disable_vmware_customization: false\ndisable_vmware_customization: true\n":   "true",
		"disable_vmware_customization: true\n# disable_vmware_customization: false\n": "true",
		"disable_vmware_customization: False\n":                                       "",
		"datasource: {}\n  disable_vmware_customization :  false  # hand-over\n":      "false",
	} {
		if got := CustomizationFlag([]byte(in)); got != want {
			t.Errorf("CustomizationFlag(%q) = %q, want %q", in, got, want)
		}
	}
}
