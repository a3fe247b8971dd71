package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/agent/report"
)

const bootHelp = `Usage: seedkeeper boot [--root DIR] [--config FILE] [--network MODE] [--json]

Runs once per boot, before cloud-init: detects the metadata source, reads
it, decides the instance ID cloud-init will see, writes the NoCloud seed
for cloud-init, and brings the network of the NICs seedkeeper owns to what
the metadata says. Every step logs one line saying what it decided; the
outcome is kept in /var/lib/seedkeeper/status.json for "seedkeeper status".

A detected mdata host is waited for as long as it takes unless boot.wait
is set in the configuration. When nothing is found at first, boot waits
up to boot.device_wait (60s) for udev to finish with devices still coming
(a late CD-ROM) and looks once more. With no source and no seed from an
earlier boot, it creates /run/seedkeeper/no-source, which skips
cloud-init's units for this boot instead of letting it run without a
datasource.

Options:
  --root DIR       resolve every system path under DIR
  --config FILE    configuration file (default /etc/seedkeeper/config.yaml)
  --network MODE   auto (apply, or only plan when --root is set), apply,
                   plan, or off
  --json           print the outcome on stdout as JSON: schema_version,
                   status (the record "seedkeeper status --json" reads,
                   as status.json holds it) and error

Exit status: 0 done, 1 no metadata source on this machine, 2 error,
3 usage, 4 the network was applied only in part, 128+N stopped by signal
N (SIGINT, SIGTERM): every step checks for it, and every parse is bounded,
so boot ends within a second of the signal.
`

func runBoot(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("boot")
	root, cfgPath := commonFlags(fs)
	netMode := fs.String("network", "auto", "")
	asJSON := fs.Bool("json", false, "")
	if code, ok := parseFlags(fs, args, bootHelp, stdout, stderr); !ok {
		return code
	}
	switch agent.NetworkMode(*netMode) {
	case agent.NetworkAuto, agent.NetworkApply, agent.NetworkPlan, agent.NetworkOff:
	default:
		fmt.Fprintf(stderr, "seedkeeper boot: --network %q: want auto, apply, plan or off\n", *netMode)
		return exitUsage
	}
	e := newEnv(*root, *cfgPath, stderr)
	ctx, caught, stop := signalContext()
	defer stop()
	// Boot logs every failure itself; only the exit status is left.
	st, err := agent.Boot(ctx, e, agent.BootOptions{Network: agent.NetworkMode(*netMode)})
	if code, ok := caught(); ok {
		fmt.Fprintln(stderr, "seedkeeper boot: stopped by a signal")
		return code
	}
	// What in cloud-init's settings and around it (a drop-in overridden, a
	// ds=nocloud line, cloud-init's own hotplug) bears on the seed just
	// written: in the log too, not only in status.
	warn, notes := report.CloudConfigNotes(e.Root)
	for _, w := range warn {
		e.Log.Warn("cloud-init: " + w)
	}
	for _, n := range notes {
		e.Log.Info("cloud-init: " + n)
	}
	if *asJSON {
		out := struct {
			SchemaVersion int    `json:"schema_version"`
			Status        any    `json:"status"`
			Error         string `json:"error,omitempty"`
		}{SchemaVersion: bootSchemaVersion, Status: st}
		if err != nil {
			out.Error = err.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(out)
	}
	return exitCode(err)
}

// bootSchemaVersion is the version of "boot --json".
const bootSchemaVersion = 1
