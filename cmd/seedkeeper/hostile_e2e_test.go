package main

// Whole-process cases for hostile input (SECURITY.md): what the command
// prints and how it ends. What the boot flow writes from hostile metadata
// is tested in process in agent/boot_hostile_linux_test.go.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A meta-data mapping with a key that is not a string
// made fetch --json print nothing and exit 0.
func TestFetchJSONNonStringKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "meta-data"), "instance-id: i-1\nextra: {1: one, true: yes, 2.5: x}\n", 0o644)
	writeFile(t, filepath.Join(dir, "user-data"), "", 0o644)
	r := runBinary(t, nil, "fetch", "--source", "nocloud", "--seed", dir, "--json")
	if r.code != exitOK {
		t.Fatalf("fetch: %v", r)
	}
	var out struct {
		InstanceID string         `json:"instance_id"`
		MetaData   map[string]any `json:"meta_data"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("fetch --json output is not JSON: %v\n%v", err, r)
	}
	if x, _ := out.MetaData["extra"].(map[string]any); out.InstanceID != "i-1" || x["1"] != "one" || x["2.5"] != "x" {
		t.Errorf("fetch --json = %s", r.stdout)
	}
}

// SIGTERM during boot ends it with 128+15, the code boot --help
// documents. Before the documents were bounded, the parse of a 4 MiB
// meta-data took seconds and the signal was ignored until it was done.
// The boot here cannot finish before the signal: it waits, without limit,
// for an mdata host that is down, and the signal goes after it logged
// that wait. The bounds below are generous: they fail only on a boot that
// never waited or ignored the signal, not on a slow machine.
func TestBootEndsOnSIGTERM(t *testing.T) {
	h, transport := smartosHost(t, smartosStore())
	h.Down()
	root := scratchRoot(t, "SmartDC HVM", "Joyent", "")
	cmd := exec.Command(seedkeeperBinary(t), "boot", "--root", root, "--network", "plan")
	cmd.Env = testEnv([]string{"SEEDKEEPER_MDATA=" + transport})
	// Our own pipe, read to its end whenever Wait returns.
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	waiting := make(chan string, 1)
	rest := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stderr)
		var seen strings.Builder
		for {
			line, err := br.ReadString('\n')
			seen.WriteString(line)
			if strings.Contains(line, "metadata host not answering") {
				waiting <- seen.String()
				break
			}
			if err != nil {
				waiting <- ""
				rest <- seen.String()
				return
			}
		}
		b, _ := io.ReadAll(br)
		rest <- string(b)
	}()
	var out string
	select {
	case out = <-waiting:
	case <-time.After(60 * time.Second):
		t.Fatal("boot did not start waiting for the mdata host within 60 s")
	}
	if out == "" {
		t.Fatalf("boot ended without waiting for the mdata host:\n%s", <-rest)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("boot ignored SIGTERM: still running 30 s after it")
	}
	out += <-rest
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) || !strings.Contains(out, "seedkeeper boot: stopped by a signal") {
		t.Fatalf("boot after SIGTERM: %v, want exit %d\n%s", waitErr, 128+int(syscall.SIGTERM), out)
	}
}
