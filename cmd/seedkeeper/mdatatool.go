package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/bound"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/mdata"
)

func isMdataTool(name string) bool {
	switch name {
	case "get", "put", "delete", "list":
		return true
	}
	return false
}

// runMdataSub runs "seedkeeper mdata get|put|delete|list ARGS".
const mdataSubHelp = `Usage: seedkeeper mdata get|put|delete|list [ARGS]

Gets, puts, deletes or lists the metadata keys of a SmartOS host, as the
mdata-get, mdata-put, mdata-delete and mdata-list tools do (the same
binary under those names). "seedkeeper mdata get --help" says each one's
arguments and options.

Exit status: 0 success, 1 no such key, 2 error, 3 usage, 10 timed out.
`

func runMdataSub(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, mdataSubHelp)
		return exitOK
	}
	if len(args) == 0 || !isMdataTool(args[0]) {
		fmt.Fprint(stderr, mdataSubHelp)
		return exitUsage
	}
	return runMdataTool(args[0], "seedkeeper mdata "+args[0], args[1:], stdin, stdout, stderr)
}

const mdataHelp = `Usage: %[1]s %[2]s

%[3]s

The metadata host is reached over the zone socket when there is one, or over
the serial port when DMI says this is a SmartOS guest. Set SEEDKEEPER_MDATA
to choose: serial:PATH, unix:PATH or vsock:CID:PORT.

Without --timeout the command waits until the host answers, as the
reference tools do, printing a line every few seconds while it waits.

Options (before the key; after it every argument is data):
  -t, --timeout DURATION  give up after DURATION (e.g. 30s, or seconds;
                          from 1ms to 24h)
  -h, --help              show this help
      --version           print the version
  --                      end of options (for keys that start with -)

Exit status: 0 success, 1 no such key, 2 error, 3 usage, 10 timed out,
128+N ended by signal N (SIGINT, SIGTERM).
`

var mdataSynopsis = map[string][2]string{
	"get":    {"<keyname>", "Print the value of a metadata key."},
	"put":    {"<keyname> [<value>]", "Set a metadata key. Without a value, the value is read from stdin, byte for byte."},
	"delete": {"<keyname>", "Delete a metadata key. Deleting a key that does not exist succeeds."},
	"list":   {"", "List the custom metadata keys, one per line."},
}

// runMdataTool behaves like the reference C tool of the same name: the same
// arguments, output, messages and exit codes, plus --timeout and --help.
func runMdataTool(tool, argv0 string, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	prog := "mdata-" + tool
	var timeout time.Duration
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case len(pos) > 0:
			// Options come before the key: after it every argument is
			// data, as the reference tools take it ("mdata-put k -h"
			// stores "-h").
			pos = append(pos, a)
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case a == "-h" || a == "--help":
			fmt.Fprintf(stdout, mdataHelp, prog, mdataSynopsis[tool][0], mdataSynopsis[tool][1])
			return exitOK
		case a == "--version":
			fmt.Fprintln(stdout, prog, "(seedkeeper)", version)
			return exitOK
		case a == "-t" || a == "--timeout" || strings.HasPrefix(a, "--timeout="):
			v, ok := strings.CutPrefix(a, "--timeout=")
			if !ok {
				if i+1 >= len(args) {
					fmt.Fprintf(stderr, "%s: %s needs a duration\n", prog, a)
					return exitUsage
				}
				i++
				v = args[i]
			}
			d, err := parseTimeout(v)
			if err != nil {
				fmt.Fprintf(stderr, "%s: invalid timeout: %v\n", prog, err)
				return exitUsage
			}
			timeout = d
		default:
			// Anything else, even with a leading "-", is an argument:
			// the reference tools take no options.
			pos = append(pos, a)
		}
	}

	if tool != "list" && len(pos) < 1 {
		syn := mdataSynopsis[tool][0]
		if tool == "put" {
			syn = "<keyname> [ <value> ]"
		}
		fmt.Fprintf(stderr, "%s: Usage: %s %s\n", prog, argv0, syn)
		return exitUsage
	}
	var key string
	if len(pos) > 0 {
		key = pos[0]
	}

	var value []byte
	if tool == "put" {
		switch {
		case len(pos) >= 2:
			value = []byte(pos[1])
		case isTerminal(stdin):
			fmt.Fprintln(stderr, "ERROR: either specify the metadata value as the second command-line argument, or pipe content to stdin.")
			return exitError
		default:
			b, err := io.ReadAll(stdin)
			if err != nil {
				fmt.Fprintf(stderr, "ERROR: could not read from stdin: %v\n", err)
				return exitError
			}
			value = b
		}
	}

	t, _, err := mdata.Detect("", os.Getenv(mdata.EnvTransport))
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: could not initialise protocol: %v\n", err)
		return exitError
	}

	// A signal ends the wait like the reference tools' death by that
	// signal would: exit 128+N, not the "try again" of a timeout.
	ctx, caught, stop := signalContext()
	defer stop()
	defer func() {
		if c, ok := caught(); ok {
			code = c
		}
	}()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c := mdata.New(t, &mdata.Options{
		Progress: func(msg string) { fmt.Fprintf(stderr, "%s: %s\n", prog, safetext.Escape(msg)) },
	})
	defer c.Close()

	switch tool {
	case "get":
		v, err := c.Get(ctx, key)
		if err != nil {
			return reportMdataError(stderr, tool, key, err)
		}
		stdout.Write(v)
		if len(v) == 0 || v[len(v)-1] != '\n' {
			io.WriteString(stdout, "\n")
		}
	case "list":
		keys, err := c.Keys(ctx)
		if err != nil {
			return reportMdataError(stderr, tool, key, err)
		}
		for _, k := range keys {
			io.WriteString(stdout, k+"\n")
		}
	case "put":
		if err := c.Put(ctx, key, value); err != nil {
			return reportMdataError(stderr, tool, key, err)
		}
	case "delete":
		if err := c.Delete(ctx, key); err != nil {
			return reportMdataError(stderr, tool, key, err)
		}
	}
	return exitOK
}

