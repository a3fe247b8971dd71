package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// vmTimeout bounds one scenario, boot to power-off, under TCG on a busy
// machine. Scenarios take 10-40 s; the bound only keeps a hung VM from
// hanging the test run.
const vmTimeout = 150 * time.Second

// envShowConsole, when set, logs the console of every VM, not only of
// the ones whose test failed.
const envShowConsole = "SEEDKEEPER_VM_CONSOLE"

// guestModules are the modules the guest loads, in dependency order:
// virtio-net for the NICs, and the PATA/SCSI stack of QEMU's default "pc"
// machine for the CD-ROM drive (/dev/sr0). Built-in ones are left out.
var guestModules = []string{
	"virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev",
	"virtio_pci", "failover", "net_failover", "virtio_net",
	"scsi_common", "scsi_mod", "libata", "ata_piix", "cdrom", "sr_mod",
}

// A fixed /etc/machine-id, as an installed image has one.
const guestMachineID = "5eed0000c0ffee00000000000000a11c\n"

// guest is what every VM of the test run shares: built once.
type guest struct {
	kern    kernel
	vmlinux string
	initrd  []byte // the gzip cpio with /init, seedkeeper and the modules
}

var (
	guestOnce sync.Once
	guestVal  *guest
	guestSkip string // why the VM tests cannot run here
	guestErr  error  // why building the guest failed
	workDir   string // scratch of the test run, removed by TestMain
)

func TestMain(m *testing.M) {
	start := time.Now()
	flag.Parse()
	defaultParallel(vmSlots.size)
	prebuildImages()
	code := m.Run()
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	if s := vmCost.summary(time.Since(start)); s != "" {
		fmt.Println(s)
	}
	os.Exit(code)
}

// defaultParallel sets go test's -parallel, unless it was given, to
// twice the guests that boot at once (vmSlots). Every guest's test holds
// one of go test's parallel slots from its start to its end, also while
// it makes its image and disk, checks a report or idles (machine.idle),
// when its VM slot is free or given to another guest. With as many
// parallel slots as VM slots, no other test could take that VM slot
// then; with twice as many, as many tests as there are VM slots prepare
// their boots while the others' guests run.
func defaultParallel(vms int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(2*vms))
	}
}

// runIncludes reports whether go test's -run and -skip flags let the
// top-level test name run. Like go test, it matches a pattern's first
// "/"-separated element against a top-level name: -run drops the test
// when that element does not match; -skip drops it when the pattern is
// that one element and it matches (with more, -skip drops subtests).
func runIncludes(name string) bool {
	match := func(flagName string) (matched, given, deeper bool) {
		f := flag.Lookup(flagName)
		if f == nil || f.Value.String() == "" {
			return false, false, false
		}
		first, rest, _ := strings.Cut(f.Value.String(), "/")
		re, err := regexp.Compile(first)
		return err == nil && re.MatchString(name), true, rest != ""
	}
	if ok, given, _ := match("test.run"); given && !ok {
		return false
	}
	if ok, _, deeper := match("test.skip"); ok && !deeper {
		return false
	}
	return true
}

// vmCost adds up what the run's VMs cost. Under TCG a guest's cost is
// its QEMU's CPU time (user and system), which is what to compare between
// runs: its wall time depends on what else the machine runs.
var vmCost costs

type costs struct {
	mu    sync.Mutex
	boots int
	cpu   time.Duration
	wall  time.Duration
}

// add logs the cost of one VM whose QEMU has exited, as ps says, and adds
// it to the run's.
func (c *costs) add(t *testing.T, name string, ps *os.ProcessState, wall time.Duration) {
	t.Helper()
	if ps == nil {
		return
	}
	cpu := ps.UserTime() + ps.SystemTime()
	t.Logf("%s: QEMU cpu %.1fs (user %.1fs, sys %.1fs), wall %.1fs", name,
		cpu.Seconds(), ps.UserTime().Seconds(), ps.SystemTime().Seconds(), wall.Seconds())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.boots++
	c.cpu += cpu
	c.wall += wall
}

