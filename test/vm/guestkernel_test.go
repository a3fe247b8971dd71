package vm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// guestApplyRun selects the tests of netcfg/apply that run inside the
// guest: the ones about stacked links (bonds, VLANs, bridges), which need
// link types this host's kernel may lack. SEEDKEEPER_VM_APPLY_RUN
// overrides it.
var guestApplyRun = "^TestIntegrationStacked"

// guestLinkModules are the modules of every link type those tests make,
// and of the netlink families a netlink.Handle opens (xfrm, netfilter),
// in dependency order (kernel.modulePaths leaves out built-in ones).
var guestLinkModules = []string{
	"xfrm_algo", "xfrm_user", "nfnetlink",
	"veth",
	"tls", "bonding",
	"llc", "stp", "garp", "mrp", "8021q",
	"bridge",
}

// TestIntegrationGuestKernelApply runs netcfg/apply's stacked-link tests
// as root in the guest, whose pinned kernel has bonding, 8021q and bridge:
// the package's test binary is built statically, put into the initramfs
// and run there; its test2json events are read back on the host. A run in
// which no test passes, or any test is skipped, fails: in this kernel
// every link type is there.
func TestIntegrationGuestKernelApply(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	g := needGuest(t)
	run := guestApplyRun
	if s := os.Getenv("SEEDKEEPER_VM_APPLY_RUN"); s != "" {
		run = s
	}
	bin := buildTestBinary(t, "./netcfg/apply")

	m := startVM(t, g, vmConfig{
		modules: guestLinkModules,
		files:   map[string]string{"/skvm/apply.test": bin},
		script: `
run apply /skvm/apply.test -test.run ` + run + ` -test.v=test2json -test.count=1 -test.timeout=100s
`,
	})
	m.waitDone()
	for _, mod := range guestLinkModules {
		if s, ok := m.con.find("error module " + mod); ok {
			t.Errorf("guest: %s", s)
		}
	}
	out := m.stdout("apply")
	code := m.exit("apply")
	res := parseTest2JSON(t, out)
	t.Logf("in the guest kernel, -test.run %s: passed %v, skipped %v, failed %v (exit status %d)", run, res.passed, res.skipped, res.failed, code)
	for _, p := range res.problems(code) {
		t.Error(p)
	}
	noGuestErrors(t, m)
}

// problems says why a run of a test binary proves nothing or failed: a
// failed or skipped test, no test passed, or a bad exit status.
func (r testRun) problems(code int) []string {
	var out []string
	for _, name := range r.failed {
		out = append(out, fmt.Sprintf("%s failed in the guest:\n%s", name, r.output[name]))
	}
	for _, name := range r.skipped {
		out = append(out, fmt.Sprintf("%s skipped in the guest, where every link type exists:\n%s", name, r.output[name]))
	}
	if len(r.passed) == 0 {
		out = append(out, "no test passed in the guest: the run proves nothing")
	}
	if code != 0 && len(r.failed) == 0 {
		out = append(out, fmt.Sprintf("the test binary exited %d with no failed test", code))
	}
	return out
}

// buildTestBinary cross-builds the test binary of pkg (relative to the
// module root), static, for the guest, and returns its path.
func buildTestBinary(t *testing.T, pkg string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg)+".test")
	cmd := exec.Command(gobin, "test", "-c", "-vet=off", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c %s: %v\n%s", pkg, err, b)
	}
	return out
}

// testRun is what a test binary's run reported, by test name (subtests
// as "Parent/sub").
type testRun struct {
	passed, failed, skipped []string
	output                  map[string]string
}

// parseTest2JSON turns a test binary's -test.v=test2json output into
// events with `go tool test2json` and sorts the tests by outcome.
func parseTest2JSON(t *testing.T, out []byte) testRun {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, "tool", "test2json")
	cmd.Stdin = bytes.NewReader(out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	events, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool test2json: %v: %s", err, stderr.String())
	}
	res := testRun{output: map[string]string{}}
	dec := json.NewDecoder(bytes.NewReader(events))
	for {
		var e struct {
			Action string
			Test   string
			Output string
		}
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go tool test2json output: %v", err)
		}
		if e.Test == "" {
			continue
		}
		switch e.Action {
		case "output":
			res.output[e.Test] += e.Output
		case "pass":
			res.passed = append(res.passed, e.Test)
		case "fail":
			res.failed = append(res.failed, e.Test)
		case "skip":
			res.skipped = append(res.skipped, e.Test)
		}
	}
	for _, l := range []*[]string{&res.passed, &res.failed, &res.skipped} {
		slices.Sort(*l)
	}
	return res
}

// The verdict on a guest run must fail a run that proves nothing: no
// test matched, every test skipped, or the binary died.
func TestGuestRunProblems(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool for go tool test2json")
	}
	const (
		pass = "\x16=== RUN   TestA\n\x16--- PASS: TestA (0.01s)\n\x16PASS\n"
		skip = "\x16=== RUN   TestA\n    a_test.go:9: no bonding here\n\x16--- SKIP: TestA (0.00s)\n\x16PASS\n"
		fail = "\x16=== RUN   TestA\n    a_test.go:9: boom\n\x16--- FAIL: TestA (0.00s)\n\x16=== RUN   TestB\n\x16--- PASS: TestB (0.00s)\n\x16FAIL\n"
		none = "testing: warning: no tests to run\n\x16PASS\n"
	)
	for _, tc := range []struct {
		name, out string
		code      int
		want      []string // substrings of the problems, in order
	}{
		{"pass", pass, 0, nil},
		{"skip", skip, 0, []string{"TestA skipped in the guest", "no test passed"}},
		{"fail", fail, 1, []string{"TestA failed in the guest:\n=== RUN   TestA\n    a_test.go:9: boom"}},
		{"none", none, 0, []string{"no test passed"}},
		{"died", pass, 2, []string{"exited 2 with no failed test"}},
		{"empty", "", -1, []string{"no test passed", "exited -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseTest2JSON(t, []byte(tc.out)).problems(tc.code)
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
