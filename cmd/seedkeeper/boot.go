package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/seed"
)

// Exit codes of boot (and fetch).
const (
	exitNoSource = 1 // no metadata source here: a normal outcome
	exitPartial  = 4 // the network was applied only in part
)

const bootHelp = `Usage: seedkeeper boot [--root DIR] [--config FILE] [--network MODE]

Runs once per boot, before cloud-init: detects the metadata source, reads
it, decides the instance ID cloud-init will see, writes the NoCloud seed
for cloud-init, and brings the network of the NICs seedkeeper owns to what
the metadata says. Every step logs one line saying what it decided; the
outcome is kept in /var/lib/seedkeeper/status.json for "seedkeeper status".

A detected mdata host is waited for as long as it takes unless boot.wait
is set in the configuration.

Options:
  --root DIR       resolve every system path under DIR
  --config FILE    configuration file (default /etc/seedkeeper/config.yaml)
  --network MODE   auto (apply, or only plan when --root is set), apply,
                   plan, or off

Exit status: 0 done, 1 no metadata source on this machine, 2 error,
3 usage, 4 the network was applied only in part.
`

// bootStatus is what the last boot decided, kept for "seedkeeper status".
type bootStatus struct {
	Version     int                    `json:"version"`
	Time        time.Time              `json:"time"`
	Seedkeeper  string                 `json:"seedkeeper"`
	Outcome     string                 `json:"outcome"` // ok, no-source, error, partial
	Error       string                 `json:"error,omitempty"`
	Config      string                 `json:"config"`
	ConfigError string                 `json:"config_error,omitempty"`
	Source      string                 `json:"source,omitempty"`
	Transport   string                 `json:"transport,omitempty"`
	Candidates  []datasource.Candidate `json:"candidates,omitempty"`
	Dropped     []string               `json:"dropped,omitempty"` // fields of the metadata not used, and why
	Identity    *identity.Decision     `json:"identity,omitempty"`
	Seed        *seedStatus            `json:"seed,omitempty"`
	Network     *netResult             `json:"network,omitempty"`
}

