package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Where the harness puts this program's inputs in the initramfs.
const (
	modulesList = "/skvm/modules"
	vmModules   = "/skvm/modules.vm" // the modules of one VM, loaded after modulesList
	scriptPath  = "/skvm/script"
)

// console writes whole lines to the console, one write each, so that the
// lines of concurrent programs do not mix.
type console struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *console) line(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.w, s+"\n")
}

// mark prints one SKVM fact line.
func (c *console) mark(format string, args ...any) {
	c.line("SKVM " + fmt.Sprintf(format, args...))
}

// prefixer copies a program's output to the console line by line, each
// line prefixed with the program's name.
func (c *console) prefixer(name string, r io.Reader, done chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		c.line("[" + name + "] " + sc.Text())
	}
	close(done)
}

// proc is a program started by a bg step.
type proc struct {
	cmd  *exec.Cmd
	exit chan error    // its Wait result, once
	done chan struct{} // closed when its output is copied
}

type runner struct {
	con   *console
	procs map[string]*proc
	vsock *vsockHost // the mdata-vsock step's host
}

func main() {
	con := &console{w: os.Stdout}
	con.mark("init start")
	if err := setup(); err != nil {
		con.mark("error setup: %v", err)
	}
	loadModules(con, modulesList)
	loadModules(con, vmModules)
	r := &runner{con: con, procs: map[string]*proc{}}
	if err := r.script(scriptPath); err != nil {
		con.mark("error script: %v", err)
	}
	for name, p := range r.procs {
		r.stop(name, p)
	}
	if r.vsock != nil {
		if err := r.stopVsockHost(); err != nil {
			con.mark("error mdata-vsock-stop: %v", err)
		}
	}
	con.mark("done")
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		con.mark("error poweroff: %v", err)
	}
	select {}
}

// setup mounts the pseudo filesystems and makes the directories
// seedkeeper expects.
func setup() error {
	var errs []error
	for _, m := range []struct{ fstype, target, opts string }{
		{"proc", "/proc", ""},
		{"sysfs", "/sys", ""},
		{"devtmpfs", "/dev", "mode=0755"},
		{"tmpfs", "/run", "mode=0755"},
		{"tmpfs", "/tmp", "mode=1777"},
	} {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := unix.Mount(m.fstype, m.target, m.fstype, unix.MS_NOSUID, m.opts); err != nil {
			errs = append(errs, fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err))
		}
	}
	for _, d := range []string{"/var/lib", "/var/tmp", "/etc", "/run/systemd"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			errs = append(errs, err)
		}
	}
	// As on a distribution: named network namespaces are made under
	// /var/run/netns (vishvananda/netns) and looked up under /run/netns.
	if _, err := os.Lstat("/var/run"); errors.Is(err, os.ErrNotExist) {
		if err := os.Symlink("/run", "/var/run"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := netlink.LinkSetUp(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo"}}); err != nil {
		errs = append(errs, fmt.Errorf("lo up: %w", err))
	}
	return errors.Join(errs...)
}

// loadModules loads the modules listed in the file list, in order.
func loadModules(con *console, list string) {
	b, err := os.ReadFile(list)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			con.mark("error modules: %v", err)
		}
		return
	}
	for _, p := range strings.Fields(string(b)) {
		name := strings.TrimSuffix(filepath.Base(p), ".ko")
		f, err := os.Open(p)
		if err != nil {
			con.mark("error module %s: %v", name, err)
			continue
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			con.mark("error module %s: %v", name, err)
			continue
		}
		con.mark("module %s", name)
	}
}

// script runs the steps of the script file.
func (r *runner) script(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if err := r.step(f[0], f[1:]); err != nil {
			r.con.mark("error %s: %v", f[0], err)
			if f[0] == "bg" {
				// What follows needs the daemon: do not wait for it.
				return fmt.Errorf("stopped: the bg step failed")
			}
		}
	}
	return nil
}

