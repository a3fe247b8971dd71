package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

const watchHelp = `Usage: seedkeeper watch [--root DIR] [--config FILE] [--drivers LIST]

The hotplug daemon (a systemd Type=notify service). It subscribes to link
events first, then lists the links that exist and reconciles them, then
handles NICs added later: a NIC whose driver is on the allowlist makes it
read the metadata again (1, 3, 5, 10, 30 s apart) until the NIC's MAC
appears in the network configuration, and then apply the configuration
of that NIC only. Links of other drivers (docker veths, bridges, tunnels)
cost no metadata read. It never writes the instance ID, the identity state
or the seed; READY is sent after the first reconcile.

Options:
  --root DIR       resolve every system path under DIR
  --config FILE    configuration file (default /etc/seedkeeper/config.yaml)
  --drivers LIST   the driver allowlist for this run, comma-separated
                   (overrides the metadata and the configuration)
  --network MODE   auto (apply, or only log the plan when --root is set:
                   links are not paths), apply, or plan

Exit status: 0 stopped (SIGTERM) or nothing to watch, 2 error, 3 usage.
`

func runWatch(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("watch", stderr)
	root, cfgPath := commonFlags(fs)
	drivers := fs.String("drivers", "", "")
	netMode := fs.String("network", "auto", "")
	if code, ok := parseFlags(fs, args, watchHelp, stdout, stderr); !ok {
		return code
	}
	if *netMode != "auto" && *netMode != "apply" && *netMode != "plan" {
		fmt.Fprintf(stderr, "seedkeeper watch: --network %q: want auto, apply or plan\n", *netMode)
		return exitUsage
	}
	var flagAllow *hotplug.Allowlist
	if *drivers != "" {
		list, err := hotplug.ParseDriverList(*drivers)
		if err != nil {
			fmt.Fprintf(stderr, "seedkeeper watch: --drivers: %v\n", err)
			return exitUsage
		}
		a := hotplug.NewAllowlist(hotplug.OriginFlag, list)
		flagAllow = &a
	}
	e := newEnv(*root, *cfgPath, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	idle := func(why string) int {
		e.log.Info("watch: " + why)
		notify("READY=1\nSTATUS=" + why)
		return exitOK
	}
	if !e.cfg.EventEnabled("hotplug") {
		return idle("hotplug is not in events.network; nothing to watch")
	}
	if e.cfg.Network.Owner == "cloud-init" {
		return idle("network.owner is cloud-init; nothing to watch")
	}
	opts := e.sourceOptions()
	source, _, err := datasource.Detect(opts)
	if errors.Is(err, datasource.ErrNoSource) {
		return idle("no metadata source on this machine; nothing to watch")
	}
	if err != nil {
		e.log.Error("watch: detecting the metadata source", "err", err)
		return exitError
	}

	read := func(ctx context.Context) (*datasource.Metadata, error) { return datasource.Read(ctx, source, opts) }
	if source == datasource.SourceSmartOS {
		// One mdata session for the daemon's life: no handshake per
		// event, and the port let go between requests (mdata.Options.Yield).
		t, _, err := datasource.DetectSmartOS(opts.Root, opts.MdataTransport)
		if err != nil {
			e.log.Error("watch: detecting the metadata source", "err", err)
			return exitError
		}
		mo := opts.Mdata
		mo.Logger, mo.Yield = e.log, true
		c := mdata.New(t, &mo)
		defer c.Close()
		read = func(ctx context.Context) (*datasource.Metadata, error) { return datasource.ReadSmartOS(ctx, c, e.log) }
	}

	var allow hotplug.Allowlist
	if flagAllow != nil {
		allow = *flagAllow
	} else {
		// The metadata may set the allowlist: read it once first.
		notifyStatus("reading the metadata (%s) for the driver allowlist", source)
		md, err := read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			e.log.Error("watch: reading the metadata", "err", err)
			return exitError
		}
		allow = e.allowlist(md)
	}
	e.log.Info("watch: allowlist " + allow.String())

	fetch := func(ctx context.Context) (*netcfg.Config, error) {
		md, err := read(ctx)
		if err != nil {
			return nil, err
		}
		return md.Network, nil
	}
	applier := hotplug.NetlinkApplier(0, allow, e.root.Path(receiptPath), e.log)
	applyFn := func(ctx context.Context, cfg *netcfg.Config, macs []string) error {
		if err := applier(ctx, cfg, macs); err != nil {
			return err
		}
		return e.renderCurrent(ctx, cfg, allow)
	}
	if !(*netMode == "apply" || *netMode == "auto" && e.root.IsReal()) {
		e.log.Info("watch: the network is only planned (--root is set, or --network plan)")
		applyFn = func(ctx context.Context, cfg *netcfg.Config, macs []string) error {
			return e.logPlan(ctx, hotplug.Only(cfg, macs), allow)
		}
	}
	err = hotplug.Watch(ctx, hotplug.Options{
		Allowlist: allow,
		Fetch:     fetch,
		Apply:     applyFn,
		// udev's records are a system path too: under --root.
		UdevDataDir: e.root.Path(hotplug.DefaultUdevDataDir),
		Ready:       func() { notify("READY=1") },
		Status:      func(s string) { notifyStatus("%s", s) },
		Logger:      e.log,
	})
	notify("STOPPING=1")
	if err != nil && ctx.Err() == nil {
		e.log.Error("watch stopped", "err", err)
		return exitError
	}
	return exitOK
}
