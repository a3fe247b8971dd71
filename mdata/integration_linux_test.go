package mdata_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// quick timeouts keep the fault tests short; the behaviour under test does
// not depend on their size.
var quick = mdata.Timeouts{
	Drain: 30 * time.Millisecond, Probe: 200 * time.Millisecond, Negotiate: 500 * time.Millisecond,
	Read: 400 * time.Millisecond, Write: 400 * time.Millisecond, V1: 400 * time.Millisecond,
}

func startPTY(t testing.TB, st *mdatatest.Store) (*mdatatest.Host, string) {
	t.Helper()
	h := mdatatest.NewHost(st)
	p, err := h.StartPTY()
	if err != nil {
		t.Skipf("no pty here (%v); ptys need /dev/ptmx", err)
	}
	t.Cleanup(func() { h.Close() })
	return h, p.Path()
}

// Every fault mode through a real pty: the right value once the fault has
// passed, or, for faults that never pass, the deadline — never a wrong
// value and never a hang.
func TestIntegrationFaultModesPTY(t *testing.T) {
	testenv.Integration(t)
	want := mdatatest.SampleUUID
	for _, m := range mdatatest.Modes() {
		for _, count := range []int{2, 0} {
			f := mdatatest.Fault{Mode: m, Count: count}
			t.Run(f.String(), func(t *testing.T) {
				t.Parallel()
				h, path := startPTY(t, mdatatest.Default())
				h.SetFault(f)
				c := mdata.New(mdata.Serial(path), &mdata.Options{Timeouts: quick})
				defer c.Close()
				// A fault that passes must let the call succeed however
				// loaded the machine is; one that never passes must end
				// at the deadline.
				deadline := 30 * time.Second
				if count == 0 {
					deadline = 5 * time.Second
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				v, err := c.Get(ctx, "sdc:uuid")
				if took := time.Since(start); took > deadline+5*time.Second {
					t.Errorf("returned %s after a %s deadline", took, deadline)
				}
				switch {
				case err == nil && string(v) != want:
					t.Fatalf("WRONG VALUE %q (want %q)", v, want)
				case err == nil:
				case errors.Is(err, mdata.ErrUnavailable) && count == 0 && (persistent(m) || m == mdatatest.Late):
					// A host that never answers properly (here: Late's 1s is
					// longer than these tests' 400ms read timeout): the
					// deadline is the answer.
				default:
					t.Fatalf("err = %v\n%s", err, h.TranscriptString())
				}
			})
		}
	}
}

// persistent reports whether a fault, applied for good, keeps every answer
// from getting through (so the deadline must end the call). A stale line
// before every probe's answer restarts every handshake; a stale "invalid
// command" does not, as NEGOTIATE skips the real one.
func persistent(m mdatatest.Mode) bool {
	switch m {
	case mdatatest.Silent, mdatatest.GarbagePrefix, mdatatest.Drop, mdatatest.FailProbe,
		mdatatest.Trickle, mdatatest.StaleV2OK, mdatatest.KilledMidReply:
		return true
	}
	return false
}

// cloud-init LP #1667735: the host agent is down when the client starts
// (a host reboot); it comes up seconds later, and the pending request must
// then complete, promptly, with the right value.
func TestIntegrationLP1667735HostComesBack(t *testing.T) {
	testenv.Integration(t)
	h, path := startPTY(t, mdatatest.Default())
	h.Down()
	c := mdata.New(mdata.Serial(path), nil) // the default timeouts
	defer c.Close()
	type res struct {
		v   []byte
		err error
		at  time.Time
	}
	done := make(chan res, 1)
	go func() {
		v, err := c.Get(context.Background(), "sdc:uuid")
		done <- res{v, err, time.Now()}
	}()
	if err := h.Wait(ctxFor(t, 10*time.Second), func(s mdatatest.Stats) bool { return s.Discarded >= 3 }); err != nil {
		t.Fatalf("client sent nothing while the host was down: %v", err)
	}
	select {
	case r := <-done:
		t.Fatalf("Get returned while the host was down: %q, %v", r.v, r.err)
	case <-time.After(2 * time.Second):
	}
	up := time.Now()
	h.Up()
	select {
	case r := <-done:
		if r.err != nil || string(r.v) != mdatatest.SampleUUID {
			t.Fatalf("after the host came back: %q, %v", r.v, r.err)
		}
		t.Logf("answered %s after the host came back", r.at.Sub(up).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30s after the host came back")
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Several goroutines with their own clients share one port: the in-process
// mutex and the port lock keep their frames apart, so the host sees no
// malformed or unknown line and every client gets its own values.
func TestIntegrationConcurrentClientsOnePort(t *testing.T) {
	testenv.Integration(t)
	st := mdatatest.Default()
	for i := range 4 {
		st.SetString(fmt.Sprintf("k%d", i), strings.Repeat(fmt.Sprint(i), 3000))
	}
	h, path := startPTY(t, st)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				c := mdata.New(mdata.Serial(path), &mdata.Options{Timeouts: quick})
				v, err := c.Get(ctxFor(t, 20*time.Second), fmt.Sprintf("k%d", i))
				c.Close()
				if err != nil {
					errs <- err
					return
				}
				if want := strings.Repeat(fmt.Sprint(i), 3000); string(v) != want {
					errs <- fmt.Errorf("client %d got %d bytes of another value", i, len(v))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := h.Stats(); s.Malformed != 0 || s.Unknown != 0 {
		t.Errorf("host saw %d malformed frames and %d unknown lines: frames interleaved\n%s", s.Malformed, s.Unknown, h.TranscriptString())
	}
}

// A process holding the classic fcntl lock that mdata-client and cloud-init
// take (F_SETLKW, whole file) keeps us off the port until it lets go.
func TestIntegrationLockHolderBlocks(t *testing.T) {
	testenv.Integration(t)
	h, path := startPTY(t, mdatatest.Default())
	release := holdLock(t, path)

	c := mdata.New(mdata.Serial(path), &mdata.Options{Timeouts: quick})
	defer c.Close()
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctxFor(t, 30*time.Second), "sdc:uuid"); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("Get returned while another process held the lock: %v", err)
	case <-time.After(time.Second):
	}
	if s := h.Stats(); s.Probes != 0 || s.BytesIn != 0 {
		t.Fatalf("we wrote to the port while it was locked: %+v", s)
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Get did not proceed after the lock was released")
	}
}

// A client with Yield keeps its session but lets go of the port between
// requests: another client gets the port while it stays open, and its
// next request needs no new handshake.
func TestIntegrationYieldKeepsSessionReleasesPort(t *testing.T) {
	testenv.Integration(t)
	h, path := startPTY(t, mdatatest.Default())
	a := mdata.New(mdata.Serial(path), &mdata.Options{Timeouts: quick, Yield: true})
	defer a.Close()
	if v, err := a.Get(ctxFor(t, 20*time.Second), "sdc:uuid"); err != nil || string(v) != mdatatest.SampleUUID {
		t.Fatalf("first Get = %q, %v", v, err)
	}
	// Another client in this process, and another process (holding the
	// classic lock, as mdata-client does), get the port meanwhile.
	b := mdata.New(mdata.Serial(path), &mdata.Options{Timeouts: quick})
	if v, err := b.Get(ctxFor(t, 10*time.Second), "hostname"); err != nil || len(v) == 0 {
		t.Fatalf("the other client's Get while the first is open = %q, %v", v, err)
	}
	b.Close()
	holdLock(t, path)()
	if v, err := a.Get(ctxFor(t, 20*time.Second), "sdc:uuid"); err != nil || string(v) != mdatatest.SampleUUID {
		t.Fatalf("second Get = %q, %v", v, err)
	}
	if st := h.Stats(); st.Negotiations != 2 || st.Requests["GET"] != 3 {
		t.Errorf("stats %+v, want 2 handshakes (one per client) for 3 GETs", st)
	}
}

// holdLock starts a child process that holds the classic fcntl lock on
// path (as mdata-client does) and returns once it holds it; release makes
// the child exit, which drops the lock.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	holder := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	holder.Env = append(os.Environ(), "MDATA_HOLD_LOCK="+path)
	stdin, _ := holder.StdinPipe()
	out := &syncBuffer{}
	holder.Stdout = out
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { holder.Wait(); close(exited) }()
	for !strings.Contains(out.String(), "locked") {
		select {
		case <-exited:
			t.Fatal("lock holder exited before taking the lock")
		case <-time.After(10 * time.Millisecond):
		}
	}
	var once sync.Once
	release = func() { once.Do(func() { stdin.Close(); <-exited }) }
	t.Cleanup(release)
	return release
}

// TestHelperHoldLock is run as a child process by TestIntegrationLockHolderBlocks.
func TestHelperHoldLock(t *testing.T) {
	path := os.Getenv("MDATA_HOLD_LOCK")
	if path == "" {
		t.Skip("helper process only")
	}
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLKW, &lk); err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	os.Stdin.Read(make([]byte, 1))
	os.Exit(0)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Values of every size and content come back byte for byte.
func TestIntegrationBinarySafeValuesPTY(t *testing.T) {
	testenv.Integration(t)
	st := mdatatest.Default()
	vals := map[string][]byte{
		"empty": {}, "one": {'x'}, "nul": []byte("a\x00b\x00"), "latin1": {0xff, 0xfe, 'x', 0x80},
		"64k": bytes.Repeat([]byte("0123456789abcdef"), 4096),
		"4m":  bytes.Repeat([]byte{0, 1, 2, 3, 0xff, '\n', '.'}, 4<<20/7),
	}
	for k, v := range vals {
		st.Set(k, v)
	}
	_, path := startPTY(t, st)
	c := mdata.New(mdata.Serial(path), nil)
	defer c.Close()
	for k, want := range vals {
		got, err := c.Get(ctxFor(t, 60*time.Second), k)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: got %d bytes (err %v), want %d bytes exactly", k, len(got), err, len(want))
		}
	}
	// And through PUT.
	big := bytes.Repeat([]byte{0, 0xff, '\n'}, 100000)
	if err := c.Put(ctxFor(t, 60*time.Second), "put-big", big); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Get("put-big"); !bytes.Equal(got, big) {
		t.Errorf("host stored %d bytes, want %d exactly", len(got), len(big))
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if toolsOnce.dir != "" {
		os.RemoveAll(toolsOnce.dir)
	}
	buildtest.Cleanup()
	os.Exit(code)
}

// buildTools builds the multi-call binary once (buildtest.Seedkeeper) and
// returns a directory with the mdata-get link to it and the others.
var toolsOnce struct {
	sync.Once
	dir string
	err error
}

func buildTools(t testing.TB) string {
	t.Helper()
	bin := buildtest.Seedkeeper(t)
	toolsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "seedkeeper-tools-")
		if err != nil {
			toolsOnce.err = err
			return
		}
		toolsOnce.dir = dir
		for _, tool := range []string{"mdata-get", "mdata-put", "mdata-delete", "mdata-list"} {
			if err := os.Symlink(bin, filepath.Join(dir, tool)); err != nil {
				toolsOnce.err = err
				return
			}
		}
	})
	if toolsOnce.err != nil {
		t.Fatal(toolsOnce.err)
	}
	return toolsOnce.dir
}

