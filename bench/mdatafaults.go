package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// The clients the mdata matrix runs.
const (
	ClientLibrary = "library"   // mdata.Client.Get in this process
	ClientBinary  = "mdata-get" // the built binary invoked as mdata-get, one process per run
)

// MdataOptions say how much of the mdata fault matrix to run.
type MdataOptions struct {
	// Runs is the number of runs of each case and client; cases that cost
	// a client read timeout (seconds) each run a quarter of it, at least one.
	Runs int
	// Binary is the seedkeeper binary (invoked as mdata-get); empty leaves
	// the binary client out.
	Binary string
	// Deadline bounds each run of a case the client should recover from
	// (default 20s); a case whose fault never clears gets PermanentDeadline
	// (default 1.5s), after which a timeout is the right answer.
	Deadline, PermanentDeadline time.Duration
	// Grace is how long past its deadline a run may take before it counts
	// as a hang (default 3s).
	Grace time.Duration
	// Full includes the cases that take more than a few seconds a run.
	Full bool
	// Parallel is how many rows run at once (default 1). Each row has its
	// own simulated host; most of a row's time is spent waiting out
	// timeouts, so the short form in CI runs several at once.
	Parallel int
	// Logf, if set, gets a line per row.
	Logf func(format string, args ...any)
	// Dir holds the unix sockets (default: a new temporary directory).
	Dir string
}

// mdEnv is the simulated host one case runs against.
type mdEnv struct {
	store *mdatatest.Store
	path  string // the pty's slave or the socket
	unix  bool

	mu    sync.Mutex
	host  *mdatatest.Host
	hosts []*mdatatest.Host // every host made, to close
}

func (e *mdEnv) Host() *mdatatest.Host {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.host
}

// replace stops the current host (closing its socket, which removes the
// file) and, after gap, serves the same store on the same path again.
func (e *mdEnv) replace(gap time.Duration) error {
	e.Host().Close()
	time.Sleep(gap)
	h := mdatatest.NewHost(e.store)
	if _, err := h.ListenUnix(e.path); err != nil {
		return err
	}
	e.mu.Lock()
	e.host = h
	e.hosts = append(e.hosts, h)
	e.mu.Unlock()
	return nil
}

func (e *mdEnv) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, h := range e.hosts {
		h.Close()
	}
}

// mdCase is one row of the mdata matrix.
type mdCase struct {
	name      string
	key       string
	value     []byte // stored under key before the runs; nil keeps Default's
	missing   bool   // the key does not exist: NOTFOUND is the right answer
	permanent bool   // the fault never clears: a timeout is the right answer
	costly    bool   // each run waits out a client read timeout (~5 s)
	full      bool   // only in the full matrix
	unix      bool   // a unix socket instead of a pty
	clients   int    // concurrent clients per run (default 1)
	before    func(e *mdEnv) error
	during    func(ctx context.Context, e *mdEnv) error
}

func fault(m mdatatest.Mode, count int, delay time.Duration) func(*mdEnv) error {
	return func(e *mdEnv) error {
		e.Host().SetFault(mdatatest.Fault{Mode: m, Count: count, Delay: delay})
		return nil
	}
}

// afterRequest waits for the host to receive a GET, then calls f: a
// disruption in the middle of a request.
func afterRequest(f func(e *mdEnv) error) func(ctx context.Context, e *mdEnv) error {
	return func(ctx context.Context, e *mdEnv) error {
		h := e.Host()
		n := h.Stats().Requests["GET"]
		if err := h.Wait(ctx, func(st mdatatest.Stats) bool { return st.Requests["GET"] > n }); err != nil {
			return nil // the run ended first
		}
		return f(e)
	}
}

