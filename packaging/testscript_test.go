package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo stands in for the go command in TestMakeTestScript. It logs each
// call, lists one ordinary package and test/vm, and for the two go tests
// that run at once: test/vm's records whether its gate file exists as it
// starts, waits for the gate to be removed, and exits $VMRC; the other
// packages' waits until test/vm's has started (so they run side by side)
// and exits $RESTRC. Every wait gives up after 30 s.
const fakeGo = `#!/bin/sh
echo "$*|gate=${SEEDKEEPER_VM_GATE:-}" >>"$FAKEDIR/calls"
wait_for() { i=0; while [ $i -lt 300 ] && ! eval "$1"; do sleep 0.1; i=$((i+1)); done; eval "$1"; }
case "$1 $*" in
list*) echo example.com/m/a; echo example.com/m/test/vm ;;
*"-run ^\$ ./test/vm") ;;
*./test/vm)
	[ -e "$SEEDKEEPER_VM_GATE" ] && echo gated >"$FAKEDIR/vm-start" || echo open >"$FAKEDIR/vm-start"
	wait_for '[ ! -e "$SEEDKEEPER_VM_GATE" ]' || { echo "gate never removed"; exit 9; }
	echo VMOUT; exit "$VMRC" ;;
*example.com/m/a)
	wait_for '[ -e "$FAKEDIR/vm-start" ]' || { echo "test/vm not started"; exit 8; }
	echo RESTOUT; exit "$RESTRC" ;;
*) echo "unexpected: $*"; exit 7 ;;
esac
`

// TestMakeTestScript runs scripts/test.sh (make test's runner) with a
// fake go command: test/vm runs beside the other packages, gated to one
// guest until they are done; its output comes after theirs; the flags
// reach every go test; the exit status is non-zero, with a message naming
// the failed part, when either fails; no gate file is left behind.
func TestMakeTestScript(t *testing.T) {
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, vmrc, restrc, want string
		fail                     bool
	}{
		{"pass", "0", "0", "", false},
		{"vm fails", "1", "0", "the other packages exit 0, test/vm exit 1", true},
		{"others fail", "0", "1", "the other packages exit 1, test/vm exit 0", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			goBin := filepath.Join(dir, "go")
			if err := os.WriteFile(goBin, []byte(fakeGo), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", script, "-race", "-count=1")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GO="+goBin, "FAKEDIR="+dir, "VMRC="+c.vmrc, "RESTRC="+c.restrc, "TMPDIR="+dir)
			b, err := cmd.CombinedOutput()
			out := string(b)
			if (err != nil) != c.fail {
				t.Fatalf("exit: %v; want failure %v\n%s", err, c.fail, out)
			}
			if c.fail && !strings.Contains(out, "make test: failed ("+c.want+")") {
				t.Errorf("output does not name the failed part (%s):\n%s", c.want, out)
			}
			rest, vm := strings.Index(out, "RESTOUT"), strings.Index(out, "VMOUT")
			if rest < 0 || vm < rest {
				t.Errorf("want the other packages' output, then test/vm's:\n%s", out)
			}
			start, err := os.ReadFile(filepath.Join(dir, "vm-start"))
			if err != nil || string(start) != "gated\n" {
				t.Errorf("test/vm did not start with its gate file in place (%q, %v)", start, err)
			}
			calls, err := os.ReadFile(filepath.Join(dir, "calls"))
			if err != nil {
				t.Fatal(err)
			}
			var tests int
			for _, l := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
				args, gate, _ := strings.Cut(l, "|gate=")
				if !strings.HasPrefix(args, "test ") {
					continue
				}
				tests++
				if !strings.HasPrefix(args, "test -race -count=1 ") {
					t.Errorf("go %s: the flags are not passed on", args)
				}
				if gated := strings.HasSuffix(args, " ./test/vm") && !strings.Contains(args, "-run"); gated != (gate != "") {
					t.Errorf("go %s: gate %q", args, gate)
				} else if gated {
					if _, err := os.Stat(gate); !os.IsNotExist(err) {
						t.Errorf("the gate file is left behind (%v)", err)
					}
				}
			}
			if tests != 3 {
				t.Errorf("%d go test runs; want 3 (test/vm's build, test/vm, the others)\n%s", tests, calls)
			}
			if ents, _ := filepath.Glob(filepath.Join(dir, "tmp.*")); len(ents) != 0 {
				t.Errorf("temporary files left behind: %v", ents)
			}
		})
	}
}