// summary is the run's total, or "" when no VM ran.
func (c *costs) summary(run time.Duration) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.boots == 0 {
		return ""
	}
	return fmt.Sprintf("vm: %d boots, QEMU cpu %.0fs, boot wall %.0fs summed, run wall %.0fs",
		c.boots, c.cpu.Seconds(), c.wall.Seconds(), run.Seconds())
}

// needGuest skips the test when the VM cannot run here, and returns the
// shared guest, building it on first use.
func needGuest(t *testing.T) *guest {
	t.Helper()
	if testing.Short() {
		t.Skip("VM test skipped in -short mode")
	}
	guestOnce.Do(func() { guestVal, guestSkip, guestErr = buildGuest() })
	if guestSkip != "" {
		t.Skip(guestSkip)
	}
	if guestErr != nil {
		t.Fatalf("building the guest: %v", guestErr)
	}
	return guestVal
}

// buildGuest finds QEMU and the kernel, extracts the vmlinux and builds
// the static guest binaries into the base initramfs.
func buildGuest() (*guest, string, error) {
	const install = "run `sudo make test` (scripts/test-deps.sh installs qemu-system-x86 and the pinned kernel package linux-image-" + KernelRelease + ")"
	if runtime.GOOS != "linux" {
		return nil, "VM tests run on Linux hosts only", nil
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, "needs qemu-system-x86_64: " + install, nil
	}
	dir := os.Getenv(EnvKernelDir)
	if dir == "" {
		dir = DefaultKernelDir
	}
	k, err := findKernel(dir)
	if err != nil {
		return nil, fmt.Sprintf("needs the kernel: %v; %s, or set %s", err, install, EnvKernelDir), nil
	}
	mods, err := k.modulePaths(guestModules)
	if err != nil {
		return nil, "", err
	}
	// The scratch directory is shared with the systemd guest's tests,
	// which may run at the same time (sdWorkDir locks it).
	workDir, err := sdWorkDir()
	if err != nil {
		return nil, "", err
	}
	vmlinux, err := k.vmlinux(workDir)
	if err != nil {
		return nil, "", err
	}

	// The guest binaries, static, for the guest's architecture.
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bins := map[string]string{}
	for _, pkg := range []string{"./cmd/seedkeeper", "./test/vm/init"} {
		out := filepath.Join(workDir, filepath.Base(pkg))
		cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
		}
		bins[pkg] = out
	}

	var buf bytes.Buffer
	a := newInitramfs(&buf)
	for _, d := range []string{"/proc", "/sys", "/dev", "/run", "/tmp", "/root", "/etc", "/var/lib", "/var/tmp"} {
		a.Dir(d, 0o755)
	}
	a.CharDev("/dev/console", 0o600, 5, 1)
	a.CharDev("/dev/null", 0o666, 1, 3)
	a.File("/etc/machine-id", 0o444, []byte(guestMachineID))
	for _, f := range [][2]string{{"./test/vm/init", "/init"}, {"./cmd/seedkeeper", "/sbin/seedkeeper"}} {
		pkg, dst := f[0], f[1]
		b, err := os.ReadFile(bins[pkg])
		if err != nil {
			return nil, "", err
		}
		a.File(dst, 0o755, b)
	}
	for _, tool := range []string{"mdata-get", "mdata-put", "mdata-delete", "mdata-list"} {
		a.Symlink("/usr/sbin/"+tool, "/sbin/seedkeeper")
	}
	var list []string
	for _, p := range mods {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		dst := "/skvm/ko/" + filepath.Base(p)
		a.File(dst, 0o644, b)
		list = append(list, dst)
	}
	a.File("/skvm/modules", 0o644, []byte(strings.Join(list, "\n")+"\n"))
	if err := a.Close(); err != nil {
		return nil, "", err
	}
	return &guest{kern: k, vmlinux: vmlinux, initrd: buf.Bytes()}, "", nil
}

