package agent

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/intent"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/journallog"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/seed"
)

// Paths of seedkeeper's own state, under Env.Root.
const (
	StateDir    = paths.StateDir
	StatusPath  = paths.Status
	ReceiptPath = paths.Receipt
	// NetworkDir is where the networkd stack's files go (its place,
	// which a test pins).
	NetworkDir = "/run/systemd/network"
)

// Env is what every flow shares: the root, the configuration, the log and
// the service manager to notify.
type Env struct {
	// Root resolves every system path ("" is the machine itself).
	Root sysroot.Root
	// Config is the configuration in force; nil is the defaults.
	Config *config.Config
	// ConfigErr says why the configuration file could not be used (the
	// defaults are then in force, and hotplug allows no driver).
	ConfigErr error
	// Log receives one line per decision; nil discards them.
	Log *slog.Logger
	// Notify sends a state line to the service manager (sd_notify); nil
	// sends nothing.
	Notify func(state string)
	// RunCommand runs the commands a boot needs besides its own work
	// (chpasswd for a changed password); nil runs them from PATH.
	RunCommand intent.Runner
	// Version is recorded in the status file.
	Version string
	// Netns, when above 0, is the network namespace (a file descriptor,
	// as a github.com/vishvananda/netns NsHandle) in which Boot and Watch
	// read and change the links; 0 is the process's own. It lets a test
	// run the flows in a namespace of its own, in process.
	Netns int
}

// LoadEnv makes the Env for the system under rootDir (a directory standing
// for "/"; "" is the machine's own) and loads the configuration at cfgPath
// ("" is the default path under rootDir). A configuration that cannot be
// used is logged and replaced by the defaults; the flows decide what must
// not go on without it.
func LoadEnv(rootDir, cfgPath string, log *slog.Logger) Env {
	root := sysroot.Root(rootDir)
	e := Env{Root: root, Log: log}
	if cfgPath == "" {
		// The image's own file: read confined to the root, so a link
		// in it cannot make a file of the host its configuration.
		e.Config, e.ConfigErr = config.LoadRoot(string(root), datasource.Names())
	} else {
		e.Config, e.ConfigErr = config.Load(cfgPath, datasource.Names())
	}
	e.init()
	if e.ConfigErr != nil {
		e.Log.Error("configuration not used; running on defaults, and hotplug will allow no driver", "err", e.ConfigErr)
	}
	return e
}

func (e *Env) init() {
	if e.Config == nil {
		e.Config = config.Default()
	}
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	if e.Notify == nil {
		e.Notify = func(string) {}
	}
}

// NewLogger logs one line per event to w: key=value text, without a
// timestamp when journald (which adds its own) is reading. When w is the
// stream journald reads (JOURNAL_STREAM names it) of a service running as
// root, each record goes to the journal's socket instead, with its
// level's priority, its attributes as fields (SEEDKEEPER_IFACE=...) and
// its unit as OBJECT_SYSTEMD_UNIT, which "journalctl -u" matches also
// after the process has exited; with SEEDKEEPER_LOG_CONSOLE=1 (the boot
// unit's journal+console) the text line goes to the console too. Where
// the socket cannot be used, each line carries its level's priority
// ("<4>" for a warning) on the stream (internal/journallog).
func NewLogger(w io.Writer) *slog.Logger {
	if f, ok := w.(*os.File); ok && journallog.IsStream(f) {
		if unit, ok := journallog.NativeUnit(f); ok {
			var console io.Writer
			if os.Getenv(journallog.EnvConsole) == "1" {
				console = journallog.OpenConsole()
			}
			return slog.New(journallog.NewJournalHandler(unit, w, console))
		}
		return slog.New(journallog.NewStreamHandler(w))
	}
	return slog.New(journallog.NewTextHandler(w, os.Getenv(journallog.EnvStream) != ""))
}

// notifyStatus sends a STATUS line.
func (e *Env) notifyStatus(format string, args ...any) {
	e.Notify("STATUS=" + fmt.Sprintf(format, args...))
}

// WaitExtension is how far each progress line sent while a detected mdata
// host is silent pushes out systemd's start timeout: more than the longest
// gap between two lines (one attempt can block for the mdata write
// timeout, 45 s), so that the wait is unbounded (docs/design.md, "The boot
// flow") while the units' TimeoutStartSec still cuts off any other hang.
const WaitExtension = 90 * time.Second

// notifyWaiting sends a progress line of the wait for the metadata host,
// with EXTEND_TIMEOUT_USEC.
func (e *Env) notifyWaiting(msg string) {
	e.Notify(fmt.Sprintf("STATUS=%s\nEXTEND_TIMEOUT_USEC=%d", msg, WaitExtension.Microseconds()))
}

// mdataTransport is the forced mdata transport: the environment first,
// then the configuration.
func (e *Env) mdataTransport() string {
	if v := os.Getenv(mdata.EnvTransport); v != "" {
		return v
	}
	return e.Config.Mdata.Transport
}

// SourceOptions are the datasource options every flow uses: the sources
// and transport the configuration names, progress lines of a wait sent to
// the service manager, and the seed directories to read, which never
// include the seed seedkeeper writes for cloud-init.
func (e Env) SourceOptions() datasource.Options {
	e.init()
	o := datasource.Options{
		Root:           string(e.Root),
		Sources:        e.Config.Sources,
		MdataTransport: e.mdataTransport(),
		Logger:         e.Log,
	}
	o.Mdata.Progress = e.notifyWaiting
	o.VMware.Redact = e.Config.VMware.Redact
	// vmware.imc_wait 0 is no wait, the option's negative; not set (a
	// Config not from config.Default or a Load) is the option's 0, its
	// default.
	if w := e.Config.VMware.IMCWait; w != nil {
		o.VMware.IMCWait = time.Duration(*w)
		if o.VMware.IMCWait == 0 {
			o.VMware.IMCWait = -1
		}
	}
	// Never read back the seed seedkeeper writes for cloud-init.
	dir, err := seed.SourceDir(string(e.Root))
	if err != nil {
		e.Log.Warn("seed directory state unknown; not reading it", "err", err)
	}
	switch dir {
	case seed.Dir: // not written by seedkeeper yet: a person's seed, if any
	case "": // only our own output there
		o.NoCloud.SeedDirs = []string{paths.SeedNetDir}
	default: // the person's seed, imported on the first run
		o.NoCloud.SeedDirs = []string{dir, paths.SeedNetDir}
	}
	return o
}

// Allowlist is the hotplug driver allowlist in force: the metadata's (md
// may be nil), else the configuration's, else the platform default.
// Anything unreadable allows nothing.
func (e Env) Allowlist(md *datasource.Metadata) hotplug.Allowlist {
	e.init()
	var mdSet hotplug.Setting
	if md != nil {
		src, _ := datasource.Lookup(md.Source)
		mdSet = hotplug.Setting{Set: md.NetworkDriversSet, Value: md.NetworkDrivers, Err: datasource.NetworkDriversError(md), Key: src.DriversKey}
	}
	cfgSet := hotplug.Setting{Set: e.Config.HotplugDriversSet()}
	if e.ConfigErr != nil {
		cfgSet = hotplug.Setting{Set: true, Err: e.ConfigErr}
	} else if cfgSet.Set {
		cfgSet.Value, cfgSet.Err = e.Config.HotplugDriversValue()
	}
	a := hotplug.ResolveAllowlist(mdSet, cfgSet, datasource.Platform(string(e.Root)))
	if r := a.Reason(); r != "" {
		e.Log.Warn("hotplug allowlist allows no driver", "reason", r)
	}
	return a
}
