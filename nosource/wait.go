package nosource

import (
	"context"
	"fmt"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// udev's paths (systemd-udevd; libudev's udev_queue_get_queue_is_empty
// tests the queue file the same way `udevadm settle` does).
const (
	// UdevQueue exists while systemd-udevd has events it has not
	// finished: a CD-ROM whose driver is still loading, a block device
	// whose label is still being probed.
	UdevQueue = "/run/udev/queue"
	// udevControl is udevd's control socket: without it udev is not
	// running and nothing is coming.
	udevControl = "/run/udev/control"
)

// DefaultDeviceWait is the default bound of WaitForDevices (the
// configuration's boot.device_wait).
const DefaultDeviceWait = 10 * time.Second

// WaitOptions bound and pace WaitForDevices.
type WaitOptions struct {
	// Root is where /run/udev is found.
	Root sysroot.Root
	// Limit bounds the whole wait; zero or less means no wait at all.
	Limit time.Duration
	// Quiet is how long the queue must stay empty to count as drained:
	// a uevent for a device whose driver just loaded can follow the
	// event that loaded it. Zero means one second.
	Quiet time.Duration
	// Poll is how often the queue is looked at; zero means 100 ms.
	Poll time.Duration
}

// Waited says what WaitForDevices waited for and how it ended.
type Waited struct {
	// For is what was waited for, Outcome how it ended; both are for
	// the journal.
	For     string
	Outcome string
	// Took is how long the wait lasted (zero when there was none).
	Took time.Duration
	// Drained is true when the udev queue was seen empty for Quiet.
	Drained bool
}

func (w Waited) String() string {
	if w.Took == 0 {
		return w.Outcome
	}
	return fmt.Sprintf("waited %s for %s: %s", w.Took.Round(10*time.Millisecond), w.For, w.Outcome)
}

// WaitForDevices is called when a boot found no source at first: it waits,
// at most o.Limit, until systemd-udevd has no events left (its queue file
// gone and staying gone for o.Quiet), so that a seed device whose driver is
// still loading (a CD-ROM driver loaded from the real root, not the
// initramfs) exists before boot concludes "no source". It returns at once
// when udev is not running or the limit is zero, and early when ctx ends.
// The caller looks for the source once more afterwards.
func WaitForDevices(ctx context.Context, o WaitOptions) Waited {
	w := Waited{For: "the udev queue to drain (" + UdevQueue + ")"}
	if o.Limit <= 0 {
		w.Outcome = "boot.device_wait is 0: not waiting for late devices"
		return w
	}
	queue, control := o.Root.Path(UdevQueue), o.Root.Path(udevControl)
	if !exists(queue) && !exists(control) {
		w.Outcome = "udev is not running (no " + udevControl + "): no device is coming"
		return w
	}
	quiet, poll := o.Quiet, o.Poll
	if quiet <= 0 {
		quiet = time.Second
	}
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	start := time.Now()
	deadline := time.NewTimer(o.Limit)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var emptySince time.Time
	busy := false
	for {
		now := time.Now()
		if exists(queue) {
			busy, emptySince = true, time.Time{}
		} else if emptySince.IsZero() {
			emptySince = now
		} else if now.Sub(emptySince) >= quiet {
			w.Took, w.Drained = now.Sub(start), true
			w.Outcome = "the udev queue drained"
			if !busy {
				w.Outcome = "the udev queue stayed empty"
			}
			return w
		}
		select {
		case <-ctx.Done():
			w.Took = time.Since(start)
			w.Outcome = "stopped: " + ctx.Err().Error()
			return w
		case <-deadline.C:
			w.Took = time.Since(start)
			w.Outcome = fmt.Sprintf("the limit (boot.device_wait %s) was reached with udev still busy", o.Limit)
			if !exists(queue) {
				w.Outcome = fmt.Sprintf("the limit (boot.device_wait %s) was reached", o.Limit)
			}
			return w
		case <-tick.C:
		}
	}
}
