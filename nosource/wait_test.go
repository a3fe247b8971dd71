package nosource

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// fakeUdev makes root look like a system where systemd-udevd runs, with
// its queue busy or not.
func fakeUdev(t *testing.T, busy bool) sysroot.Root {
	root := sysroot.Root(t.TempDir())
	put(t, root, udevControl, "")
	if busy {
		put(t, root, UdevQueue, "")
	}
	return root
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
		w := WaitForDevices(context.Background(), WaitOptions{Root: tc.root, Limit: tc.limit})
		if w.Took != 0 || w.Drained || !strings.Contains(w.Outcome, tc.want) || w.String() != w.Outcome {
			t.Errorf("%s: %+v; want no wait, %q", name, w, tc.want)
		}
	}
}

// A CD-ROM whose driver loads from the real root (issue 16, case 3): the
// queue is busy when boot first looks, then drains.
func TestWaitForDevicesUntilDrained(t *testing.T) {
	root := fakeUdev(t, true)
	go func() {
		time.Sleep(30 * time.Millisecond) // udevd finishes the CD-ROM's events
		os.Remove(root.Path(UdevQueue))
	}()
	w := WaitForDevices(context.Background(), WaitOptions{Root: root, Limit: time.Minute, Quiet: 20 * time.Millisecond, Poll: 5 * time.Millisecond})
	if !w.Drained || w.Outcome != "the udev queue drained" || w.Took == 0 || !strings.Contains(w.For, UdevQueue) {
		t.Errorf("wait = %+v", w)
	}
	if s := w.String(); !strings.HasPrefix(s, "waited ") || !strings.Contains(s, "for the udev queue to drain (/run/udev/queue): the udev queue drained") {
		t.Errorf("String = %q", s)
	}
}

func TestWaitForDevicesQueueEmpty(t *testing.T) {
	w := WaitForDevices(context.Background(), WaitOptions{Root: fakeUdev(t, false), Limit: time.Minute, Quiet: 10 * time.Millisecond, Poll: 2 * time.Millisecond})
	if !w.Drained || w.Outcome != "the udev queue stayed empty" {
		t.Errorf("wait = %+v", w)
	}
}

func TestWaitForDevicesLimit(t *testing.T) {
	w := WaitForDevices(context.Background(), WaitOptions{Root: fakeUdev(t, true), Limit: 30 * time.Millisecond, Poll: 5 * time.Millisecond})
	if w.Drained || w.Outcome != "the limit (boot.device_wait 30ms) was reached with udev still busy" {
		t.Errorf("wait = %+v", w)
	}
}

func TestWaitForDevicesStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := WaitForDevices(ctx, WaitOptions{Root: fakeUdev(t, true), Limit: time.Hour})
	if w.Drained || !strings.HasPrefix(w.Outcome, "stopped: ") {
		t.Errorf("wait = %+v", w)
	}
}