type toolRun struct {
	stdout, stderr string
	code           int
}

func runTool(t testing.TB, dir, path, stdin string, timeout time.Duration, args ...string) toolRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, args[0]), args[1:]...)
	cmd.Env = append(os.Environ(), "SEEDKEEPER_MDATA=serial:"+path)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v hung past %s; stderr:\n%s", args, timeout, e.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return toolRun{o.String(), e.String(), code}
}

// The built tools behave like the reference C tools: output, messages and
// exit codes (docs/protocol.md, "The tools' interface").
func TestIntegrationToolsLikeReference(t *testing.T) {
	testenv.Integration(t)
	dir := buildTools(t)
	st := mdatatest.Default()
	st.SetString("noeol", "abc")
	st.SetString("eol", "abc\n")
	st.SetString("blank", "")
	h, path := startPTY(t, st)
	for _, tc := range []struct {
		args   []string
		stdin  string
		out    string
		errOut string
		code   int
	}{
		{args: []string{"mdata-get", "sdc:uuid"}, out: mdatatest.SampleUUID + "\n"},
		{args: []string{"mdata-get", "noeol"}, out: "abc\n"},
		{args: []string{"mdata-get", "eol"}, out: "abc\n"},
		{args: []string{"mdata-get", "blank"}, out: "\n"},
		{args: []string{"mdata-get", "nope"}, errOut: "No metadata for 'nope'\n", code: 1},
		{args: []string{"mdata-get"}, errOut: "mdata-get: Usage: DIR/mdata-get <keyname>\n", code: 3},
		{args: []string{"mdata-put", "k", "v1"}},
		{args: []string{"mdata-get", "k"}, out: "v1\n"},
		{args: []string{"mdata-put", "k"}, stdin: "from\x00stdin\n"},
		{args: []string{"mdata-get", "k"}, out: "from\x00stdin\n"},
		{args: []string{"mdata-put", "k"}, stdin: "", errOut: "Error putting metadata for key 'k': Invalid PUT Request\n", code: 2},
		{args: []string{"mdata-put", "sdc:x", "v"}, errOut: "Error putting metadata for key 'sdc:x': Cannot update the \"sdc\" Namespace.\n", code: 2},
		{args: []string{"mdata-put"}, errOut: "mdata-put: Usage: DIR/mdata-put <keyname> [ <value> ]\n", code: 3},
		{args: []string{"mdata-delete", "k"}},
		{args: []string{"mdata-delete", "never-was"}},
		{args: []string{"mdata-delete", "sdc:uuid"}, errOut: "Error deleting metadata key 'sdc:uuid': Cannot update the \"sdc\" Namespace.\n", code: 2},
		{args: []string{"mdata-get", "k"}, errOut: "No metadata for 'k'\n", code: 1},
		{args: []string{"mdata-get", "--", "-t"}, errOut: "No metadata for '-t'\n", code: 1},
	} {
		r := runTool(t, dir, path, tc.stdin, 60*time.Second, tc.args...)
		errOut := strings.ReplaceAll(tc.errOut, "DIR/", dir+"/")
		if r.stdout != tc.out || r.stderr != errOut || r.code != tc.code {
			t.Errorf("%q: got stdout %q stderr %q exit %d\n want stdout %q stderr %q exit %d",
				tc.args, r.stdout, r.stderr, r.code, tc.out, errOut, tc.code)
		}
	}
	r := runTool(t, dir, path, "", 60*time.Second, "mdata-list")
	want := strings.Join(st.Keys(), "\n") + "\n"
	if r.stdout != want || r.code != 0 {
		t.Errorf("mdata-list: %q exit %d, want %q", r.stdout, r.code, want)
	}

	// A V1 host: GET and KEYS work, PUT and DELETE are refused.
	h.SetFault(mdatatest.Fault{Mode: mdatatest.V1Only})
	for _, tc := range []struct {
		args   []string
		out    string
		errOut string
		code   int
	}{
		{[]string{"mdata-get", "sdc:uuid"}, mdatatest.SampleUUID + "\n", "", 0},
		{[]string{"mdata-put", "k", "v"}, "", "ERROR: host does not support PUT\n", 2},
		{[]string{"mdata-delete", "k"}, "", "ERROR: host does not support DELETE\n", 2},
	} {
		r := runTool(t, dir, path, "", 60*time.Second, tc.args...)
		if r.stdout != tc.out || r.stderr != tc.errOut || r.code != tc.code {
			t.Errorf("V1 %q: got %q %q %d, want %q %q %d", tc.args, r.stdout, r.stderr, r.code, tc.out, tc.errOut, tc.code)
		}
	}
}