type seedStatus struct {
	Dir      string   `json:"dir"`
	Written  []string `json:"written,omitempty"`
	Removed  []string `json:"removed,omitempty"`
	Imported string   `json:"imported,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func runBoot(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("boot", stderr)
	root, cfgPath := commonFlags(fs)
	netMode := fs.String("network", "auto", "")
	if code, ok := parseFlags(fs, args, bootHelp, stdout, stderr); !ok {
		return code
	}
	switch *netMode {
	case "auto", "apply", "plan", "off":
	default:
		fmt.Fprintf(stderr, "seedkeeper boot: --network %q: want auto, apply, plan or off\n", *netMode)
		return exitUsage
	}
	e := newEnv(*root, *cfgPath, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st := &bootStatus{Version: 1, Time: time.Now().UTC(), Seedkeeper: version, Config: e.cfg.Path}
	if st.Config == "" {
		st.Config = "defaults"
	}
	if e.cfgErr != nil {
		st.ConfigError = e.cfgErr.Error()
	}
	code := e.boot(ctx, st, *netMode)
	if err := e.saveStatus(st); err != nil {
		e.log.Error("saving the status", "err", err)
		if code == exitOK {
			code = exitError
		}
	}
	notify("READY=1")
	return code
}

func (e *runEnv) boot(ctx context.Context, st *bootStatus, netMode string) int {
	fail := func(err error) int {
		st.Outcome, st.Error = "error", err.Error()
		e.log.Error("boot failed", "err", err)
		notifyStatus("failed: %v", err)
		return exitError
	}

	// Detect and fetch.
	notifyStatus("looking for a metadata source")
	fctx := ctx
	if w := time.Duration(e.cfg.Boot.Wait); w > 0 {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(ctx, w)
		defer cancel()
	}
	opts := e.sourceOptions()
	md, cands, err := datasource.Fetch(fctx, opts)
	st.Candidates = cands
	if errors.Is(err, datasource.ErrNoSource) {
		st.Outcome = "no-source"
		e.log.Info("no metadata source on this machine; nothing to do")
		notifyStatus("no metadata source on this machine")
		return exitNoSource
	}
	if err != nil {
		return fail(err)
	}
	st.Source, st.Transport, st.Dropped = md.Source, md.Origin.Transport, md.Warnings
	e.log.Info("metadata read", "source", md.Source, "transport", md.Origin.Transport,
		"instance_id", md.InstanceID, "keys", len(md.Origin.Items))

	// Decide the identity. A decision comes back even with an error (a
	// corrupt state file): it is the safe one, so go on with it.
	d, err := identity.Decide(identity.FromMetadata(e.root, md))
	if d.InstanceID == "" {
		return fail(fmt.Errorf("deciding the instance ID: %w", err))
	}
	if err != nil {
		e.log.Error("identity state not usable; keeping the safe ID", "err", err)
	}
	st.Identity = &d
	e.log.Info("instance ID decided", "instance_id", d.InstanceID, "reported", d.ReportedID,
		"rule", d.RuleName, "changed", d.Changed)
	cloudID, _ := identity.CloudInitID(e.root)
	newInstance := cloudID != d.InstanceID

	// Write the seed.
	s := seed.FromMetadata(md, d.InstanceID)
	if e.cfg.Network.Owner == "cloud-init" && md.Network != nil {
		if md.NetworkConfigRaw != nil && md.Source != datasource.SourceSmartOS {
			s.NetworkConfig = md.NetworkConfigRaw
		} else if s.NetworkConfig, err = md.Network.MarshalV1(); err != nil {
			return fail(fmt.Errorf("writing the network-config for cloud-init: %w", err))
		}
	}
	sr, err := seed.Write(e.root, s)
	if err != nil {
		return fail(err)
	}
	st.Seed = &seedStatus{Dir: seed.Dir, Written: sr.Written, Removed: sr.Removed, Imported: sr.Imported, Warnings: sr.Warnings}
	for _, w := range sr.Warnings {
		e.log.Warn("seed: " + w)
	}
	if sr.Imported != "" {
		e.log.Info("seed: imported the seed found in "+seed.Dir, "into", sr.Imported)
	}
	if sr.Changed() {
		e.log.Info("seed written", "dir", seed.Dir, "written", len(sr.Written), "removed", len(sr.Removed))
	} else {
		e.log.Info("seed unchanged", "dir", seed.Dir)
	}

	// The network (the BOOT event).
	allow := e.allowlist(md)
	switch {
	case netMode == "off":
		st.Network = &netResult{Action: "skipped", Reason: "--network off", Allowlist: allow.String()}
	case e.cfg.Network.Owner == "cloud-init":
		st.Network = &netResult{Action: "skipped", Reason: "network.owner is cloud-init; its network-config is in the seed", Allowlist: allow.String()}
	case allow.Reason() != "":
		// A typo closes the gate: change nothing, not even the files
		// rendered on an earlier run.
		st.Network = &netResult{Action: "skipped", Reason: "the driver allowlist is unusable (" + allow.Reason() + "); leaving the network alone", Allowlist: allow.String()}
	case !newInstance && !e.cfg.EventEnabled("boot"):
		st.Network = &netResult{Action: "skipped", Reason: "events.network does not include boot", Allowlist: allow.String()}
	default:
		live := netMode == "apply" || (netMode == "auto" && e.root.IsReal())
		notifyStatus("applying the network")
		res, err := e.networkStep(ctx, md.Network, allow, live)
		st.Network = res
		if err != nil {
			return fail(err)
		}
		if res.Partial() {
			st.Outcome = "partial"
			notifyStatus("instance %s; network applied in part (%d failed)", d.InstanceID, len(res.Failed))
			return exitPartial
		}
	}
	if st.Network != nil && st.Network.Action == "skipped" && st.Network.Reason != "" {
		e.log.Info("network: " + st.Network.Reason)
	}
	st.Outcome = "ok"
	notifyStatus("instance %s from %s", d.InstanceID, md.Source)
	return exitOK
}

// sourceOptions are the datasource options every command uses.
func (e *runEnv) sourceOptions() datasource.Options {
	o := datasource.Options{
		Root:           e.root,
		Sources:        e.cfg.Sources,
		MdataTransport: e.mdataTransport(),
		Logger:         e.log,
	}
	o.Mdata.Progress = notifyWaiting
	o.VMware.Redact = e.cfg.VMware.Redact
	// Never read back the seed seedkeeper writes for cloud-init.
	dir, err := seed.SourceDir(e.root)
	if err != nil {
		e.log.Warn("seed directory state unknown; not reading it", "err", err)
	}
	switch dir {
	case seed.Dir: // not written by seedkeeper yet: a person's seed, if any
	case "": // only our own output there
		o.NoCloud.SeedDirs = []string{datasource.NoCloudNetSeedDir}
	default: // the person's seed, imported on the first run
		o.NoCloud.SeedDirs = []string{dir, datasource.NoCloudNetSeedDir}
	}
	return o
}

// allowlist is the hotplug driver allowlist in force: the metadata's, else
// the configuration's, else the platform default. Anything unreadable
// allows nothing.
func (e *runEnv) allowlist(md *datasource.Metadata) hotplug.Allowlist {
	var mdSet hotplug.Setting
	if md != nil {
		mdSet = hotplug.Setting{Set: md.NetworkDriversSet, Value: md.NetworkDrivers, Err: datasource.NetworkDriversError(md)}
	}
	cfgSet := hotplug.Setting{Set: e.cfg.HotplugDriversSet()}
	if e.cfgErr != nil {
		cfgSet = hotplug.Setting{Set: true, Err: e.cfgErr}
	} else if cfgSet.Set {
		cfgSet.Value, cfgSet.Err = e.cfg.HotplugDriversValue()
	}
	a := hotplug.ResolveAllowlist(mdSet, cfgSet, platform(e.root))
	if r := a.Reason(); r != "" {
		e.log.Warn("hotplug allowlist allows no driver", "reason", r)
	}
	return a
}

func (e *runEnv) saveStatus(st *bootStatus) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	_, err = fsutil.WriteFile(e.root.Path(statusPath), append(b, '\n'), 0o644)
	return err
}
