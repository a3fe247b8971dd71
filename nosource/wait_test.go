package nosource

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// fakeUdev makes root look like a system where systemd-udevd runs, with
// its queue busy or not. Without a /proc under root the control socket
// stands for the daemon.
func fakeUdev(t *testing.T, busy bool) sysroot.Root {
	root := sysroot.Root(t.TempDir())
	put(t, root, udevControl, "")
	if busy {
		put(t, root, UdevQueue, "")
	}
	return root
}

// fakeProc gives root a /proc with one process per name (PIDs from 1).
func fakeProc(t *testing.T, root sysroot.Root, names ...string) {
	t.Helper()
	if err := os.MkdirAll(root.Path("/proc/self"), 0o755); err != nil {
		t.Fatal(err)
	}
	put(t, root, "/proc/sys/kernel/random/boot_id", "not a process\n")
	for i, n := range names {
		put(t, root, "/proc/"+string(rune('1'+i))+"/comm", n+"\n")
	}
}

// stepClock is a clock that moves only when WaitForDevices waits: After
// advances it by d at once and then runs the events due by then, which
// change the fake /run/udev as udevd would. No test waits on real time.
type stepClock struct {
	now    time.Time
	start  time.Time
	events []event
}

type event struct {
	at time.Duration // since the start
	do func()
}

func newStepClock(events ...event) *stepClock {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &stepClock{now: t0, start: t0, events: events}
}

func (c *stepClock) Now() time.Time { return c.now }

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.now = c.now.Add(d)
	rest := c.events[:0]
	for _, e := range c.events {
		if c.now.Sub(c.start) >= e.at {
			e.do()
		} else {
			rest = append(rest, e)
		}
	}
	c.events = rest
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func remove(t *testing.T, p string) func() {
	return func() {
		if err := os.Remove(p); err != nil {
			t.Error(err)
		}
	}
}

func create(t *testing.T, root sysroot.Root, p string) func() {
	return func() { put(t, root, p, "") }
}

func TestWaitForDevicesNoWait(t *testing.T) {
	for name, tc := range map[string]struct {
		root  sysroot.Root
		limit time.Duration
		want  string
	}{
		"limit 0":      {fakeUdev(t, true), 0, "boot.device_wait is 0"},
		"no udev":      {sysroot.Root(t.TempDir()), time.Minute, "udev is not running"},
		"negative too": {fakeUdev(t, true), -time.Second, "boot.device_wait is 0"},
	} {
		w := WaitForDevices(context.Background(), WaitOptions{Root: tc.root, Limit: tc.limit, clock: newStepClock()})
		if w.Took != 0 || w.Drained || !strings.Contains(w.Outcome, tc.want) || w.String() != w.Outcome {
			t.Errorf("%s: %+v; want no wait, %q", name, w, tc.want)
		}
	}
}

// No udev at all, with a /proc that shows no udevd either: no wait.
func TestWaitForDevicesNoUdevProcess(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	fakeProc(t, root, "systemd", "(udev-worker)", "journald")
	w := WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: time.Minute, clock: newStepClock()})
	if w.Took != 0 || w.Drained || !strings.Contains(w.Outcome, "no udevd process") {
		t.Errorf("wait = %+v", w)
	}
}

// A CD-ROM whose driver loads from the real root (the late CD-ROM): the
// queue is busy when boot first looks, then drains.
func TestWaitForDevicesUntilDrained(t *testing.T) {
	root := fakeUdev(t, true)
	clk := newStepClock(event{3 * time.Second, remove(t, root.Path(UdevQueue))}) // udevd finishes the CD-ROM's events
	w := WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: time.Minute, clock: clk})
	if !w.Drained || w.Outcome != "the udev queue drained" || !strings.Contains(w.For, UdevQueue) {
		t.Errorf("wait = %+v", w)
	}
	// Drained once the queue stayed gone for Quiet (1 s): 3 s + 1 s.
	if w.Took != 4*time.Second {
		t.Errorf("took %v by the wait's clock, want 4s", w.Took)
	}
	if s := w.String(); s != "waited 4s for the udev queue to drain (/run/udev/queue): the udev queue drained" {
		t.Errorf("String = %q", s)
	}
}