// The built mdata-get against every fault mode: the right value when the
// fault passes, exit 10 with --timeout when it never does; never a wrong
// value, never a hang.
func TestIntegrationToolFaultModes(t *testing.T) {
	testenv.Integration(t)
	dir := buildTools(t)
	for _, m := range mdatatest.Modes() {
		for _, count := range []int{1, 0} {
			f := mdatatest.Fault{Mode: m, Count: count}
			if count == 0 && !persistent(m) && m != mdatatest.Normal {
				continue
			}
			t.Run(f.String(), func(t *testing.T) {
				t.Parallel()
				h, path := startPTY(t, mdatatest.Default())
				h.SetFault(f)
				r := runTool(t, dir, path, "", 40*time.Second, "mdata-get", "--timeout", "12s", "sdc:uuid")
				switch {
				case r.code == 0 && r.stdout != mdatatest.SampleUUID+"\n":
					t.Fatalf("WRONG VALUE %q", r.stdout)
				case r.code == 0:
				case r.code == 10 && count == 0:
					if !strings.Contains(r.stderr, "ERROR: metadata service unavailable") {
						t.Errorf("exit 10 with stderr %q", r.stderr)
					}
				default:
					t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
				}
			})
		}
	}
}

// LP #1667735 with the built tool: started while the host is down, it
// completes once the host is back.
func TestIntegrationToolLP1667735(t *testing.T) {
	testenv.Integration(t)
	dir := buildTools(t)
	h, path := startPTY(t, mdatatest.Default())
	h.DownFor(3 * time.Second)
	r := runTool(t, dir, path, "", 60*time.Second, "mdata-get", "sdc:uuid")
	if r.code != 0 || r.stdout != mdatatest.SampleUUID+"\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "waiting for the metadata host") {
		t.Errorf("no progress line while waiting; stderr %q", r.stderr)
	}
}

