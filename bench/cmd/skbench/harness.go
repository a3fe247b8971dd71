package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/bench"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

const (
	python   = "/usr/bin/python3" // Debian's cloud-init is installed for this one
	peerPy   = "bench/py/cloudinit_peer.py"
	procWait = 2 * time.Minute // no measured process may take longer
)

type harness struct {
	bin      string
	runs     int
	watchFor time.Duration
	gobench  string
	quick    bool
	logf     func(string, ...any)

	host *mdatatest.Host
	pty  string
	tmp  string

	cmds []string // the commands measured, for the page
}

// proc is one finished process.
type proc struct {
	dur            time.Duration
	end            time.Time
	rss            int64 // peak RSS, KiB
	exit           int
	stdout, stderr []byte
}

// measure is a series of runs of one command.
type measure struct {
	label string
	t     bench.Sample
	rss   []int64
	inOp  bench.Sample // the peer's in-process operation time
	fails int
	note  string
}

func (m *measure) add(p proc, ok bool) {
	if !ok {
		m.fails++
		return
	}
	m.t = append(m.t, p.dur)
	m.rss = append(m.rss, p.rss)
}

func (m *measure) rssMedian() int64 {
	if len(m.rss) == 0 {
		return 0
	}
	c := slices.Clone(m.rss)
	slices.Sort(c)
	return c[len(c)/2]
}

