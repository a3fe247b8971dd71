package agent_test

import (
	"context"
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
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/nstest"
	"github.com/seedkeeper/seedkeeper/internal/syncbuf"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// newTestNetns is a network namespace of the test's own: the flows run in
// it through Env.Netns, and the test looks at its links through netlink.
func newTestNetns(t *testing.T) *nstest.NS { return nstest.New(t, "skagent") }

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// addTap creates a tap device (driver "tun") with mac in peers and moves
// it into n, so that it appears there with its final MAC.
func addTap(t *testing.T, n, peers *nstest.NS, name, mac string) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) to make a tap device: install iproute2")
	}
	for _, args := range [][]string{
		{"-n", peers.Name, "tuntap", "add", "dev", name, "mode", "tap"},
		{"-n", peers.Name, "link", "set", name, "address", mac},
		{"-n", peers.Name, "link", "set", name, "netns", n.Name},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %q: %v\n%s", args, err, out)
		}
	}
}

// syncBuffer is a log the code under test writes while the test reads it.
type syncBuffer = syncbuf.Buffer

// notifyLog collects, one line each, what a flow tells the service
// manager, as sd_notify would carry it.
type notifyLog struct {
	mu sync.Mutex
	l  []string
}

func (n *notifyLog) notify(state string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.l = append(n.l, strings.Split(state, "\n")...)
}

func (n *notifyLog) lines() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.l)
}

func (n *notifyLog) has(s string) bool { return slices.Contains(n.lines(), s) }

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

// netEnv is the Env the CLI makes for --root root (the configuration
// under it, the log as text), with the flows' netlink work in n.
func netEnv(root string, n *nstest.NS, log *syncBuffer) agent.Env {
	e := agent.LoadEnv(root, "", agent.NewLogger(log))
	e.Netns = int(n.NS)
	return e
}

// watchRun is agent.Watch running in a goroutine, as "seedkeeper watch
// --network apply" runs it.
type watchRun struct {
	log    *syncBuffer
	notify *notifyLog
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// startWatch runs agent.Watch on root in n with the drivers given ("" for
// the allowlist of the metadata or the configuration); it is stopped at
// cleanup if the test did not stop it.
func startWatch(t *testing.T, n *nstest.NS, root, drivers string) *watchRun {
	t.Helper()
	return startWatchWith(t, n, root, drivers, nil)
}

// startWatchWith is startWatch with the Env changed by with (nil: as is).
func startWatchWith(t *testing.T, n *nstest.NS, root, drivers string, with func(*agent.Env)) *watchRun {
	t.Helper()
	w := &watchRun{log: &syncBuffer{}, notify: &notifyLog{}, done: make(chan struct{})}
	e := netEnv(root, n, w.log)
	e.Notify = w.notify.notify
	if with != nil {
		with(&e)
	}
	o := agent.WatchOptions{Network: agent.NetworkApply}
	if drivers != "" {
		a := hotplug.NewAllowlist(hotplug.OriginFlag, strings.Split(drivers, ","))
		o.Drivers = &a
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() { w.err = agent.Watch(ctx, e, o); close(w.done) }()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// stop ends the watch as SIGTERM does, and checks that it returns nil.
func (w *watchRun) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("watch did not stop within 20s of its context ending\n%s", w.log)
	}
	if w.err != nil {
		t.Errorf("watch after its context ended: %v, want nil\n%s", w.err, w.log)
	}
}

func (w *watchRun) waitLog(t *testing.T, s string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%q in the log", s), func() bool {
		select {
		case <-w.done:
			t.Fatalf("watch returned (%v) before logging %q\n%s", w.err, s, w.log)
		default:
		}
		return strings.Contains(w.log.String(), s)
	})
}

// fileState tells a rewrite of a file.
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

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readStatus is the status file under root.
func readStatus(t testing.TB, root string) *agent.Status {
	t.Helper()
	st, err := agent.ReadStatus(sysroot.Root(root))
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// networkdFiles lists the networkd files of one kind (".network",
// ".netdev") under root.
func networkdFiles(root, ext string) []string {
	files, _ := filepath.Glob(filepath.Join(root, agent.NetworkDir, "05-seedkeeper-*"+ext))
	return files
}
