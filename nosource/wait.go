package nosource

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// udev's paths (systemd-udevd; libudev's udev_queue_get_queue_is_empty
// tests the queue file the same way `udevadm settle` does).
const (
	// UdevQueue exists while systemd-udevd has events it has not
	// finished: a CD-ROM whose driver is still loading, a block device
	// whose label is still being probed.
	UdevQueue = "/run/udev/queue"
	// udevControl is udevd's control socket. Under systemd the socket
	// unit makes it before udevd starts; elsewhere udevd makes it once it
	// listens.
	udevControl = "/run/udev/control"
)

// udevdNames are the process names (/proc/PID/comm) of udev's daemon:
// systemd's and eudev's. Its workers have other names.
var udevdNames = []string{"systemd-udevd", "udevd"}

// DefaultDeviceWait is the default bound of WaitForDevices (the
// configuration's boot.device_wait). The wait ends as soon as udev's queue
// has drained, so the bound costs time only on a boot that has no source
// while udev stays busy (an event that hangs, a boot already degraded),
// whereas a bound too short leaves a machine unconfigured for a boot.
// A CD-ROM driver loaded late (3 s) needed 11.3 to 22.3 s in seven runs
// of an emulated guest on a loaded host, and 10 s was once 0.3 s short:
// 60 s keeps more than twice the worst seen, below systemd's 90 s for a
// device a unit needs and udevadm settle's 120 s.
const DefaultDeviceWait = 60 * time.Second

// WaitOptions bound and pace WaitForDevices.
type WaitOptions struct {
	// Root is where /run/udev and /proc are found.
	Root sysroot.Root
	// Limit bounds the whole wait; zero or less means no wait at all.
	Limit time.Duration
	// Quiet is how long the queue must stay empty to count as drained:
	// a uevent for a device whose driver just loaded can follow the
	// event that loaded it. Zero means one second.
	Quiet time.Duration
	// Poll is how often the queue is looked at; zero means 100 ms.
	Poll time.Duration

	clock clock // nil: the wall clock; tests set their own
}

// clock is the time WaitForDevices keeps.
type clock interface {
	Now() time.Time
	After(time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Waited says what WaitForDevices waited for and how it ended.
type Waited struct {
	// For is what was waited for, Outcome how it ended; both are for
	// the journal.
	For     string
	Outcome string
	// Took is how long the wait lasted (zero when there was none).
	Took time.Duration
	// Drained is true when the udev queue was seen empty for Quiet
	// while udevd was running.
	Drained bool
}

func (w Waited) String() string {
	if w.Took == 0 {
		return w.Outcome
	}
	return fmt.Sprintf("waited %s for %s: %s", w.Took.Round(10*time.Millisecond), w.For, w.Outcome)
}

// WaitForDevices is called when a boot found no source at first: it waits,
// at most o.Limit, until systemd-udevd runs and has no events left (its
// queue file gone and staying gone for o.Quiet), so that a seed device
// whose driver is still loading (a CD-ROM driver loaded from the real
// root, not the initramfs) exists before boot concludes "no source". It
// returns at once when udev is not there at all (no queue, no control
// socket, no udevd process) or the limit is zero, and early when ctx ends.
// The caller looks for the source once more afterwards.
//
// An empty queue counts only once udevd is running: the coldplug's events
// wait in the kernel's socket until udevd starts, and until then there is
// no queue file however many devices are coming. udevd is running when a
// process of its name is in /proc; when /proc cannot be listed (a --root
// without one) the control socket stands for it.
func WaitForDevices(ctx context.Context, o WaitOptions) Waited {
	w := Waited{For: "the udev queue to drain (" + UdevQueue + ")"}
	if o.Limit <= 0 {
		w.Outcome = "boot.device_wait is 0: not waiting for late devices"
		return w
	}
	u := udev{root: o.Root}
	running := u.busy() || u.daemon()
	if !running && !exists(o.Root, udevControl) {
		w.Outcome = "udev is not running (no " + udevControl + ", no udevd process): no device is coming"
		return w
	}
	quiet, poll, clk := o.Quiet, o.Poll, o.clock
	if quiet <= 0 {
		quiet = time.Second
	}
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	if clk == nil {
		clk = wallClock{}
	}
	start := clk.Now()
	end := start.Add(o.Limit)
	var emptySince, startedAt time.Time // startedAt: when udevd was first seen, if it was not at the start
	busy := false
	for {
		now := clk.Now()
		queued := u.busy()
		if !running && (queued || u.daemon()) {
			running, startedAt = true, now
		}
		switch {
		case queued:
			busy, emptySince = true, time.Time{}
		case !running:
			// udevd has not started: an empty queue says nothing.
		case emptySince.IsZero():
			emptySince = now
		case now.Sub(emptySince) >= quiet:
			w.Took, w.Drained = now.Sub(start), true
			w.Outcome = "the udev queue drained"
			if !busy {
				w.Outcome = "the udev queue stayed empty"
			}
			if !startedAt.IsZero() {
				w.Outcome += fmt.Sprintf(" (udevd started %s into the wait)", startedAt.Sub(start).Round(10*time.Millisecond))
			}
			return w
		}
		if !now.Before(end) {
			w.Took = now.Sub(start)
			switch {
			case queued:
				w.Outcome = fmt.Sprintf("the limit (boot.device_wait %s) was reached with udev still busy", o.Limit)
			case !running:
				w.Outcome = fmt.Sprintf("the limit (boot.device_wait %s) was reached before udevd started", o.Limit)
			default:
				w.Outcome = fmt.Sprintf("the limit (boot.device_wait %s) was reached", o.Limit)
			}
			return w
		}
		select {
		case <-ctx.Done():
			w.Took = clk.Now().Sub(start)
			w.Outcome = "stopped: " + ctx.Err().Error()
			return w
		case <-clk.After(min(poll, end.Sub(now))):
		}
	}
}

// udev looks at udev under root.
type udev struct {
	root sysroot.Root
}

func (u udev) busy() bool { return exists(u.root, UdevQueue) }

// daemon reports whether udevd is running: a udevd process in /proc, or,
// when /proc cannot be listed, the control socket.
func (u udev) daemon() bool {
	ents, err := fsutil.ReadDirIn(string(u.root), "/proc")
	if err != nil {
		return exists(u.root, udevControl)
	}
	for _, e := range ents {
		if !isPID(e.Name()) {
			continue
		}
		// Under an image root /proc is the image's: a FIFO or a link
		// out of it is refused, never waited on or followed.
		b, err := fsutil.ReadFileIn(context.Background(), string(u.root), "/proc/"+e.Name()+"/comm", fsutil.TinyFile)
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		for _, n := range udevdNames {
			if strings.TrimSpace(string(b)) == n {
				return true
			}
		}
	}
	return false
}

func isPID(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