// runProc runs argv with env added to a clean environment and returns how
// it went; an error only when it could not start or overran procWait.
func runProc(ctx context.Context, env []string, argv ...string) (proc, error) {
	ctx, cancel := context.WithTimeout(ctx, procWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if strings.HasPrefix(filepath.Base(argv[0]), "mdata-") {
		// the multi-call binary under its tool name
		cmd.Path = argv[0]
	}
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	p := proc{dur: time.Since(start), end: time.Now(), stdout: out.Bytes(), stderr: errb.Bytes()}
	if ctx.Err() != nil {
		return p, fmt.Errorf("%s did not finish within %s", strings.Join(argv, " "), procWait)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return p, err
	}
	if st := cmd.ProcessState; st != nil {
		p.exit = st.ExitCode()
		p.rss = maxRSS(st)
	}
	return p, nil
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", "SEEDKEEPER_MDATA", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// peerTimings reads the JSON timings line cloudinit_peer.py ends stderr with.
func peerTimings(stderr []byte) (imp, op time.Duration) {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	var t struct{ Import, Op float64 }
	if json.Unmarshal([]byte(lines[len(lines)-1]), &t) == nil {
		return time.Duration(t.Import * float64(time.Second)), time.Duration(t.Op * float64(time.Second))
	}
	return 0, 0
}

// cloudInit says why cloud-init cannot be measured here, or "".
func cloudInit() string {
	if _, err := os.Stat(python); err != nil {
		return python + " is not installed"
	}
	if _, err := os.Stat(peerPy); err != nil {
		return "run skbench from the module root (" + peerPy + " not found)"
	}
	out, err := exec.Command(python, "-c", "import cloudinit.version as v; print(v.version_string())").Output()
	if err != nil {
		return "cloud-init is not installed for " + python + " (apt-get install cloud-init)"
	}
	if v := strings.TrimSpace(string(out)); !strings.HasPrefix(v, "22.4") {
		return "cloud-init " + v + " is installed, the comparison is with 22.4.2"
	}
	return ""
}

func (h *harness) record(cmd string) {
	if !slices.Contains(h.cmds, cmd) {
		h.cmds = append(h.cmds, cmd)
	}
}

func (h *harness) run(ctx context.Context) (string, error) {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "skbench-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	h.tmp = tmp
	h.host = mdatatest.NewHost(mdatatest.Default())
	defer h.host.Close()
	p, err := h.host.StartPTY()
	if err != nil {
		return "", fmt.Errorf("simulated host: %v", err)
	}
	h.pty = p.Path()
	mdataGet := filepath.Join(tmp, "mdata-get")
	if err := os.Symlink(h.bin, mdataGet); err != nil {
		return "", err
	}

	var b strings.Builder
	b.WriteString("## Benchmarks\n\n")
	b.WriteString(bench.ThisMachine(".").Markdown())
	fmt.Fprintf(&b, "- Runs per measurement: %d (ours and the peer interleaved, one process at a time)\n", h.runs)
	ci := cloudInit()
	if ci == "" {
		b.WriteString("- Peer: Debian's cloud-init 22.4.2 under /usr/bin/python3, driven by `bench/py/cloudinit_peer.py`\n")
	}
	b.WriteString("\nTimes are wall-clock medians (p90 in brackets) of whole processes, from fork to exit, " +
		"against one simulated SmartOS host (mdata/mdatatest) on a pty. The ratio is the peer's median over ours.\n\n")

	var rows [][]string
	h.logf("mdata: GET over the pty")
	rows = append(rows, h.getRows(ctx, mdataGet, ci)...)
	h.logf("mdata: the boot key sequence")
	rows = append(rows, h.bootSeqRows(ctx, ci)...)
	h.logf("mdata: recovery after an outage")
	rows = append(rows, h.recoveryRows(ctx, mdataGet, ci)...)
	h.logf("mdata: recovery from a reply cut off and a host restart")
	rows = append(rows, h.faultRecoveryRows(ctx, mdataGet, ci)...)
	h.logf("seeds")
	rows = append(rows, h.seedRows(ctx, ci)...)
	b.WriteString("| benchmark | ours | median (p90) | peer | median (p90) | peer / ours |\n|---|---|--:|---|--:|--:|\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}

	h.logf("footprint")
	b.WriteString("\n### Footprint\n\n")
	b.WriteString(h.footprint(ctx, ci))

	h.logf("go benchmarks")
	b.WriteString("\n### Go benchmarks (mdata, hotplug, netcfg/apply)\n\n")
	b.WriteString(h.goBench(ctx))

	b.WriteString("\n### Commands\n\n")
	for _, c := range h.cmds {
		b.WriteString("- `" + c + "`\n")
	}
	fmt.Fprintf(&b, "\nThe whole run took %s.\n", time.Since(start).Round(time.Second))
	return b.String(), nil
}

// cell renders a measure's median and p90.
func cell(m *measure) string {
	if len(m.t) == 0 {
		return "not measured"
	}
	s := fmt.Sprintf("%s (%s)", bench.Ms(m.t.Median()), bench.Ms(m.t.P90()))
	if m.fails > 0 {
		s += fmt.Sprintf(", %d failed", m.fails)
	}
	return s
}

func row(name, oursLabel string, ours *measure, peerLabel string, peer *measure, why string) []string {
	if peer == nil || len(peer.t) == 0 {
		if why == "" && peer != nil {
			why = fmt.Sprintf("every run failed (%d)", peer.fails)
		}
		return []string{name, oursLabel, cell(ours), peerLabel, "not measured: " + why, "–"}
	}
	return []string{name, oursLabel, cell(ours), peerLabel, cell(peer), bench.Ratio(ours.t.Median(), peer.t.Median())}
}

func (h *harness) getRows(ctx context.Context, mdataGet, ci string) [][]string {
	want := mdatatest.SampleUUID + "\n"
	env := []string{"SEEDKEEPER_MDATA=serial:" + h.pty}
	ours := &measure{}
	peer := &measure{}
	h.record("SEEDKEEPER_MDATA=serial:PTY mdata-get sdc:uuid")
	if ci == "" {
		h.record(python + " " + peerPy + " get PTY sdc:uuid")
	}
	for range h.runs {
		p, err := runProc(ctx, env, mdataGet, "sdc:uuid")
		ours.add(p, err == nil && p.exit == 0 && string(p.stdout) == want)
		if ci != "" {
			continue
		}
		p, err = runProc(ctx, nil, python, peerPy, "get", h.pty, "sdc:uuid")
		ok := err == nil && p.exit == 0 && string(p.stdout) == mdatatest.SampleUUID
		peer.add(p, ok)
		if ok {
			_, op := peerTimings(p.stderr)
			peer.inOp = append(peer.inOp, op)
		}
	}
	rows := [][]string{row("GET sdc:uuid, whole process", "mdata-get", ours, "cloud-init JoyentMetadataLegacySerialClient", peer, ci)}
	if len(peer.inOp) > 0 {
		rows = append(rows, []string{"GET sdc:uuid, peer in process (open_transport + get + close, no interpreter start or import)",
			"mdata-get (whole process)", cell(ours), "cloud-init client calls only",
			fmt.Sprintf("%s (%s)", bench.Ms(peer.inOp.Median()), bench.Ms(peer.inOp.P90())),
			bench.Ratio(ours.t.Median(), peer.inOp.Median())})
	}
	return rows
}

func (h *harness) bootSeqRows(ctx context.Context, ci string) [][]string {
	env := []string{"SEEDKEEPER_MDATA=serial:" + h.pty}
	ours, peer := &measure{}, &measure{}
	var oursReq, peerReq []int
	reqs := func() int {
		n := 0
		for _, v := range h.host.Stats().Requests {
			n += v
		}
		return n
	}
	h.record("SEEDKEEPER_MDATA=serial:PTY seedkeeper fetch --source smartos --json")
	if ci == "" {
		h.record(python + " " + peerPy + " getdata PTY")
	}
	for range h.runs {
		n := reqs()
		p, err := runProc(ctx, env, h.bin, "fetch", "--source", "smartos", "--json")
		ok := err == nil && p.exit == 0 && bytes.Contains(p.stdout, []byte(mdatatest.SampleUUID))
		ours.add(p, ok)
		oursReq = append(oursReq, reqs()-n)
		if ci != "" {
			continue
		}
		n = reqs()
		p, err = runProc(ctx, nil, python, peerPy, "getdata", h.pty)
		ok = err == nil && p.exit == 0 && strings.TrimSpace(string(p.stdout)) == mdatatest.SampleUUID
		peer.add(p, ok)
		peerReq = append(peerReq, reqs()-n)
		if ok {
			_, op := peerTimings(p.stderr)
			peer.inOp = append(peer.inOp, op)
		}
	}
	label := func(s string, n []int) string {
		if len(n) == 0 {
			return s
		}
		return fmt.Sprintf("%s (%d requests)", s, n[0])
	}
	rows := [][]string{row("boot key sequence in one session, whole process", label("seedkeeper fetch --source smartos", oursReq),
		ours, label("cloud-init DataSourceSmartOS._get_data", peerReq), peer, ci)}
	if len(peer.inOp) > 0 {
		rows = append(rows, []string{"boot key sequence, peer in process (_get_data only)", "seedkeeper fetch (whole process)", cell(ours),
			"_get_data call only", fmt.Sprintf("%s (%s)", bench.Ms(peer.inOp.Median()), bench.Ms(peer.inOp.P90())),
			bench.Ratio(ours.t.Median(), peer.inOp.Median())})
	}
	return rows
}

// recoveryRows: the host is down for outage when the client starts; the
// figure is the time from the host coming up to the client's exit.
func (h *harness) recoveryRows(ctx context.Context, mdataGet, ci string) [][]string {
	const outage = 3 * time.Second
	runs := max(2, h.runs/4)
	env := []string{"SEEDKEEPER_MDATA=serial:" + h.pty}
	ours, peer := &measure{}, &measure{}
	oursAns, peerAns := bench.Sample{}, bench.Sample{}
	one := func(m *measure, ans *bench.Sample, argv []string, env []string, want string) {
		h.host.DownFor(outage)
		since := len(h.host.Transcript())
		p, err := runProc(ctx, env, argv...)
		ok := err == nil && p.exit == 0 && strings.TrimSpace(string(p.stdout)) == want
		var up, answer time.Time
		for _, e := range h.host.Transcript()[since:] {
			if e.Kind == mdatatest.KindUp && up.IsZero() {
				up = e.Time
			}
			if !up.IsZero() && e.Kind == mdatatest.KindSent && answer.IsZero() {
				answer = e.Time
			}
		}
		if up.IsZero() || !ok {
			m.fails++
			return
		}
		p.dur = p.end.Sub(up)
		m.add(p, true)
		*ans = append(*ans, p.end.Sub(answer))
	}
	h.record(fmt.Sprintf("host down %s, then: SEEDKEEPER_MDATA=serial:PTY mdata-get sdc:uuid", outage))
	if ci == "" {
		h.record(fmt.Sprintf("host down %s, then: %s %s get PTY sdc:uuid", outage, python, peerPy))
	}
	for range runs {
		one(ours, &oursAns, []string{mdataGet, "sdc:uuid"}, env, mdatatest.SampleUUID)
		if ci == "" {
			one(peer, &peerAns, []string{python, peerPy, "get", h.pty, "sdc:uuid"}, nil, mdatatest.SampleUUID)
		}
	}
	rows := [][]string{row(fmt.Sprintf("recovery: host silent %s at start; host up → client exit", outage), "mdata-get", ours,
		"cloud-init JoyentMetadataLegacySerialClient", peer, ci)}
	if len(oursAns) > 0 && len(peerAns) > 0 {
		rows = append(rows, []string{"recovery: host's first answer after up → client exit", "mdata-get",
			fmt.Sprintf("%s (%s)", bench.Ms(oursAns.Median()), bench.Ms(oursAns.P90())), "cloud-init",
			fmt.Sprintf("%s (%s)", bench.Ms(peerAns.Median()), bench.Ms(peerAns.P90())), bench.Ratio(oursAns.Median(), peerAns.Median())})
	}
	return rows
}

// faultRecoveryRows: a reply cut off mid-line (the Drop fault: half the
// reply, then nothing), and a host agent that restarts after reading the
// GET and before answering it. The figure is the time from the moment the
// host could answer again (the cut, the restart) to the client's exit.
func (h *harness) faultRecoveryRows(ctx context.Context, mdataGet, ci string) [][]string {
	runs := max(2, h.runs/4)
	env := []string{"SEEDKEEPER_MDATA=serial:" + h.pty}
	type scenario struct {
		name   string
		record string
		setup  func()
		during func(stop <-chan struct{})
		marker func(e mdatatest.Event) bool
	}
	scenarios := []scenario{{
		name:   "recovery: reply cut off mid-line; cut → client exit",
		record: "fault drop x1 (half the reply, then nothing), then: ",
		setup:  func() { h.host.SetFault(mdatatest.Fault{Mode: mdatatest.Drop, Count: 1}) },
		marker: func(e mdatatest.Event) bool { return e.Kind == mdatatest.KindSent && strings.Contains(e.Note, "drop") },
	}, {
		name:   "recovery: host restart after reading the GET; restart → client exit",
		record: "fault late 500ms x1, host restarted once the GET is read, then: ",
		setup: func() {
			h.host.SetFault(mdatatest.Fault{Mode: mdatatest.Late, Count: 1, Delay: 500 * time.Millisecond})
		},
		during: func(stop <-chan struct{}) {
			n := h.host.Stats().Requests["GET"]
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-stop:
					cancel()
				case <-wctx.Done():
				}
			}()
			if h.host.Wait(wctx, func(st mdatatest.Stats) bool { return st.Requests["GET"] > n }) == nil {
				h.host.Restart()
			}
		},
		marker: func(e mdatatest.Event) bool { return e.Kind == mdatatest.KindRestart },
	}}
	var rows [][]string
	for _, sc := range scenarios {
		ours, peer := &measure{}, &measure{}
		one := func(m *measure, argv []string, env []string) {
			sc.setup()
			since := len(h.host.Transcript())
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				if sc.during != nil {
					sc.during(stop)
				}
			}()
			p, err := runProc(ctx, env, argv...)
			close(stop)
			<-done
			h.host.SetFault(mdatatest.Fault{})
			ok := err == nil && p.exit == 0 && strings.TrimSpace(string(p.stdout)) == mdatatest.SampleUUID
			var at time.Time
			for _, e := range h.host.Transcript()[since:] {
				if sc.marker(e) {
					at = e.Time
					break
				}
			}
			if at.IsZero() || !ok {
				m.fails++
				return
			}
			p.dur = p.end.Sub(at)
			m.add(p, true)
		}
		h.record(sc.record + "SEEDKEEPER_MDATA=serial:PTY mdata-get sdc:uuid")
		if ci == "" {
			h.record(sc.record + python + " " + peerPy + " get PTY sdc:uuid")
		}
		for range runs {
			one(ours, []string{mdataGet, "sdc:uuid"}, env)
			if ci == "" {
				one(peer, []string{python, peerPy, "get", h.pty, "sdc:uuid"}, nil)
			}
		}
		why := ci
		if why == "" && len(peer.t) == 0 {
			why = fmt.Sprintf("no answer in any of %d runs (the client gives up after its 5 s read timeout; cloud-init does not retry)", peer.fails)
		}
		rows = append(rows, row(sc.name, "mdata-get", ours, "cloud-init JoyentMetadataLegacySerialClient", peer, why))
	}
	return rows
}

// elfInfo says whether the binary is static (no interpreter) and stripped.
func elfInfo(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return "not ELF: " + err.Error()
	}
	defer f.Close()
	static, stripped := true, f.Section(".symtab") == nil
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			static = false
		}
	}
	var s []string
	if static {
		s = append(s, "static")
	} else {
		s = append(s, "dynamically linked")
	}
	if stripped {
		s = append(s, "stripped")
	} else {
		s = append(s, "not stripped")
	}
	return strings.Join(s, ", ")
}
