package agent

import (
	"context"
	"errors"
	"io/fs"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// WatchReadyPath is where seedkeeper watch marks that it is ready (it has
// told the service manager READY=1) in the boot the file names: "seedkeeper
// status --wait" waits for it. Like the watch record it is on tmpfs and
// names its boot, for a /run that outlives a boot.
const WatchReadyPath = "/run/seedkeeper/watch.ready"

// WatchUnitWants is the link by which the watch's unit is enabled: without
// it, no watch is waited for.
const WatchUnitWants = "/etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service"

// watchReady tells the service manager READY=1 with the lines in extra, and
// marks the watch ready for this boot in WatchReadyPath when live (a
// watch that only plans writes nothing).
func (e *Env) watchReady(live bool, extra string) {
	if live {
		if err := fsutil.WriteFileIn(string(e.Root), WatchReadyPath, []byte(CurrentBootID(e.Root)+"\n"), 0o644); err != nil {
			e.Log.Warn("watch: marking it ready for seedkeeper status --wait", "err", err)
		}
	}
	e.Notify("READY=1" + extra)
}

// WatchIsReady reports whether seedkeeper watch marked itself ready in
// the running boot, whose ID is current ("": not known, and then any mark
// counts).
func WatchIsReady(root sysroot.Root, current string) bool {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), WatchReadyPath, fsutil.SmallFile)
	if err != nil {
		return false
	}
	id, err := ParseBootID(b)
	return current == "" || (err == nil && id == current)
}

// WatchEnabled reports whether the watch's unit is enabled under root
// (WatchUnitWants is there, as a link or a file).
func WatchEnabled(root sysroot.Root) bool {
	_, err := fsutil.StatIn(string(root), WatchUnitWants, false)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
