package main

// seedkeeper watch on hostile inputs: the daemon starts on a root whose
// seed is small, the seed's files are then replaced by a case's (at a
// limit, or one past it), and a NIC of an allowed driver is added, so that
// the watch reads the metadata again, as it does for a hot-added NIC,
// while it runs. Its peak RSS is the process's whole life (wait4), in a
// network namespace of its own.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// watchNS is a network namespace the watch steps run in.
type watchNS struct {
	name  string
	nl    *netlink.Handle
	pairs int
}

// newWatchNS makes a namespace, or says why it cannot.
func newWatchNS() (*watchNS, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root for a network namespace")
	}
	name := fmt.Sprintf("skwatch%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add: %s", oneLine(string(out)))
	}
	nsh, err := netns.GetFromName(name)
	if err != nil {
		exec.Command("ip", "netns", "del", name).Run()
		return nil, err
	}
	defer nsh.Close()
	nl, err := netlink.NewHandleAt(nsh)
	if err != nil {
		exec.Command("ip", "netns", "del", name).Run()
		return nil, err
	}
	return &watchNS{name: name, nl: nl}, nil
}

func (w *watchNS) close() {
	w.nl.Close()
	exec.Command("ip", "netns", "del", w.name).Run()
}

// addNIC adds a veth pair in the namespace (the watch's allowlist is
// veth): a hot-added NIC.
func (w *watchNS) addNIC() error {
	w.pairs++
	return w.nl.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("skw%d", w.pairs)}, PeerName: fmt.Sprintf("skp%d", w.pairs)})
}

// watchSettle is how long the watch is given after the NIC is added: its
// re-reads for a NIC not in the configuration are 1 and 3 s apart, so
// the first and the next two happen within it.
const watchSettle = 5 * time.Second

// watchStep runs seedkeeper watch on a small seed under base/watch-root,
// delivers the case's seed files (base/seed) while it runs, adds a NIC,
// and records the process as the case's "watch".
func (c *hostileCase) watchStep(ctx context.Context, ns *watchNS, bin, base string, logf func(string, ...any)) {
	s := hostileStep{cmd: "watch"}
	defer func() { c.steps = append(c.steps, s) }()
	root := filepath.Join(base, "watch-root")
	seedDir := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	if err := hostileRoot(root); err != nil {
		s.bad = err.Error()
		return
	}
	small := map[string]string{
		"meta-data":      "instance-id: iid-limits\n",
		"user-data":      "#cloud-config\n",
		"network-config": "version: 2\nethernets:\n  nic0:\n    match:\n      macaddress: \"52:54:00:aa:bb:cc\"\n    dhcp4: true\n",
	}
	for n, d := range small {
		if err := writeFileMode(filepath.Join(seedDir, n), d, 0o600); err != nil {
			s.bad = err.Error()
			return
		}
	}
	if p, err := runProc(ctx, nil, bin, "boot", "--root", root, "--network", "plan"); err != nil || p.exit > 1 {
		s.bad = fmt.Sprintf("boot before watch: exit %d %v: %s", p.exit, err, oneLine(string(p.stderr)))
		return
	}

	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns.name, bin, "watch", "--root", root, "--drivers", "veth", "--network", "plan")
	cmd.Env = cleanEnv()
	var errb syncBuffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		s.bad = err.Error()
		return
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	finish := func() {
		s.dur = time.Since(start)
		if st := cmd.ProcessState; st != nil {
			s.exit, s.rss = st.ExitCode(), maxRSS(st)
		}
		if out := errb.String(); strings.Contains(out, "panic:") || strings.Contains(out, "fatal error:") {
			s.bad = "crashed"
		}
	}
	// Ready: it has read the metadata for nothing (--drivers) and
	// reconciled the links there are; it logs the allowlist first.
	for !strings.Contains(errb.String(), "allowlist") {
		select {
		case err := <-exited:
			finish()
			s.bad = fmt.Sprintf("watch exited before it was ready (%v): %s", err, oneLine(errb.String()))
			return
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			s.bad = ctx.Err().Error()
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(500 * time.Millisecond) // the first reconcile

	// The hostile seed, delivered while the watch runs: where a NoCloud
	// read finds it (boot imported the small seed, a person's, so the
	// read is of the imported copy), and in the seed directory too.
	// Copied a block at a time: a child's peak RSS starts at its
	// parent's, so this process never holds a file.
	ents, err := os.ReadDir(filepath.Join(base, "seed"))
	for _, e := range ents {
		if err != nil {
			break
		}
		for _, dst := range []string{filepath.Join(root, "var/lib/seedkeeper/imported-seed"), seedDir} {
			if err = copyFile(filepath.Join(base, "seed", e.Name()), filepath.Join(dst, e.Name())); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = ns.addNIC()
	}
	if err != nil {
		cmd.Process.Kill()
		<-exited
		s.bad = err.Error()
		return
	}
	select {
	case err := <-exited:
		finish()
		if s.bad == "" {
			s.bad = fmt.Sprintf("watch exited on the hostile seed (%v): %s", err, oneLine(errb.String()))
		}
		return
	case <-time.After(watchSettle):
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
		s.bad = "did not stop on SIGTERM"
	}
	finish()
	logf("hostile: %s: watch logged %d lines; last: %s", c.name, strings.Count(errb.String(), "\n"), oneLine(lastLine(errb.String())))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// syncBuffer is a bytes.Buffer the process writes while it is read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// copyFile copies src to dst (mode 0600) through a small buffer.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.CopyBuffer(out, in, make([]byte, 64<<10)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