// A device whose driver load queues new events just after the queue
// emptied (the sr0 uevent after the scsi one): the quiet period starts
// again.
func TestWaitForDevicesQueueRefills(t *testing.T) {
	root := fakeUdev(t, true)
	q := root.Path(UdevQueue)
	clk := newStepClock(
		event{time.Second, remove(t, q)},
		event{1500 * time.Millisecond, create(t, root, UdevQueue)},
		event{2 * time.Second, remove(t, q)},
	)
	w := WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: time.Minute, Poll: 100 * time.Millisecond, clock: clk})
	if !w.Drained || w.Took != 3*time.Second {
		t.Errorf("wait = %+v; want drained after 3s (2 s + 1 s quiet) by the wait's clock", w)
	}
}

func TestWaitForDevicesQueueEmpty(t *testing.T) {
	w := WaitForDevices(context.Background(), WaitOptions{Root: fakeUdev(t, false), Limit: time.Minute, clock: newStepClock()})
	if !w.Drained || w.Outcome != "the udev queue stayed empty" || w.Took != time.Second {
		t.Errorf("wait = %+v", w)
	}
}

func TestWaitForDevicesLimit(t *testing.T) {
	w := WaitForDevices(context.Background(), WaitOptions{Root: fakeUdev(t, true), Limit: 10 * time.Second, clock: newStepClock()})
	if w.Drained || w.Outcome != "the limit (boot.device_wait 10s) was reached with udev still busy" || w.Took != 10*time.Second {
		t.Errorf("wait = %+v", w)
	}
}

// The unit seedkeeper-boot once started 2.3 s before systemd-udevd. The
// socket unit had made /run/udev/control, udevd had not started, so no
// queue file existed while the coldplug's events waited in the kernel;
// the wait took the missing queue for an idle udev after 1 s and the
// CD-ROM was missed. An empty queue counts only once udevd runs.
func TestWaitForDevicesUdevdNotStarted(t *testing.T) {
	root := fakeUdev(t, false)
	fakeProc(t, root, "systemd", "systemd-journald")
	clk := newStepClock(
		event{2300 * time.Millisecond, func() { fakeProc(t, root, "systemd", "systemd-journald", "systemd-udevd") }},
		event{2400 * time.Millisecond, create(t, root, UdevQueue)}, // udevd reads the coldplug's events
		event{9 * time.Second, remove(t, root.Path(UdevQueue))},
	)
	w := WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: time.Minute, clock: clk})
	if !w.Drained || w.Took != 10*time.Second || w.Outcome != "the udev queue drained (udevd started 2.3s into the wait)" {
		t.Errorf("wait = %+v", w)
	}
}

// `seedkeeper boot` run without systemd (an initramfs hook, another init):
// udevd has started but has not made its control socket yet. Its process
// is enough to wait for it.
func TestWaitForDevicesUdevdNotListening(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	fakeProc(t, root, "init", "udevd")
	clk := newStepClock(
		event{200 * time.Millisecond, create(t, root, udevControl)},
		event{300 * time.Millisecond, create(t, root, UdevQueue)},
		event{5 * time.Second, remove(t, root.Path(UdevQueue))},
	)
	w := WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: time.Minute, clock: clk})
	if !w.Drained || w.Took != 6*time.Second || w.Outcome != "the udev queue drained" {
		t.Errorf("wait = %+v", w)
	}
}

// A control socket whose udevd never starts (the daemon masked): the
// limit ends the wait, and the journal says what was missing.
func TestWaitForDevicesUdevdNeverStarts(t *testing.T) {
	root := fakeUdev(t, false)
	fakeProc(t, root, "systemd")
	w := WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: 5 * time.Second, clock: newStepClock()})
	if w.Drained || w.Took != 5*time.Second || w.Outcome != "the limit (boot.device_wait 5s) was reached before udevd started" {
		t.Errorf("wait = %+v", w)
	}
}

func TestWaitForDevicesStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The wall clock: the context has ended, so nothing is waited for.
	w := WaitForDevices(ctx, WaitOptions{Root: fakeUdev(t, true), Limit: time.Hour})
	if w.Drained || !strings.HasPrefix(w.Outcome, "stopped: ") {
		t.Errorf("wait = %+v", w)
	}
}

// The configuration's default is the bound documented here.
func TestDefaultDeviceWaitIsTheConfigDefault(t *testing.T) {
	if d := time.Duration(config.Default().Boot.DeviceWait); d != DefaultDeviceWait {
		t.Errorf("config default boot.device_wait %v, nosource.DefaultDeviceWait %v", d, DefaultDeviceWait)
	}
}