// reportMdataError prints the reference tools' message for err and returns
// their exit code.
func reportMdataError(stderr io.Writer, tool, key string, err error) int {
	// The host's messages are its own text: escaped before they reach
	// the terminal.
	var he *mdata.HostError
	var op *mdata.OpError
	switch {
	case errors.Is(err, mdata.ErrNotFound):
		if tool == "list" {
			fmt.Fprintln(stderr, "No metadata")
		} else {
			fmt.Fprintf(stderr, "No metadata for '%s'\n", key)
		}
	case errors.As(err, &he):
		switch tool {
		case "get":
			fmt.Fprintf(stderr, "Error getting metadata for key '%s': %s\n", key, safetext.Escape(he.Message))
		case "put":
			fmt.Fprintf(stderr, "Error putting metadata for key '%s': %s\n", key, safetext.Escape(he.Message))
		case "delete":
			fmt.Fprintf(stderr, "Error deleting metadata key '%s': %s\n", key, safetext.Escape(he.Message))
		default:
			fmt.Fprintf(stderr, "Error getting metadata: %s\n", safetext.Escape(he.Message))
		}
		return exitCode(he) // the host's answer: an error, whatever it wraps
	case errors.Is(err, mdata.ErrUnsupported):
		fmt.Fprintf(stderr, "ERROR: host does not support %s\n", map[string]string{"get": "GET", "put": "PUT", "delete": "DELETE", "list": "KEYS"}[tool])
	case errors.Is(err, mdata.ErrUnavailable):
		fmt.Fprintf(stderr, "ERROR: %s\n", safetext.Escape(fmt.Sprint(errors.Unwrap(err))))
		err = errTimedOut{err}
	case errors.As(err, &op):
		fmt.Fprintf(stderr, "ERROR: could not initialise protocol: %s\n", safetext.Escape(op.Err.Error()))
	default:
		fmt.Fprintf(stderr, "ERROR: could not initialise protocol: %s\n", safetext.Escape(err.Error()))
	}
	return exitCode(err)
}

// parseTimeout reads -t/--timeout: a Go duration ("30s") or a number of
// seconds, between bound.MinTimeout and bound.MaxTimeout. A value outside
// them is a usage error (exit 3, before any I/O, as the reference tools
// treat a bad command line): below a millisecond it rounds to nothing,
// and 1e-10 or 1e300 used to turn silently into "no timeout".
func parseTimeout(s string) (time.Duration, error) {
	return bound.ParseDuration("-t/--timeout", s, bound.MinTimeout, bound.MaxTimeout)
}

// isTerminal reports whether r is a terminal (so there is nothing to read).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isatty(f.Fd())
}
