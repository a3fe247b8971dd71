package datasource

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
)

// stubVMX is a VM's guestinfo served by the stub vmware-rpctool and
// vmtoolsd scripts in testdata/vmware, run through the real vmtools.Exec.
type stubVMX struct {
	t    testing.TB
	dir  string // guestinfo.KEY files
	bin  string // the stub tools installed
	log  string // the stubs' call log
	root string
	env  []string
}

const stubProductUUID = "4213ABCD-1234-5678-9ABC-DEF012345678"

// newStubVMX installs the named tools (ToolRPCTool, ToolVMToolsd) in a
// fresh bin directory and makes a root whose DMI says VMware.
func newStubVMX(t testing.TB, tools ...string) *stubVMX {
	t.Helper()
	base := t.TempDir()
	s := &stubVMX{
		t:    t,
		dir:  filepath.Join(base, "guestinfo"),
		bin:  filepath.Join(base, "bin"),
		log:  filepath.Join(base, "calls.log"),
		root: filepath.Join(base, "root"),
	}
	for _, d := range []string{s.dir, s.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range append(tools, "guestinfo-stub.sh") {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "vmware", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.bin, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.dmi("product_name", "VMware7,1\n")
	s.dmi("product_uuid", stubProductUUID+"\n")
	s.env = append(os.Environ(), "GUESTINFO_DIR="+s.dir, "GUESTINFO_LOG="+s.log)
	return s
}

func (s *stubVMX) dmi(name, val string) {
	p := sysroot.Root(s.root).Path("/sys/class/dmi/id/" + name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(val), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// set puts a guestinfo key (without the "guestinfo." prefix) in the VMX.
func (s *stubVMX) set(key, val string) {
	if err := os.WriteFile(filepath.Join(s.dir, "guestinfo."+key), []byte(val), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// get returns what the VMX holds for key now.
func (s *stubVMX) get(key string) string {
	b, err := os.ReadFile(filepath.Join(s.dir, "guestinfo."+key))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// calls returns the argv of every tool run so far, "|"-joined.
func (s *stubVMX) calls() []string {
	b, err := os.ReadFile(s.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (s *stubVMX) runner() vmtools.Exec {
	return vmtools.Exec{Path: s.bin, Env: s.env}
}

func (s *stubVMX) options() Options {
	return Options{Root: s.root, VMware: VMwareOptions{
		runner: s.runner(),
		Getenv: func(string) string { return "" },
	}}
}

// foundVMware is detectVMware's answer, the environment read through
// os.Getenv.
func foundVMware(root string) (bool, string) {
	d, err := detectVMware(context.Background(), Options{Root: root})
	if err != nil {
		panic(err) // only a cancelled context makes it fail
	}
	return d.Found, d.Reason
}

func (s *stubVMX) read() (*Metadata, error) {
	s.t.Helper()
	return readVMware(context.Background(), s.options())
}

func (s *stubVMX) mustRead() *Metadata {
	s.t.Helper()
	md, err := s.read()
	if err != nil {
		s.t.Fatalf("readVMware: %v", err)
	}
	return md
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func gzb64(s string) string { return base64.StdEncoding.EncodeToString(gzipped(s)) }

// gzipped is s as one gzip member.
func gzipped(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}

// b64bytes is b in standard base64, as the bytes a guestinfo value holds.
func b64bytes(b []byte) []byte {
	return base64.StdEncoding.AppendEncode(nil, b)
}

// logBuffer collects slog output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// noRunner fails the test when any tool is run.
func noRunner(t *testing.T) vmtools.Runner {
	return vmtools.RunnerFunc(func(_ context.Context, argv []string) (vmtools.Result, error) {
		t.Errorf("unexpected command %q", argv)
		return vmtools.Result{}, os.ErrInvalid
	})
}

func discardLog() *slog.Logger { return (&Options{}).logger() }
