package main

// Helpers for whole-process tests: the seedkeeper binary is built once per
// test run (go build into a temporary directory) and run against scratch
// roots, so exit codes, messages and the files written are those a person
// or systemd sees.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/buildtest"
	"github.com/seedkeeper/seedkeeper/internal/syncbuf"
	"github.com/seedkeeper/seedkeeper/internal/testseed"
)

// Paths of seedkeeper's state, as the tests look for them under a root.
const (
	statusPath  = agent.StatusPath
	receiptPath = agent.ReceiptPath
	networkDir  = agent.NetworkDir
)

func TestMain(m *testing.M) { buildtest.Main(m) }

// seedkeeperBinary builds the command once and returns its path.
func seedkeeperBinary(t testing.TB) string { return buildtest.Seedkeeper(t) }

// procResult is how a run of the binary ended.
type procResult struct {
	code           int
	stdout, stderr string
}

func (r procResult) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// runBinary runs the built seedkeeper with args and extra environment
// (KEY=VALUE), with NOTIFY_SOCKET and SEEDKEEPER_MDATA cleared unless env
// sets them. A run that takes a minute is killed and fails the test.
func runBinary(t testing.TB, env []string, args ...string) procResult {
	t.Helper()
	return runCommand(t, env, seedkeeperBinary(t), args...)
}