// Two processes and several goroutines on one port: nothing interleaves.
func TestIntegrationTwoProcessesAndGoroutines(t *testing.T) {
	testenv.Integration(t)
	dir := buildTools(t)
	h, path := startPTY(t, mdatatest.Default())
	var wg sync.WaitGroup
	fails := make(chan string, 100)
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				r := runTool(t, dir, path, "", 60*time.Second, "mdata-get", "sdc:hostname")
				if r.code != 0 || r.stdout != "web01\n" {
					fails <- fmt.Sprintf("process %d: %q %q %d", p, r.stdout, r.stderr, r.code)
				}
			}
		}()
	}
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := mdata.New(mdata.Serial(path), nil)
			defer c.Close()
			for range 10 {
				v, err := c.Get(ctxFor(t, 60*time.Second), "sdc:uuid")
				if err != nil || string(v) != mdatatest.SampleUUID {
					fails <- fmt.Sprintf("goroutine %d: %q %v", g, v, err)
				}
			}
		}()
	}
	wg.Wait()
	close(fails)
	for f := range fails {
		t.Error(f)
	}
	if s := h.Stats(); s.Malformed != 0 || s.Unknown != 0 {
		t.Errorf("host saw %d malformed frames and %d unknown lines", s.Malformed, s.Unknown)
	}
}

