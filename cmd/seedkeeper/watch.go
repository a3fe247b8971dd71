package main

import (
	"fmt"
	"io"

	"github.com/seedkeeper/seedkeeper/agent"
)

const watchHelp = `Usage: seedkeeper watch [--root DIR] [--config FILE] [--drivers LIST]

The hotplug daemon (a systemd Type=notify service). It subscribes to link
events first, then lists the links that exist and reconciles them, then
handles NICs added later: a NIC whose driver is on the allowlist makes it
read the metadata again (1, 3, 5, 10, 30 s apart) until the NIC's MAC
appears in the network configuration, and then apply the configuration
of that NIC only. Links of other drivers (docker veths, bridges, tunnels)
cost no metadata read. It never writes the instance ID, the identity state
or the seed; READY is sent after the first reconcile. It applies nothing
from a source that boot did not decide on (a seed that appeared after
boot, a late CD-ROM): that takes effect on the next boot, and "seedkeeper
status" says so. On VMware, after a boot from a customization spec, a
spec VMware Tools hands over while the VM runs is applied once per
marker: its network live (a NIC hot-added before it included), reported
to vCenter, kept for later boots with the instance ID the VM has, which
it never changes. What it applies, the guestinfo addresses it publishes
again on VMware and the specs it handles, it records for "seedkeeper
status" in /run/seedkeeper/watch.json (nothing with --network plan). When
metrics.textfile_dir is set in the configuration it keeps
seedkeeper.prom there current ("seedkeeper status --format prometheus"),
for node_exporter's textfile collector: once ready, and after each
change to its record.

Options:
  --root DIR       resolve every system path under DIR
  --config FILE    configuration file (default /etc/seedkeeper/config.yaml)
  --drivers LIST   the driver allowlist for this run, comma-separated
                   (overrides the metadata and the configuration); an
                   empty list allows nothing
  --network MODE   auto (apply, or only log the plan when --root is set:
                   links are not paths), apply, or plan

Exit status: 0 stopped (SIGTERM) or nothing to watch, 2 error, 3 usage.
`

func runWatch(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("watch")
	root, cfgPath := commonFlags(fs)
	drivers := driversFlag(fs)
	netMode := fs.String("network", "auto", "")
	if code, ok := parseFlags(fs, args, watchHelp, stdout, stderr); !ok {
		return code
	}
	if *netMode != "auto" && *netMode != "apply" && *netMode != "plan" {
		fmt.Fprintf(stderr, "seedkeeper watch: --network %q: want auto, apply or plan\n", *netMode)
		return exitUsage
	}
	flagAllow, err := drivers()
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper watch: %v\n", err)
		return exitUsage
	}
	e := newEnv(*root, *cfgPath, stderr)
	// A signal is how the watch is stopped: exit 0, not 128+N.
	ctx, _, stop := signalContext()
	defer stop()
	// Watch logs every failure itself; only the exit status is left.
	return exitCode(agent.Watch(ctx, e, agent.WatchOptions{Drivers: flagAllow, Network: agent.NetworkMode(*netMode), Recorded: metricsWriter(e)}))
}
