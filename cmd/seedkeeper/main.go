// Command seedkeeper is the guest-side metadata agent. Invoked as
// mdata-get, mdata-put, mdata-delete or mdata-list it acts as that tool.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	skversion "github.com/seedkeeper/seedkeeper/internal/version"
)

// version is what --version, "version" and the usage line print.
var version = skversion.String()

// memoryLimit is the Go runtime's soft memory limit (unless GOMEMLIMIT
// sets one): the garbage collector works harder as the heap nears it, so
// the garbage of a large input (the copies a 16 MiB seed file goes
// through) is collected before the process doubles its live heap, as the
// default GOGC=100 lets it. It is soft: a process that truly needs more
// gets more, only more slowly.
const memoryLimit = 40 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// command is one seedkeeper subcommand.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"boot":       {"detect, read, decide the instance ID, write the seed, apply the network (once per boot)", runBoot},
		"completion": {"print the shell completion script for bash, zsh or fish", runCompletion},
		"fetch":      {"print the normalized metadata, writing nothing", runFetch},
		"identity":   {"show, reset or pin the instance ID pinned for this machine", runIdentity},
		"image":      {"check what a clone of this image will do, or seal it for cloning", runImage},
		"mdata": {"get, put, delete or list metadata keys (as the mdata-* tools)", func(args []string, stdout, stderr io.Writer) int {
			return runMdataSub(args, os.Stdin, stdout, stderr)
		}},
		"net":       {"plan or apply a network configuration on this machine's links", runNet},
		"status":    {"say what the last boot decided, and why", runStatus},
		"uninstall": {"take away what seedkeeper wrote for cloud-init (run by the package's removal)", runUninstall},
		"validate":  {"check network-config, meta-data, user-data or the config file strictly, as boot reads them", runValidate},
		"watch":     {"the hotplug daemon: apply the network of NICs added later", runWatch},
		"version":   {"print the version", runVersion},

		"collect-logs": {"write a tar.gz of status, journal, network files and cloud-init's logs for a bug report", runCollectLogs},
	}
}

func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := filepath.Base(argv[0])
	if tool, ok := strings.CutPrefix(name, "mdata-"); ok && isMdataTool(tool) {
		return runMdataTool(tool, argv[0], argv[1:], stdin, stdout, stderr)
	}
	if len(argv) < 2 {
		usage(stderr)
		return exitUsage
	}
	args := argv[2:]
	switch argv[1] {
	case "-h", "--help":
		usage(stdout)
		return exitOK
	case "help":
		// "help CMD" is "CMD --help": one text, one exit status.
		if len(args) == 0 {
			usage(stdout)
			return exitOK
		}
		argv, args = argv[1:], []string{"--help"}
	case "--version", "-version":
		fmt.Fprintln(stdout, "seedkeeper", version)
		return exitOK
	}
	cmd, ok := commands()[argv[1]]
	if !ok {
		fmt.Fprintln(stderr, unknownCommand(argv[1]))
		return exitUsage
	}
	return cmd.run(args, stdout, stderr)
}

// unknownCommand is the one line said of a command that is not one: the
// command meant when one is close, and where the commands are listed.
func unknownCommand(name string) string {
	msg := fmt.Sprintf("seedkeeper: unknown command %q", name)
	best, bestDist := "", 3
	for n := range commands() {
		if d := editDistance(name, n); d < bestDist || (d == bestDist && n < best) {
			best, bestDist = n, d
		}
	}
	if best != "" {
		msg += "; did you mean " + best + "?"
	}
	return msg + " (\"seedkeeper --help\" lists the commands)"
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "seedkeeper %s: the guest-side metadata agent\n\nUsage: seedkeeper COMMAND [ARGS]\n\nCommands:\n", version)
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintf(w, "\nInvoked as mdata-get, mdata-put, mdata-delete or mdata-list it acts as that tool.\nRun \"seedkeeper COMMAND --help\" for a command's options.\n")
	fmt.Fprint(w, usageEnvFiles)
}

// usageEnvFiles ends the top-level help: the ENVIRONMENT and FILES of
// seedkeeper(8) (packaging/genman makes sections of them).
const usageEnvFiles = `
Environment:
  SEEDKEEPER_MDATA   the mdata transport: serial:PATH, unix:PATH or
                     vsock:CID:PORT (wins over mdata.transport)
  VMX_GUESTINFO      with VMX_GUESTINFO_METADATA, _USERDATA or _VENDORDATA:
                     VMware guestinfo from the environment, as cloud-init's
                     envvar transport
  JOURNAL_STREAM     set by systemd: when it names stderr of a service
                     run as root, each record goes to the journal's socket
                     with its priority, its unit (OBJECT_SYSTEMD_UNIT) and
                     each attribute as a field: SEEDKEEPER_IFACE=eth1,
                     SEEDKEEPER_SOURCE=..., CODE_FILE, SYSLOG_IDENTIFIER=
                     seedkeeper; where the socket cannot be used each line
                     on stderr carries its priority ("<4>" a warning)
  SEEDKEEPER_LOG_CONSOLE
                     1 (set by seedkeeper-boot.service): the records sent
                     to the journal's socket go to /dev/console as text too
  GOMEMLIMIT         the Go runtime's soft memory limit (default 40MiB)

Files:
  /etc/seedkeeper/config.yaml        the configuration (seedkeeper-config(5))
  /var/lib/seedkeeper/status.json    what the last boot decided (status)
  /var/lib/seedkeeper/identity.json  the pinned instance ID
  /var/lib/seedkeeper/network-receipt.json  the NICs seedkeeper configured
  /var/lib/seedkeeper/changes.json   the metadata of the last boot, per setting
  /var/lib/seedkeeper/vmware-imc-marker  the marker of the last VMware
                                     customization spec applied
  /var/lib/seedkeeper/vmware-imc-spec.json  that spec, without its password,
                                     read again on later boots
  /var/lib/cloud/seed/nocloud/       the NoCloud seed written for cloud-init
  /etc/cloud/cloud.cfg.d/95-seedkeeper.cfg  the package's cloud-init drop-in
  /run/seedkeeper/watch.json         what seedkeeper watch did in this boot
  /run/seedkeeper/watch.ready        seedkeeper watch is ready in this boot
  /run/seedkeeper/no-source          cloud-init is skipped in this boot
  /run/systemd/network/              the networkd files of owned NICs
`