// A host that answers the probe and NEGOTIATE and then stops reading must
// not hold a PUT past its deadline: a write blocked in the kernel cannot be
// interrupted by closing the port, so writes go through a non-blocking
// descriptor with the deadline.
func TestIntegrationWriteHonoursDeadline(t *testing.T) {
	testenv.Integration(t)
	p, err := mdatatest.NewPTY()
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	defer p.Close()
	go func() {
		// Answer the handshake of the first session, then read nothing.
		buf := make([]byte, 1)
		var line []byte
		for {
			if _, err := p.Master().Read(buf); err != nil {
				return
			}
			if buf[0] != '\n' {
				line = append(line, buf[0])
				continue
			}
			switch string(line) {
			case "":
				p.Master().Write([]byte("invalid command\n"))
			case "NEGOTIATE V2":
				p.Master().Write([]byte("V2_OK\n"))
				return // and never read again
			}
			line = line[:0]
		}
	}()
	c := mdata.New(mdata.Serial(p.Path()), &mdata.Options{Timeouts: quick})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Put(ctx, "big", bytes.Repeat([]byte("x"), 4<<20)) }()
	select {
	case err := <-done:
		if !errors.Is(err, mdata.ErrUnavailable) {
			t.Fatalf("Put = %v, want ErrUnavailable", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Put blocked in a write long past its 2s deadline")
	}
}

// Giving up on a port another process holds leaves nothing behind: no
// descriptor, no waiter that could later take (and drop) the lock.
func TestIntegrationCancelledLockWaitLeavesNothing(t *testing.T) {
	testenv.Integration(t)
	_, path := startPTY(t, mdatatest.Default())
	defer holdLock(t, path)()
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	before := fds()
	for range 5 {
		c := mdata.New(mdata.Serial(path), &mdata.Options{Timeouts: quick})
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		if _, err := c.Get(ctx, "sdc:uuid"); !errors.Is(err, mdata.ErrUnavailable) {
			t.Fatalf("Get on a held port = %v", err)
		}
		cancel()
		c.Close()
	}
	if after := fds(); after > before {
		t.Errorf("%d descriptors before, %d after five abandoned lock waits", before, after)
	}
}

// Options come before the key; after it every argument is data, as the
// reference tools take it: "mdata-put k -h" stores "-h".
func TestIntegrationToolArgumentsAfterKeyAreData(t *testing.T) {
	testenv.Integration(t)
	dir := buildTools(t)
	st := mdatatest.Default()
	_, path := startPTY(t, st)
	for _, v := range []string{"-h", "--help", "-t", "--", "--version"} {
		r := runTool(t, dir, path, "", time.Minute, "mdata-put", "k", v)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("mdata-put k %s: exit %d stdout %q stderr %q", v, r.code, r.stdout, r.stderr)
		}
		if got, _ := st.Get("k"); string(got) != v {
			t.Errorf("mdata-put k %s stored %q", v, got)
		}
	}
}

// A signal ends a wait with 128+N, as the reference tools' death by that
// signal does, not with the timeout's "try again".
func TestIntegrationToolSignalExitCode(t *testing.T) {
	testenv.Integration(t)
	dir := buildTools(t)
	h, path := startPTY(t, mdatatest.Default())
	h.Down()
	cmd := exec.Command(filepath.Join(dir, "mdata-get"), "sdc:uuid")
	cmd.Env = append(os.Environ(), "SEEDKEEPER_MDATA=serial:"+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctxFor(t, 10*time.Second), func(s mdatatest.Stats) bool { return s.Discarded > 0 }); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(unix.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 128+int(unix.SIGTERM) {
			t.Errorf("exit %d after SIGTERM, want %d", code, 128+int(unix.SIGTERM))
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("mdata-get did not end after SIGTERM")
	}
}