// vmConfig says how to start one VM.
type vmConfig struct {
	script  string            // the init's steps (see ./init)
	host    *mdatatest.Host   // when set: SmartOS SMBIOS and ttyS1 wired to it
	uuid    string            // the SMBIOS system UUID
	cdrom   string            // an ISO image for the CD-ROM drive
	nics    []string          // the MACs of the virtio-net NICs present at boot
	monitor bool              // a QEMU monitor socket, for hotplug
	modules []string          // more modules to load, in dependency order (built-in ones are left out)
	files   map[string]string // more executables for the initramfs: guest path → host path
}

// machine is a running VM.
type machine struct {
	t       *testing.T
	dir     string
	ctx     context.Context
	cmd     *exec.Cmd
	started time.Time
	con     *consoleLog
	qemuErr syncBuffer
	exited  chan struct{} // closed when QEMU has exited
	slots   *slotPool     // the slots the VM holds one of (vmSlots), or nil
	slot    bool          // whether it holds one now
}

// idle waits d while the guest, as the caller knows, does nothing (its
// metadata host kept down), and gives its slot to another guest for that
// time. The slot is taken back before idle returns, so the wait may be
// longer than d. It reports false, with no slot held, when the guest
// stopped or the machine's context ended first.
func (m *machine) idle(d time.Duration) bool {
	if m.slot {
		m.slots.release()
		m.slot = false
	}
	select {
	case <-time.After(d):
	case <-m.exited:
		return false
	case <-m.ctx.Done():
		return false
	}
	if m.slots == nil {
		return true
	}
	m.slot = m.slots.acquire(prioResume, m.exited, m.ctx.Done())
	return m.slot
}

// startVM boots a VM with the shared guest and cfg's script, and has its
// QEMU killed when the test ends. The machine's context ends after
// vmTimeout.
func startVM(t *testing.T, g *guest, cfg vmConfig) *machine {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), vmTimeout)
	t.Cleanup(cancel)
	m := &machine{t: t, dir: dir, ctx: ctx, exited: make(chan struct{})}

	// The initrd: the shared archive, then this VM's script in a second
	// one, which the kernel unpacks after the first.
	var sc bytes.Buffer
	a := newInitramfs(&sc)
	a.File("/skvm/script", 0o644, []byte(cfg.script))
	if len(cfg.modules) > 0 {
		mods, err := g.kern.modulePaths(cfg.modules)
		if err != nil {
			t.Fatal(err)
		}
		var list []string
		for _, p := range mods {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			dst := "/skvm/ko/" + filepath.Base(p)
			a.File(dst, 0o644, b)
			list = append(list, dst)
		}
		a.File("/skvm/modules.vm", 0o644, []byte(strings.Join(list, "\n")+"\n"))
	}
	for dst, src := range cfg.files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		a.File(dst, 0o755, b)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "initrd.gz")
	if err := os.WriteFile(initrd, append(append([]byte{}, g.initrd...), sc.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{
		"-accel", "tcg", "-m", "256", "-nographic", "-no-reboot",
		"-kernel", g.vmlinux, "-initrd", initrd,
		// Only critical kernel messages: they could split a marker line.
		"-append", "console=ttyS0 loglevel=3 panic=-1",
		"-serial", "stdio",
	}
	mdSock := filepath.Join(dir, "mdata.sock")
	if cfg.host != nil {
		args = append(args,
			"-chardev", "socket,id=md,path="+mdSock+",server=on,wait=off",
			"-serial", "chardev:md",
			"-smbios", "type=1,product=SmartDC HVM")
	}
	if cfg.uuid != "" {
		args = append(args, "-uuid", cfg.uuid)
	}
	if cfg.monitor {
		args = append(args, "-monitor", "unix:"+m.monitorPath()+",server=on,wait=off")
	} else {
		args = append(args, "-monitor", "none")
	}
	args = append(args, "-nic", "none")
	for i, mac := range cfg.nics {
		id := fmt.Sprintf("boot%d", i)
		args = append(args, "-netdev", "user,id="+id,
			"-device", "virtio-net-pci,netdev="+id+",mac="+mac+",romfile=")
	}
	if cfg.cdrom != "" {
		args = append(args, "-drive", "file="+cfg.cdrom+",media=cdrom,readonly=on")
	}

	m.cmd = exec.Command("qemu-system-x86_64", args...)
	stdin, err := m.cmd.StdinPipe() // held open: QEMU's stdio chardev reads it
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = &m.qemuErr
	logf, err := os.Create(filepath.Join(dir, "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	m.con = newConsoleLog(logf)
	t.Logf("qemu-system-x86_64 %s", strings.Join(args, " "))
	m.started = time.Now()
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("starting QEMU: %v", err)
	}
	go m.con.read(stdout)
	go func() {
		m.cmd.Wait()
		close(m.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-m.exited:
		default:
			m.cmd.Process.Kill()
			<-m.exited
		}
		vmCost.add(t, "vm", m.cmd.ProcessState, time.Since(m.started))
		stdin.Close()
		<-m.con.eof
		logf.Close()
		if t.Failed() || os.Getenv(envShowConsole) != "" {
			t.Logf("console (%s), last lines:\n%s", logf.Name(), m.con.tail(80))
			if s := m.qemuErr.String(); s != "" {
				t.Logf("QEMU stderr:\n%s", s)
			}
		}
	})

	if cfg.host != nil {
		conn := m.dial(mdSock)
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := cfg.host.Serve(conn); err != nil && !errors.Is(err, net.ErrClosed) {
				t.Logf("mdata host: %v", err)
			}
		}()
		// Runs before the QEMU cleanup above (cleanups run last first).
		t.Cleanup(func() {
			conn.Close()
			<-served
		})
	}
	return m
}