// killClientMidReply is a real client killed in the middle of a multi-MiB
// reply: it opens the port as mdata-get would (no lock: it is gone before
// the run starts), asks for the 4 MiB value v-4m, reads 64 KiB of the
// answer and closes the port. The rest of the reply is still on its way
// when the client under test starts.
func killClientMidReply(e *mdEnv) error {
	f, err := os.OpenFile(e.path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	h := e.Host()
	served := h.Stats().Served
	body := "0dead0ff GET " + base64.StdEncoding.EncodeToString([]byte("v-4m"))
	req := fmt.Sprintf("V2 %d %08x %s\n", len(body), crc32.ChecksumIEEE([]byte(body)), body)
	if _, err := io.WriteString(f, req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Wait(ctx, func(st mdatatest.Stats) bool { return st.Served > served }); err != nil {
		return err
	}
	f.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(f, make([]byte, 64<<10))
	return err
}

// randomBytes returns n deterministic pseudo-random bytes (any value,
// NULs and invalid UTF-8 included).
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mdataCases() []mdCase {
	return []mdCase{
		{name: "normal", key: "sdc:uuid"},
		{name: "normal (unix socket)", key: "sdc:uuid", unix: true},
		{name: "not-found key", key: "no-such-key", missing: true},
		{name: "v1-only", key: "hostname", before: fault(mdatatest.V1Only, 0, 0)},
		{name: "v1-only, not-found key", key: "no-such-key", missing: true, before: fault(mdatatest.V1Only, 0, 0)},
		{name: "silent x2", key: "sdc:uuid", before: fault(mdatatest.Silent, 2, 0)},
		{name: "silent for good", key: "sdc:uuid", permanent: true, before: fault(mdatatest.Silent, 0, 0)},
		{name: "garbage-line (every reply)", key: "sdc:uuid", before: fault(mdatatest.GarbageLine, 0, 0)},
		{name: "garbage-prefix x1", key: "sdc:uuid", before: fault(mdatatest.GarbagePrefix, 1, 0)},
		{name: "garbage-prefix for good", key: "sdc:uuid", permanent: true, before: fault(mdatatest.GarbagePrefix, 0, 0)},
		{name: "stale-frame (every reply)", key: "sdc:uuid", before: fault(mdatatest.StaleFrame, 0, 0)},
		{name: "bad-crc (every reply)", key: "sdc:uuid", before: fault(mdatatest.BadCRC, 0, 0)},
		{name: "slow 1ms/byte", key: "sdc:nics", before: fault(mdatatest.Slow, 0, time.Millisecond)},
		{name: "late 1s x1", key: "sdc:uuid", before: fault(mdatatest.Late, 1, time.Second)},
		{name: "late 7s x1 (past the read timeout)", key: "sdc:uuid", costly: true, full: true, before: fault(mdatatest.Late, 1, 7*time.Second)},
		{name: "drop x1 (reply cut off mid-line)", key: "sdc:uuid", before: fault(mdatatest.Drop, 1, 0)},
		{name: "drop x1 (unix socket)", key: "sdc:uuid", unix: true, before: fault(mdatatest.Drop, 1, 0)},
		{name: "fail-probe x2", key: "sdc:uuid", before: fault(mdatatest.FailProbe, 2, 0)},
		{name: "down 1s then up", key: "sdc:uuid", before: func(e *mdEnv) error { e.Host().DownFor(time.Second); return nil }},
		{name: "partial line left by a killed client", key: "sdc:uuid", before: func(e *mdEnv) error {
			e.Host().InjectInput([]byte("V2 25 60f18662 7ff58343 GET c2Rj"))
			return nil
		}},
		{name: "stale reply queued toward the guest", key: "sdc:uuid", before: func(e *mdEnv) error {
			return e.Host().InjectOutput(mdatatest.StaleReply("0badf00d"))
		}},
		{name: "host restart mid-request", key: "sdc:uuid",
			before: fault(mdatatest.Late, 1, 500*time.Millisecond),
			during: afterRequest(func(e *mdEnv) error { e.Host().Restart(); return nil })},
		{name: "socket removed and recreated mid-request", key: "sdc:uuid", unix: true,
			before: fault(mdatatest.Late, 1, 500*time.Millisecond),
			during: afterRequest(func(e *mdEnv) error { return e.replace(300 * time.Millisecond) })},
		{name: "trickle x1 (stale bytes still arriving after the drain)", key: "sdc:uuid", before: fault(mdatatest.Trickle, 1, 5*time.Millisecond)},
		{name: "trickle for good", key: "sdc:uuid", permanent: true, before: fault(mdatatest.Trickle, 0, 5*time.Millisecond)},
		{name: "stale-invalid x1 (stale 'invalid command' before the probe's answer)", key: "sdc:uuid", before: fault(mdatatest.StaleInvalid, 1, 0)},
		{name: "stale-invalid for good", key: "sdc:uuid", before: fault(mdatatest.StaleInvalid, 0, 0)},
		{name: "stale-v2ok x3 (stale 'V2_OK' before the probe's answer)", key: "sdc:uuid", before: fault(mdatatest.StaleV2OK, 3, 0)},
		{name: "stale-v2ok for good", key: "sdc:uuid", permanent: true, before: fault(mdatatest.StaleV2OK, 0, 0)},
		{name: "killed-mid-reply x1 (rest of a 4 MiB reply after the drain)", key: "sdc:uuid", before: fault(mdatatest.KilledMidReply, 1, 0)},
		{name: "client killed in the middle of a 4 MiB reply", key: "v-4m", value: randomBytes(4<<20, 3), before: killClientMidReply},
		{name: "4 concurrent clients", key: "sdc:nics", clients: 4},
		{name: "value 0 B", key: "v-empty", value: []byte{}},
		{name: "value 1 B", key: "v-one", value: []byte("x")},
		{name: "value 64 KiB", key: "v-64k", value: randomBytes(64<<10, 1)},
		{name: "value 4 MiB", key: "v-4m", value: randomBytes(4<<20, 2)},
		{name: "value with NULs", key: "v-nul", value: []byte("a\x00b\x00\x00c\x00")},
		{name: "value not UTF-8", key: "v-latin1", value: []byte("caf\xe9 \xff\xfe\x80\xc3(")},
	}
}

// RunMdataMatrix runs the mdata fault matrix: each case against a fresh
// simulated host, with the library client and (when o.Binary is set) the
// mdata-get binary. It returns one row per case and client; an error only
// when the host could not be set up.
func RunMdataMatrix(ctx context.Context, o MdataOptions) ([]*Row, error) {
	if o.Runs <= 0 {
		o.Runs = 1
	}
	o.Deadline = cmpOr(o.Deadline, 20*time.Second)
	o.PermanentDeadline = cmpOr(o.PermanentDeadline, 1500*time.Millisecond)
	o.Grace = cmpOr(o.Grace, 3*time.Second)
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "skbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	clients := []string{ClientLibrary}
	if o.Binary != "" {
		clients = append(clients, ClientBinary)
	}
	type job struct {
		i  int
		c  mdCase
		cl string
	}
	var jobs []job
	for i, c := range mdataCases() {
		if c.full && !o.Full {
			continue
		}
		for _, cl := range clients {
			jobs = append(jobs, job{i, c, cl})
		}
	}
	rows := make([]*Row, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, max(1, o.Parallel))
	var wg sync.WaitGroup
	for j, jb := range jobs {
		if ctx.Err() != nil {
			errs[j] = ctx.Err()
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			sock := filepath.Join(o.Dir, fmt.Sprintf("md%d-%d.sock", jb.i, j))
			r, err := runMdataCase(ctx, jb.c, jb.cl, sock, o)
			if err != nil {
				errs[j] = fmt.Errorf("case %q: %w", jb.c.name, err)
				return
			}
			if o.Logf != nil {
				o.Logf("%s", r)
			}
			rows[j] = r
		}()
	}
	wg.Wait()
	var out []*Row
	for _, r := range rows {
		if r != nil {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

func runMdataCase(ctx context.Context, c mdCase, client, sock string, o MdataOptions) (*Row, error) {
	e := &mdEnv{store: mdatatest.Default(), unix: c.unix}
	if c.value != nil {
		e.store.Set(c.key, c.value)
	}
	want, _ := e.store.Get(c.key)
	e.host = mdatatest.NewHost(e.store)
	e.hosts = []*mdatatest.Host{e.host}
	defer e.close()
	if c.unix {
		os.Remove(sock)
		if _, err := e.host.ListenUnix(sock); err != nil {
			return nil, err
		}
		e.path = sock
	} else {
		p, err := e.host.StartPTY()
		if err != nil {
			return nil, err
		}
		e.path = p.Path()
	}
	transport := "serial:" + e.path
	if c.unix {
		transport = "unix:" + e.path
	}
	deadline := o.Deadline
	if c.permanent {
		deadline = o.PermanentDeadline
	}
	runs := o.Runs
	if c.costly || c.permanent {
		runs = max(1, runs/4)
	}
	r := &Row{Area: "mdata", Case: c.name, Client: client}
	for range runs {
		if c.before != nil {
			if err := c.before(e); err != nil {
				return nil, err
			}
		}
		before := e.Host().Stats()
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		if c.during != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.during(runCtx, e); err != nil {
					r.note("disruption failed: %v", err)
				}
			}()
		}
		n := max(1, c.clients)
		outs := make([]outcome, n)
		var cw sync.WaitGroup
		for i := range n {
			cw.Add(1)
			go func() {
				defer cw.Done()
				if client == ClientLibrary {
					outs[i] = libraryGet(transport, c.key, deadline, o.Grace)
				} else {
					outs[i] = binaryGet(o.Binary, transport, c.key, deadline, o.Grace)
				}
			}()
		}
		cw.Wait()
		cancel()
		wg.Wait()
		for _, out := range outs {
			classify(r, c, want, out)
		}
		if n > 1 {
			after := e.Host().Stats()
			if bad := (after.Malformed - before.Malformed) + (after.Unknown - before.Unknown); bad > 0 {
				r.Wrong++
				r.note("%d malformed or unknown lines on the host: frames of concurrent clients interleaved", bad)
			}
		}
		e.Host().SetFault(mdatatest.Fault{})
	}
	return r, nil
}

// outcome is how one client run ended.
type outcome struct {
	value []byte
	err   error // library: the error; binary: nil when the exit status says it all
	exit  int   // binary only
	hung  bool
	dur   time.Duration
	msg   string // binary: stderr
}

func libraryGet(transport, key string, deadline, grace time.Duration) outcome {
	t, err := mdata.ParseTransport(transport)
	if err != nil {
		return outcome{err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		c := mdata.New(t, nil)
		v, err := c.Get(ctx, key)
		c.Close()
		done <- outcome{value: v, err: err, dur: time.Since(start)}
	}()
	select {
	case o := <-done:
		return o
	case <-time.After(deadline + grace):
		// The goroutine is left behind; it ends when the client returns.
		return outcome{hung: true, dur: time.Since(start)}
	}
}

func binaryGet(bin, transport, key string, deadline, grace time.Duration) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), deadline+grace)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Args = []string{"mdata-get", "-t", deadline.String(), "--", key}
	cmd.Env = append(cleanEnv(), mdata.EnvTransport+"="+transport)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	o := outcome{value: out.Bytes(), dur: time.Since(start), msg: strings.TrimSpace(errb.String())}
	if ctx.Err() != nil {
		o.hung = true
		return o
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.exit = ee.ExitCode()
	default:
		o.err = err
		o.exit = -1
	}
	return o
}

// cleanEnv is the environment without what would make seedkeeper talk to
// systemd or another metadata host.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", mdata.EnvTransport, "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// cliOutput is what mdata-get prints for value: a "\n" is added when the
// value is empty or does not end in one (docs/protocol.md, "The tools'
// interface").
func cliOutput(v []byte) []byte {
	if len(v) == 0 || v[len(v)-1] != '\n' {
		return append(bytes.Clone(v), '\n')
	}
	return v
}

func classify(r *Row, c mdCase, want []byte, o outcome) {
	r.Runs++
	r.Time = append(r.Time, o.dur)
	if o.hung {
		r.Hangs++
		r.note("no return %s after the start (deadline plus grace)", Ms(o.dur))
		return
	}
	if r.Client == ClientBinary {
		switch {
		case o.exit == 0 && !c.missing && bytes.Equal(o.value, cliOutput(want)):
			r.Correct++
		case o.exit == 0:
			r.Wrong++
			r.note("exit 0 with %d bytes of output, want %d", len(o.value), len(cliOutput(want)))
		case o.exit == 1 && c.missing:
			r.CorrectErr++
		case o.exit == 1:
			r.Wrong++
			r.note("exit 1 (not found) for a key that exists: %s", o.msg)
		case o.exit == 10 && c.permanent:
			r.CorrectErr++
		default:
			r.Failed++
			r.note("exit %d after %s: %s %v", o.exit, Ms(o.dur), o.msg, o.err)
		}
		return
	}
	switch {
	case o.err == nil && !c.missing && bytes.Equal(o.value, want) && o.value != nil:
		r.Correct++
	case o.err == nil:
		r.Wrong++
		r.note("got %d bytes, want %d", len(o.value), len(want))
	case errors.Is(o.err, mdata.ErrNotFound) && c.missing:
		r.CorrectErr++
	case errors.Is(o.err, mdata.ErrNotFound):
		r.Wrong++
		r.note("not found for a key that exists: %v", o.err)
	case errors.Is(o.err, mdata.ErrUnavailable) && c.permanent:
		r.CorrectErr++
	default:
		r.Failed++
		r.note("after %s: %v", Ms(o.dur), o.err)
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