func (r *runner) step(op string, args []string) error {
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("want at least %d arguments, have %q", n, args)
		}
		return nil
	}
	switch op {
	case "run":
		if err := need(2); err != nil {
			return err
		}
		return r.run(args[0], args[1:])
	case "bg":
		if err := need(2); err != nil {
			return err
		}
		return r.bg(args[0], args[1:])
	case "stop":
		if err := need(1); err != nil {
			return err
		}
		p, ok := r.procs[args[0]]
		if !ok {
			return fmt.Errorf("no background program %q", args[0])
		}
		r.stop(args[0], p)
		return nil
	case "file", "sha":
		if err := need(1); err != nil {
			return err
		}
		b, err := os.ReadFile(args[0])
		if err != nil {
			r.con.mark("missing %s %v", args[0], err)
			return nil
		}
		if op == "file" {
			r.con.mark("file %s %s", args[0], base64.StdEncoding.EncodeToString(b))
		} else {
			sum := sha256.Sum256(b)
			r.con.mark("sha256 %s %s", args[0], hex.EncodeToString(sum[:]))
		}
		return nil
	case "wait-path":
		if err := need(2); err != nil {
			return err
		}
		d, err := seconds(args[1])
		if err != nil {
			return err
		}
		err = poll(d, func() (bool, error) {
			_, err := os.Stat(args[0])
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		r.con.mark("path %s", args[0])
		return nil
	case "wait-addr":
		if err := need(3); err != nil {
			return err
		}
		return r.waitAddr(args[0], args[1], args[2])
	case "links":
		return r.links()
	case "env":
		if err := need(1); err != nil {
			return err
		}
		if len(args) == 1 {
			os.Unsetenv(args[0])
			r.con.mark("env %s", args[0])
			return nil
		}
		v := strings.Join(args[1:], " ")
		os.Setenv(args[0], v)
		r.con.mark("env %s=%s", args[0], v)
		return nil
	case "mdata-vsock":
		if err := need(1); err != nil {
			return err
		}
		return r.startVsockHost(args[0])
	case "mdata-vsock-fault":
		if err := need(1); err != nil {
			return err
		}
		count := ""
		if len(args) > 1 {
			count = args[1]
		}
		return r.setVsockFault(args[0], count)
	case "mdata-vsock-stop":
		return r.stopVsockHost()
	case "mark":
		r.con.mark("mark %s", strings.Join(args, " "))
		return nil
	}
	return fmt.Errorf("unknown step")
}

// run runs a program to the end, copying its output to the console.
func (r *runner) run(name string, argv []string) error {
	var stdout bytes.Buffer
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = io.MultiWriter(&stdout, outW)
	cmd.Stderr = errW
	d1, d2 := make(chan struct{}), make(chan struct{})
	go r.con.prefixer(name, outR, d1)
	go r.con.prefixer(name, errR, d2)
	err := cmd.Run()
	outW.Close()
	errW.Close()
	<-d1
	<-d2
	code := exitCode(err)
	r.con.mark("stdout %s %s", name, base64.StdEncoding.EncodeToString(stdout.Bytes()))
	r.con.mark("exit %s %d", name, code)
	if code < 0 {
		return err
	}
	return nil
}

// bg starts a daemon and waits for its sd_notify READY=1.
func (r *runner) bg(name string, argv []string) error {
	sock := "/run/skvm-notify-" + name
	os.Remove(sock)
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer ln.Close()
	outR, outW := io.Pipe()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	cmd.Stdout, cmd.Stderr = outW, outW
	done := make(chan struct{})
	go r.con.prefixer(name, outR, done)
	if err := cmd.Start(); err != nil {
		outW.Close()
		return err
	}
	p := &proc{cmd: cmd, exit: make(chan error, 1), done: done}
	r.procs[name] = p
	go func() {
		err := cmd.Wait()
		outW.Close()
		p.exit <- err
	}()
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ln.Read(buf)
			if err != nil {
				ready <- err
				return
			}
			for _, l := range strings.Split(string(buf[:n]), "\n") {
				if l == "READY=1" {
					ready <- nil
					return
				}
			}
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			return err
		}
		r.con.mark("ready %s", name)
		return nil
	case err := <-p.exit:
		delete(r.procs, name)
		<-done
		r.con.mark("exit %s %d", name, exitCode(err))
		return fmt.Errorf("%s exited before READY=1", name)
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s: no READY=1 within 60s", name)
	}
}

// stop ends a background program with SIGTERM (SIGKILL after 20 s).
func (r *runner) stop(name string, p *proc) {
	delete(r.procs, name)
	p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-p.exit:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		err = <-p.exit
	}
	<-p.done
	r.con.mark("exit %s %d", name, exitCode(err))
}

// waitAddr waits until the link with the MAC carries the address.
func (r *runner) waitAddr(mac, cidr, secs string) error {
	d, err := seconds(secs)
	if err != nil {
		return err
	}
	want, err := netlink.ParseAddr(cidr)
	if err != nil {
		return err
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return err
	}
	var ifname string
	err = poll(d, func() (bool, error) {
		links, err := netlink.LinkList()
		if err != nil {
			return false, err
		}
		for _, l := range links {
			a := l.Attrs()
			if !bytes.Equal(a.HardwareAddr, hw) {
				continue
			}
			addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
			if err != nil {
				return false, err
			}
			for _, ad := range addrs {
				if ad.IPNet.String() == want.IPNet.String() {
					ifname = a.Name
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s on %s: %w", cidr, mac, err)
	}
	r.con.mark("addr %s %s %s", mac, cidr, ifname)
	return nil
}

// links prints every link with its MAC, driver and addresses.
func (r *runner) links() error {
	links, err := netlink.LinkList()
	if err != nil {
		return err
	}
	for _, l := range links {
		a := l.Attrs()
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		var list []string
		for _, ad := range addrs {
			list = append(list, ad.IPNet.String())
		}
		driver := "-"
		if t, err := os.Readlink("/sys/class/net/" + a.Name + "/device/driver"); err == nil {
			driver = filepath.Base(t)
		}
		mac := a.HardwareAddr.String()
		if mac == "" {
			mac = "-"
		}
		addrList := strings.Join(list, ",")
		if addrList == "" {
			addrList = "-"
		}
		r.con.mark("link %s %s %s %s %s", a.Name, mac, driver, a.OperState, addrList)
	}
	return nil
}

// poll calls cond every 100 ms until it holds, fails, or d has passed.
func poll(d time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %v", d)
		case <-t.C:
		}
	}
}

func seconds(s string) (time.Duration, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("seconds %q: want a positive integer", s)
	}
	return time.Duration(n) * time.Second, nil
}

// exitCode is the program's exit status, 128+signal when a signal ended
// it, or -1 when it could not run.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}