// running returns a context that ends when the VM stops (or the
// machine's own context ends).
func (m *machine) running() context.Context {
	ctx, cancel := context.WithCancel(m.ctx)
	m.t.Cleanup(cancel)
	go func() {
		select {
		case <-m.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx
}

func (m *machine) monitorPath() string { return filepath.Join(m.dir, "mon.sock") }

// dial connects to one of QEMU's server sockets, waiting for QEMU to
// create it.
func (m *machine) dial(path string) net.Conn {
	m.t.Helper()
	var last error
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			return c
		}
		last = err
		select {
		case <-m.exited:
			m.t.Fatalf("QEMU exited before %s could be reached (%v): %s", path, last, m.qemuErr.String())
		case <-m.ctx.Done():
			m.t.Fatalf("QEMU socket %s not reachable: %v", path, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitMark waits for the guest's first "SKVM PREFIX..." line and returns
// it (without "SKVM "). The test fails when the VM stops or the deadline
// passes first.
func (m *machine) waitMark(prefix string) string {
	m.t.Helper()
	s, err := m.con.wait(m.ctx, prefix)
	if err != nil {
		m.t.Fatalf("waiting for the guest's %q: %v (after %v); guest errors: %q", prefix, err, time.Since(m.started).Round(time.Millisecond), m.guestErrors())
	}
	return s
}

// waitDone waits for the guest to finish its script and power off.
func (m *machine) waitDone() {
	m.t.Helper()
	m.waitMark("done")
	select {
	case <-m.exited:
	case <-m.ctx.Done():
		m.t.Fatalf("QEMU did not exit after the guest powered off")
	}
	m.t.Logf("VM ran %v, boot to power-off", time.Since(m.started).Round(time.Millisecond))
}

// exit returns the exit status the guest reported for the run step name.
func (m *machine) exit(name string) int {
	m.t.Helper()
	s := m.waitMark("exit " + name + " ")
	n, err := strconv.Atoi(strings.TrimPrefix(s, "exit "+name+" "))
	if err != nil {
		m.t.Fatalf("bad exit line %q", s)
	}
	return n
}

// stdout returns what the run step name printed on its standard output.
func (m *machine) stdout(name string) []byte {
	m.t.Helper()
	return m.payload("stdout "+name+" ", m.waitMark("stdout "+name+" "))
}

// file returns the content of path that a file step printed.
func (m *machine) file(path string) []byte {
	m.t.Helper()
	prefix := "file " + path + " "
	if s, ok := m.con.find("missing " + path + " "); ok {
		m.t.Fatalf("guest: %s", s)
	}
	return m.payload(prefix, m.waitMark(prefix))
}

func (m *machine) payload(prefix, s string) []byte {
	m.t.Helper()
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, prefix))
	if err != nil {
		m.t.Fatalf("guest line %q: %v", s, err)
	}
	return b
}

// guestErrors returns the "SKVM error" lines so far.
func (m *machine) guestErrors() []string { return m.con.all("error ") }

// monitor runs one human-monitor command and returns its output.
func (m *machine) monitor(cmd string) string {
	m.t.Helper()
	c := m.dial(m.monitorPath())
	defer c.Close()
	if dl, ok := m.ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	r := bufio.NewReader(c)
	readPrompt := func() string {
		var out strings.Builder
		for !strings.HasSuffix(out.String(), "(qemu) ") {
			b, err := r.ReadByte()
			if err != nil {
				m.t.Fatalf("QEMU monitor, %q: %v (read %q)", cmd, err, out.String())
			}
			out.WriteByte(b)
		}
		return out.String()
	}
	readPrompt()
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		m.t.Fatalf("QEMU monitor, %q: %v", cmd, err)
	}
	out := strings.TrimSuffix(readPrompt(), "(qemu) ")
	// The monitor echoes the command line with terminal escapes first.
	if i := strings.Index(out, "\n"); i >= 0 {
		out = out[i+1:]
	}
	out = strings.TrimSpace(strings.ReplaceAll(out, "\r", ""))
	m.t.Logf("(qemu) %s: %q", cmd, out)
	return out
}

// consoleLog keeps the guest's console: every line goes to a file, and
// the "SKVM " lines are kept for the test to wait on.
type consoleLog struct {
	w       io.Writer
	mu      sync.Mutex
	lines   []string
	marks   []string
	changed chan struct{} // closed and replaced on every new mark and at EOF
	eof     chan struct{} // closed when the console has ended
	ended   bool
}

func newConsoleLog(w io.Writer) *consoleLog {
	return &consoleLog{w: w, changed: make(chan struct{}), eof: make(chan struct{})}
}

// read consumes the console until it ends.
func (c *consoleLog) read(r io.Reader) {
	defer close(c.eof)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		io.WriteString(c.w, line+"\n")
		c.mu.Lock()
		c.lines = append(c.lines, line)
		if i := strings.Index(line, "SKVM "); i >= 0 {
			c.marks = append(c.marks, line[i+len("SKVM "):])
			close(c.changed)
			c.changed = make(chan struct{})
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.ended = true
	close(c.changed)
	c.mu.Unlock()
}

// find returns the first mark starting with prefix.
func (c *consoleLog) find(prefix string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.marks {
		if strings.HasPrefix(s, prefix) {
			return s, true
		}
	}
	return "", false
}

// hasLine reports whether a console line starts with prefix and
// contains sub.
func (c *consoleLog) hasLine(prefix, sub string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// all returns every mark starting with prefix, in order.
func (c *consoleLog) all(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, s := range c.marks {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// wait blocks until a mark starting with prefix arrives, the console
// ends, or ctx ends.
func (c *consoleLog) wait(ctx context.Context, prefix string) (string, error) {
	for {
		c.mu.Lock()
		ch, ended := c.changed, c.ended
		c.mu.Unlock()
		if s, ok := c.find(prefix); ok {
			return s, nil
		}
		if ended {
			return "", errors.New("the VM stopped first")
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// tail returns the last n console lines.
func (c *consoleLog) tail(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lines
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// syncBuffer is a bytes.Buffer safe for one writer and other readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
