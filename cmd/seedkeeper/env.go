package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/hotplug"
)

// commonFlags adds --root and --config to fs.
func commonFlags(fs *flag.FlagSet) (root, cfgPath *string) {
	root = fs.String("root", "", "resolve every system path under `DIR` (run against a scratch folder)")
	cfgPath = fs.String("config", "", "configuration `FILE` (default /etc/seedkeeper/config.yaml under --root)")
	return root, cfgPath
}

// driversFlag adds --drivers to fs, the one parser of it for every
// command. After parsing, allowlist is what the flag gives: nil when it is
// not given (the command decides as boot does); an allowlist allowing
// nothing when it is given blank; else its names, read as the metadata's
// and the configuration's strings are (hotplug.ParseDriverList: an empty
// entry, as in "a,,b", is an error, which the command reports as a usage
// error).
func driversFlag(fs *flag.FlagSet) (allowlist func() (*hotplug.Allowlist, error)) {
	v := fs.String("drivers", "", "")
	return func() (*hotplug.Allowlist, error) {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "drivers" })
		if !given {
			return nil, nil
		}
		var names []string
		if strings.TrimSpace(*v) != "" {
			var err error
			if names, err = hotplug.ParseDriverList(*v); err != nil {
				return nil, fmt.Errorf("--drivers: %w", err)
			}
		}
		a := hotplug.NewAllowlist(hotplug.OriginFlag, names)
		return &a, nil
	}
}

// newEnv loads the configuration, logs to stderr and notifies systemd when
// it is listening.
func newEnv(root, cfgPath string, stderr io.Writer) agent.Env {
	e := agent.LoadEnv(root, cfgPath, agent.NewLogger(stderr))
	e.Notify = func(state string) { daemon.SdNotify(false, state) }
	e.Version = version
	return e
}

// newFlags returns the flag set of a command, named as it is typed after
// "seedkeeper" ("boot", "image seal"). Its help text is printed by
// parseFlags, once: to stdout on --help, to stderr after a bad flag.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("seedkeeper "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags says what is wrong, in one line
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args; when it returns false the command ends with code
// (0 after --help, 3 for a bad flag or a stray argument, said in one line).
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return exitOK, false
		}
		fmt.Fprintln(stderr, flagError(fs, fs.Name(), err))
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (\"%s --help\" lists the options)\n", fs.Name(), fs.Arg(0), fs.Name())
		return exitUsage, false
	}
	return exitOK, true
}

// flagError is the one line that says what is wrong with a command line
// (cmd is "seedkeeper status"): the flag package's error, the option
// meant when one is close to a mistyped one, and where the options are.
func flagError(fs *flag.FlagSet, cmd string, err error) string {
	msg := cmd + ": " + err.Error()
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
		if near := nearestFlag(fs, strings.TrimLeft(name, "-")); near != "" {
			return msg + "; did you mean --" + near + "? (\"" + cmd + " --help\" lists the options)"
		}
	}
	return msg + " (\"" + cmd + " --help\" lists the options)"
}

// nearestFlag is the flag of fs closest to name: one that begins with it,
// or is at most two edits away; "" when none is.
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestDist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if len(name) >= 2 && strings.HasPrefix(f.Name, name) {
			d = 1
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// subcommand reads the SUB of "seedkeeper NAME SUB [FLAGS]" and returns
// its flag set (newFlags; parseFlags parses the flags after SUB). When it
// returns false the command ends with code: 0 after help, 3 for a missing
// or unknown SUB.
func subcommand(name string, args, subs []string, usage string, stdout, stderr io.Writer) (fs *flag.FlagSet, code int, ok bool) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return nil, exitUsage, false
	}
	switch sub := args[0]; {
	case sub == "-h" || sub == "-help" || sub == "--help" || sub == "help":
		fmt.Fprint(stdout, usage)
		return nil, exitOK, false
	case !slices.Contains(subs, sub):
		want := subs[len(subs)-1]
		if len(subs) > 1 {
			want = strings.Join(subs[:len(subs)-1], ", ") + " or " + want
		}
		fmt.Fprintf(stderr, "seedkeeper %s: unknown command %q (want %s)\n", name, sub, want)
		return nil, exitUsage, false
	}
	return newFlags(name + " " + args[0]), exitOK, true
}

// signalContext returns a context that SIGINT or SIGTERM cancels, and
// caught, which reports the exit status the signal calls for: 128+N, as
// a death by that signal would be reported. Every long-running command
// ends this way on a signal, so a service manager sees one rule.
func signalContext() (ctx context.Context, caught func() (code int, ok bool), stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Int32
	go func() {
		if sig, ok := <-sigs; ok {
			got.Store(int32(sig.(syscall.Signal)))
			cancel()
		}
	}()
	caught = func() (int, bool) {
		if n := got.Load(); n != 0 {
			return 128 + int(n), true
		}
		return 0, false
	}
	return ctx, caught, func() { signal.Stop(sigs); cancel() }
}
