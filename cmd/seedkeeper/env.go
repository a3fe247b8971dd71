package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/mdata"
)

// Paths of seedkeeper's own state, under --root.
const (
	stateDir    = "/var/lib/seedkeeper"
	statusPath  = stateDir + "/status.json"
	receiptPath = stateDir + "/network-receipt.json"
	networkDir  = "/run/systemd/network"
)

// runEnv is what every daemon-style command shares: the root, the
// configuration and the log.
type runEnv struct {
	root   sysroot.Root
	cfg    *config.Config
	cfgErr error // the configuration could not be used; defaults are in force
	log    *slog.Logger
}

// commonFlags adds --root and --config to fs.
func commonFlags(fs *flag.FlagSet) (root, cfgPath *string) {
	root = fs.String("root", "", "resolve every system path under `DIR` (run against a scratch folder)")
	cfgPath = fs.String("config", "", "configuration `FILE` (default /etc/seedkeeper/config.yaml under --root)")
	return root, cfgPath
}

// newEnv loads the configuration and sets up the log. A configuration that
// cannot be used is logged and replaced by the defaults; the caller decides
// what must not go on without it.
func newEnv(root, cfgPath string, stderr io.Writer) *runEnv {
	e := &runEnv{root: sysroot.Root(root), log: newLogger(stderr)}
	if cfgPath == "" {
		cfgPath = e.root.Path(config.DefaultPath)
	}
	e.cfg, e.cfgErr = config.Load(cfgPath)
	if e.cfgErr != nil {
		e.log.Error("configuration not used; running on defaults, and hotplug will allow no driver", "err", e.cfgErr)
	}
	return e
}

// mdataTransport is the forced mdata transport: the environment first,
// then the configuration.
func (e *runEnv) mdataTransport() string {
	if v := os.Getenv(mdata.EnvTransport); v != "" {
		return v
	}
	return e.cfg.Mdata.Transport
}

// newLogger logs one line per event to stderr: key=value text, without a
// timestamp when journald (which adds its own) is reading.
func newLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{}
	if os.Getenv("JOURNAL_STREAM") != "" {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// notify sends a state line to systemd when it is listening; it is a no-op
// otherwise.
func notify(state string) {
	daemon.SdNotify(false, state)
}

// notifyStatus sends a STATUS line.
func notifyStatus(format string, args ...any) {
	notify("STATUS=" + fmt.Sprintf(format, args...))
}

// waitExtension is how far each progress line sent while a detected mdata
// host is silent pushes out systemd's start timeout: more than the longest
// gap between two lines (one attempt can block for the mdata write
// timeout, 45 s), so that the wait is unbounded as DESIGN.md asks while
// the units' TimeoutStartSec still cuts off any other hang.
const waitExtension = 90 * time.Second

// notifyWaiting sends a progress line of the wait for the metadata host,
// with EXTEND_TIMEOUT_USEC.
func notifyWaiting(msg string) {
	notify(fmt.Sprintf("STATUS=%s\nEXTEND_TIMEOUT_USEC=%d", msg, waitExtension.Microseconds()))
}

// newFlags returns the flag set of a subcommand. Its help text is printed
// by parseFlags, once: to stdout on --help, to stderr after a bad flag.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args; when it returns false the command ends with code
// (0 after --help, 3 for a bad flag or a stray argument).
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return exitOK, false
		}
		fmt.Fprint(stderr, help)
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "seedkeeper %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return exitOK, true
}