// runCommand runs name (a path or a tool in $PATH) like runBinary.
func runCommand(t testing.TB, env []string, name string, args ...string) procResult {
	t.Helper()
	r, err := execCommand(env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runBinaries runs the built seedkeeper once for each command line, all at
// once, each as runBinary does, and returns how each ended, in order. The
// runs must not depend on one another; a run that waits (a refused
// seedfrom is tried again for seconds) then costs its wait once.
func runBinaries(t testing.TB, env []string, cmds ...[]string) []procResult {
	t.Helper()
	bin := seedkeeperBinary(t)
	out := make([]procResult, len(cmds))
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, args := range cmds {
		wg.Go(func() { out[i], errs[i] = execCommand(env, bin, args...) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// execCommand runs name with args and the environment of runBinary. The
// error says why it did not end on its own: it could not start, or it
// ran for a minute and was killed.
func execCommand(env []string, name string, args ...string) (procResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = testEnv(env)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return procResult{}, fmt.Errorf("%s %q did not finish within a minute\n%s%s", name, args, out.String(), errb.String())
	}
	r := procResult{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			return procResult{}, fmt.Errorf("running %s: %v", name, err)
		}
		r.code = ee.ExitCode()
	}
	return r, nil
}

// testEnv is this process's environment without the variables that would
// make seedkeeper talk to systemd or a real metadata host, plus env.
func testEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", "SEEDKEEPER_MDATA", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID":
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}

// runInProcess runs the command line in this process (seedkeeper ARGS).
func runInProcess(args ...string) procResult {
	var out, errb bytes.Buffer
	code := run(append([]string{"seedkeeper"}, args...), strings.NewReader(""), &out, &errb)
	return procResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// scratchRoot makes a root whose DMI says product, vendor and (when not
// empty) product_uuid.
func scratchRoot(t testing.TB, product, vendor, uuid string) string {
	t.Helper()
	root := t.TempDir()
	dmi := map[string]string{"product_name": product, "sys_vendor": vendor, "product_uuid": uuid}
	for name, v := range dmi {
		if v != "" {
			writeFile(t, filepath.Join(root, "sys/class/dmi/id", name), v+"\n", 0o444)
		}
	}
	return root
}

// A KVM guest as QEMU and Proxmox present it.
const (
	kvmProduct = "Standard PC (i440FX + PIIX, 1996)"
	kvmVendor  = "QEMU"
	kvmUUID    = "0E9F5E21-6C3B-4D7A-9C1E-2B7A6D3F4E51"
)

func writeFile(t testing.TB, path, data string, perm fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyDir copies the regular files of src into dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			writeFile(t, filepath.Join(dst, e.Name()), readFile(t, filepath.Join(src, e.Name())), 0o644)
		}
	}
}

// gunzipTo writes the gzipped fixture testdata/nocloud/NAME.gz to dst.
func gunzipTo(t testing.TB, name, dst string) {
	t.Helper()
	testseed.Gunzip(t, filepath.Join("..", "..", "testdata", "nocloud", name+".gz"), dst)
}

// attachDisk makes the image at img the block device NAME of root, the
// way seedimage.Scan finds devices: /sys/class/block/NAME and /dev/NAME.
func attachDisk(t testing.TB, root, name, img string) {
	t.Helper()
	testseed.Attach(t, root, name, img)
}

// filesUnder lists the regular files under root (relative, sorted).
func filesUnder(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// fileState is a file's bytes, mode and modification time.
type fileState struct {
	data  string
	mode  fs.FileMode
	mtime time.Time
}

func statFile(t testing.TB, path string) fileState {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{readFile(t, path), fi.Mode(), fi.ModTime()}
}

// statusJSON is the part of status.json (and status --json) tests read.
type statusJSON struct {
	Outcome     string `json:"outcome"`
	Error       string `json:"error"`
	Config      string `json:"config"`
	ConfigError string `json:"config_error"`
	Source      string `json:"source"`
	Transport   string `json:"transport"`
	Candidates  []struct {
		Source string `json:"source"`
		Found  bool   `json:"found"`
		Reason string `json:"reason"`
	} `json:"candidates"`
	Identity *struct {
		InstanceID   string `json:"instance_id"`
		ReportedID   string `json:"reported_id"`
		ReportedKind string `json:"reported_kind"`
		Rule         int    `json:"rule"`
		RuleName     string `json:"rule_name"`
		PinnedID     string `json:"pinned_id"`
		Changed      bool   `json:"changed"`
		Explanation  string `json:"explanation"`
	} `json:"identity"`
	Seed *struct {
		Dir      string   `json:"dir"`
		Written  []string `json:"written"`
		Removed  []string `json:"removed"`
		Imported string   `json:"imported"`
		Warnings []string `json:"warnings"`
	} `json:"seed"`
	Network *struct {
		Action    string   `json:"action"`
		Reason    string   `json:"reason"`
		Allowlist string   `json:"allowlist"`
		Owned     []string `json:"owned"`
		Ops       []string `json:"ops"`
		Failed    []string `json:"failed"`
		Rendered  []string `json:"rendered"`
	} `json:"network"`
	Warnings []string `json:"warnings"`
}

// readStatus reads status.json under root.
func readStatus(t testing.TB, root string) statusJSON {
	t.Helper()
	var st statusJSON
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, statusPath))), &st); err != nil {
		t.Fatalf("status.json: %v", err)
	}
	return st
}

// seedPath is a file of the seed handed to cloud-init, under root.
func seedPath(root, name string) string {
	return filepath.Join(root, "var/lib/cloud/seed/nocloud", name)
}

// metaDataID returns the instance-id line's value of the seed's meta-data.
func metaDataID(t testing.TB, root string) string {
	t.Helper()
	for _, l := range strings.Split(readFile(t, seedPath(root, "meta-data")), "\n") {
		if v, ok := strings.CutPrefix(l, "instance-id: "); ok {
			return strings.Trim(v, `"`)
		}
	}
	t.Fatalf("meta-data has no instance-id:\n%s", readFile(t, seedPath(root, "meta-data")))
	return ""
}

// needTool skips the test when a tool is not installed.
func needTool(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: run `sudo make test`, which installs it (scripts/test-deps.sh)", tool)
		}
	}
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a log the code under test writes while the test reads it.
type syncBuffer = syncbuf.Buffer

// notifySocket listens where sd_notify sends, and collects every state
// line it receives.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "sk-notify-") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &notifySocket{path: filepath.Join(dir, "notify")}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { c.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, strings.Split(strings.TrimSpace(string(buf[:n])), "\n")...)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *notifySocket) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

func (s *notifySocket) has(line string) bool { return slices.Contains(s.lines(), line) }
