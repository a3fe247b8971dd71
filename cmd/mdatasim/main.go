// Command mdatasim runs the simulated SmartOS metadata host agent
// (package mdata/mdatatest, agent.js semantics) on a pty or a unix socket,
// serving a sample VM's metadata, so that mdata-get and friends can be
// tried by hand, with or without a fault.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

const usage = `Usage: mdatasim [--unix PATH] [--fault MODE [--count N] [--delay D]]
                [--down D] [--partial] [--stale] [-v]

Runs a simulated SmartOS metadata host agent serving a sample VM (sdc:uuid
%s, hostname web01, two NICs, SSH keys, user-script,
cloud-init:user-data) until interrupted. By default it serves a pty and
prints the device path to open, e.g.:

  $ mdatasim &
  /dev/pts/7
  $ SEEDKEEPER_MDATA=serial:/dev/pts/7 mdata-get sdc:uuid

Options:
  --unix PATH   serve a unix socket at PATH instead of a pty (each
                connection is its own session, as in a zone)
  --fault MODE  misbehave: %s
  --count N     apply the fault only the first N times (default: always)
  --delay D     pause of the slow (per byte) and late (per reply) faults
  --down D      start with the agent down and bring it up after D (e.g. 10s):
                input received meanwhile is discarded
  --partial     leave a partial request in the host's line buffer, as a
                killed client does, so the next probe completes a broken line
  --stale       queue a stale reply toward the guest before any client starts
                (pty only)
  -v            log every line received and every reply sent to stderr
  -h, --help    show this help
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run serves until ctx ends and returns the exit status: 0, 2 on error,
// 3 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mdatasim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		sock    = fs.String("unix", "", "")
		mode    = fs.String("fault", "normal", "")
		count   = fs.Int("count", 0, "")
		delay   = fs.Duration("delay", 0, "")
		down    = fs.Duration("down", 0, "")
		partial = fs.Bool("partial", false, "")
		stale   = fs.Bool("stale", false, "")
		verbose = fs.Bool("v", false, "")
	)
	names := make([]string, 0)
	for _, m := range mdatatest.Modes() {
		names = append(names, m.String())
	}
	help := fmt.Sprintf(usage, mdatatest.SampleUUID, strings.Join(names, ", "))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return 0
		}
		fmt.Fprintf(stderr, "mdatasim: %v\n\n%s", err, help)
		return 3
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mdatasim: unexpected argument %q\n\n%s", fs.Arg(0), help)
		return 3
	}
	m, err := mdatatest.ParseMode(*mode)
	if err != nil {
		fmt.Fprintf(stderr, "mdatasim: --fault: %v\n", err)
		return 3
	}
	if *count < 0 || *delay < 0 || *down < 0 {
		fmt.Fprintln(stderr, "mdatasim: --count, --delay and --down must not be negative")
		return 3
	}
	if *stale && *sock != "" {
		fmt.Fprintln(stderr, "mdatasim: --stale needs the pty (a socket connection starts clean)")
		return 3
	}

	h := mdatatest.NewHost(mdatatest.Default())
	if *verbose {
		h.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	}
	defer h.Close()
	h.SetFault(mdatatest.Fault{Mode: m, Count: *count, Delay: *delay})
	if *down > 0 {
		h.DownFor(*down)
	}
	if *partial {
		h.InjectInput([]byte("V2 25 60f18662 7ff58343 GET c2Rj"))
	}

	var where string
	if *sock != "" {
		if _, err := h.ListenUnix(*sock); err != nil {
			fmt.Fprintf(stderr, "mdatasim: %v\n", err)
			return 2
		}
		where = *sock
	} else {
		p, err := h.StartPTY()
		if err != nil {
			fmt.Fprintf(stderr, "mdatasim: %v\n", err)
			return 2
		}
		where = p.Path()
		if *stale {
			if err := h.InjectOutput(mdatatest.StaleReply("0badf00d")); err != nil {
				fmt.Fprintf(stderr, "mdatasim: %v\n", err)
				return 2
			}
		}
	}
	fmt.Fprintln(stdout, where)
	fmt.Fprintf(stderr, "mdatasim: serving %s (fault %s); interrupt to stop\n", where, h.Fault())
	<-ctx.Done()
	st := h.Stats()
	fmt.Fprintf(stderr, "mdatasim: served %d requests (%d probes, %d negotiations, %d malformed, %d unknown lines)\n",
		st.Served, st.Probes, st.Negotiations, st.Malformed, st.Unknown)
	return 0
}
