package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/agent/report"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const statusHelp = `Usage: seedkeeper status [--root DIR] [--json | --format text|json|prometheus]
                         [--wait [--timeout D]]

Says what the last "seedkeeper boot" decided and why: the metadata source
and transport, the instance ID reported and the one handed to cloud-init
with the rule that decided it, the seed files, the network and the hotplug
allowlist in force, and what changed in the metadata since the boot
before (one line each: what changed, what was applied and by whom, what
waits for a new instance; docs/changes.md). It also warns, as
"seedkeeper image check" does, when cloud-init's settings do not leave
the seed to seedkeeper: the drop-in
missing, or overridden by a later file (datasource_list, NoCloud's fs_label,
network config); and it says when a metadata source appeared after boot
decided (it takes effect on the next boot).

What seedkeeper watch did after boot in this boot is there too, from
/run/seedkeeper/watch.json: the guestinfo.local-ipv4/-ipv6 it published
again (in place of boot's line for the same key) or failed to, and, per
NIC it applied after boot, the last result (applied, applied in part,
failed, given up, removed). A record of another boot is not shown; one that cannot
be read is a warning, and the rest is shown.

The record names the boot it describes (the kernel's boot ID): when it is
from an earlier boot, because seedkeeper boot has not run in this one yet
or failed before saving, status says so first and exits 5.

Options:
  --root DIR     resolve every system path under DIR
  --json         print the report as JSON ("verdict" and "problems" say
                 what the exit status says); the same as --format json
  --format F     text (the default), json, or prometheus: the metrics of
                 the report in the text format node_exporter's textfile
                 collector reads (seedkeeper_status_verdict, the last
                 boot's outcome and time, how long reading the metadata
                 took, the instance ID and whether it changed, the changes
                 held or failed, the network operations, each hot-added
                 NIC's applies and failures); metrics.textfile_dir in the
                 configuration has seedkeeper watch keep them in a file
  --wait         first wait until seedkeeper boot has finished in this boot
                 and, when its unit is enabled, seedkeeper watch is ready
  --timeout D    with --wait, wait at most D (such as 90s or 5m); 0, the
                 default, waits as long as it takes

Exit status, as cloud-init status's: 0 the last boot finished without a
problem (no metadata source on the machine is such a finish); 1 it failed,
or its record cannot be read; 2 it finished with problems a person or a
later boot can put right (the configuration not used, network operations
or changed settings that failed, the seed's warnings, a NIC the watch
could not apply, a guestinfo key not set, cloud-init's settings not
leaving the seed to seedkeeper: "problems" in --json); 3 usage; 5
seedkeeper boot has not run in this boot (or on this machine); 10
--timeout ran out; 128+N stopped by signal N.
`

// statusSchemaVersion is the version of "status --json" (docs/json.md).
const statusSchemaVersion = 1

// statusJSONDoc is the --json form: the report, and what the exit status
// says.
type statusJSONDoc struct {
	SchemaVersion int `json:"schema_version"`
	*report.Report
	Verdict  string   `json:"verdict"`
	Problems []string `json:"problems,omitempty"`
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("status")
	root := flags.String("root", "", "")
	asJSON := flags.Bool("json", false, "")
	format := flags.String("format", "text", "")
	wait := flags.Bool("wait", false, "")
	timeout := flags.Duration("timeout", 0, "")
	if code, ok := parseFlags(flags, args, statusHelp, stdout, stderr); !ok {
		return code
	}
	switch {
	case *asJSON && *format != "text" && *format != "json":
		fmt.Fprintln(stderr, "seedkeeper status: --json and another --format ask for two forms")
		return exitUsage
	case *asJSON:
		*format = "json"
	case *format != "text" && *format != "json" && *format != "prometheus":
		fmt.Fprintln(stderr, "seedkeeper status: --format: want text, json or prometheus")
		return exitUsage
	}
	if *timeout < 0 || (*timeout > 0 && !*wait) {
		fmt.Fprintln(stderr, "seedkeeper status: --timeout wants --wait and a duration of 0 or more")
		return exitUsage
	}
	e := newEnv(*root, "", io.Discard)
	if *wait {
		ctx, caught, stop := signalContext()
		defer stop()
		err := waitForBoot(ctx, e, *timeout)
		if code, ok := caught(); ok {
			fmt.Fprintln(stderr, "seedkeeper status: stopped by a signal")
			return code
		}
		if err != nil {
			fmt.Fprintf(stderr, "seedkeeper status: %s\n", err)
			return exitCode(err)
		}
	}
	rep, err := report.Read(e)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(stderr, "seedkeeper boot has not run on this machine yet")
		if *format == "prometheus" {
			notThis := false
			if err := (&report.Report{ThisBoot: &notThis}).WritePrometheus(stdout); err != nil {
				return exitError
			}
		}
		return statusExit[report.NotRun]
	case err != nil:
		fmt.Fprintf(stderr, "seedkeeper status: %s\n", safetext.Escape(err.Error()))
		return statusExit[report.Failed]
	}
	v := rep.Verdict()
	code := statusExit[v]
	switch *format {
	case "prometheus":
		if err := rep.WritePrometheus(stdout); err != nil {
			return exitError
		}
		return code
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(statusJSONDoc{SchemaVersion: statusSchemaVersion, Report: rep, Verdict: v.String(), Problems: rep.Problems()}); err != nil {
			return exitError
		}
		return code
	}
	if !rep.Current() {
		fmt.Fprintf(stdout, "NOT THIS BOOT: seedkeeper boot has not recorded this boot (boot ID %s): it has not run yet, or it failed before saving. What follows is from an earlier boot (boot ID %s).\n",
			rep.CurrentBootID, safetext.Escape(rep.BootID))
	}
	printStatus(stdout, rep)
	if rep.LateSource != "" {
		fmt.Fprintf(stdout, "Late source: %s\n", safetext.Escape(rep.LateSource))
	}
	return code
}

// waitPoll is how often --wait looks at the records again.
const waitPoll = 200 * time.Millisecond

// waitForBoot returns once seedkeeper boot has saved its record in this
// boot and, when the watch's unit is enabled, seedkeeper watch has marked
// itself ready in this boot. A record that cannot be told to be this
// boot's or not (no boot ID to read) counts as this boot's. It returns an
// errTimedOut saying what is still awaited when timeout (above 0) runs
// out, and ctx's error when ctx ends.
func waitForBoot(ctx context.Context, e agent.Env, timeout time.Duration) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	for {
		awaited := bootAwaited(e.Root)
		if awaited == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return errTimedOut{fmt.Errorf("--timeout %s ran out before %s", timeout, awaited)}
		case <-tick.C:
		}
	}
}

// bootAwaited says what --wait still waits for in the running boot, ""
// when nothing.
func bootAwaited(root sysroot.Root) string {
	current := agent.CurrentBootID(root)
	st, err := agent.ReadStatus(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "seedkeeper boot finished (it has not run on this machine yet)"
	case err != nil:
		return "" // what is wrong with the record, status says
	}
	if same, _ := st.ThisBoot(current); !same {
		return "seedkeeper boot finished in this boot"
	}
	if agent.WatchEnabled(root) && !agent.WatchIsReady(root, current) {
		return "seedkeeper watch was ready in this boot"
	}
	return ""
}

func printStatus(w io.Writer, rep *report.Report) {
	st := &rep.Status
	// Every string here may come from the metadata host: escaped, so
	// that escape sequences do not act on the admin's terminal.
	e := safetext.Escape
	j := func(ss []string) string { return strings.Join(safetext.Strings(ss), ", ") }
	fmt.Fprintf(w, "Last boot:   %s (seedkeeper %s): %s\n", st.Time.Format("2006-01-02 15:04:05 MST"), e(st.Seedkeeper), e(st.Outcome))
	if st.Error != "" {
		fmt.Fprintf(w, "Error:       %s\n", e(st.Error))
	}
	if st.ConfigError != "" {
		fmt.Fprintf(w, "Config:      NOT USED: %s\n", e(st.ConfigError))
	} else {
		fmt.Fprintf(w, "Config:      %s\n", e(st.Config))
	}
	for _, c := range st.Candidates {
		mark := "not present"
		if c.Found {
			mark = "detected"
		}
		fmt.Fprintf(w, "%-12s %s: %s\n", e(c.Source)+":", mark, e(c.Reason))
	}
	if st.Source != "" {
		fmt.Fprintf(w, "Read from:   %s via %s\n", e(st.Source), e(st.Transport))
	}
	if st.DeviceWait != "" {
		fmt.Fprintf(w, "Late devices: %s\n", e(st.DeviceWait))
	}
	if h := st.CloudInit; h != nil {
		fmt.Fprintf(w, "cloud-init:  %s\n", e(h.Reason))
	}
	for _, d := range st.Dropped {
		fmt.Fprintf(w, "Dropped:     %s\n", e(d))
	}
	if d := st.Identity; d != nil {
		fmt.Fprintf(w, "Instance ID: %s (reported %s; rule %d, %s)\n", e(d.InstanceID), e(d.ReportedID), d.Rule, e(d.RuleName))
		fmt.Fprintf(w, "Why:         %s\n", e(d.Explanation))
	} else if s := rep.Pin; s != nil {
		fmt.Fprintf(w, "Pinned ID:   %s (since %s)\n", e(s.InstanceID), s.PinnedAt.Format("2006-01-02 15:04:05 MST"))
	}
	if s := st.Seed; s != nil {
		var parts []string
		if len(s.Written) > 0 {
			parts = append(parts, "wrote "+j(s.Written))
		}
		if len(s.Removed) > 0 {
			parts = append(parts, "removed "+j(s.Removed))
		}
		state := "unchanged"
		if len(parts) > 0 {
			state = strings.Join(parts, "; ")
		}
		fmt.Fprintf(w, "Seed:        %s: %s\n", e(s.Dir), state)
		for _, x := range s.Warnings {
			fmt.Fprintf(w, "             warning: %s\n", e(x))
		}
	}
	if st.Provision != "" {
		fmt.Fprintf(w, "Provision:   %s\n", e(st.Provision))
	}
	if c := st.Changes; c != nil {
		changed, applied, waiting := c.Lines()
		switch {
		case c.Baseline != "":
			fmt.Fprintf(w, "Changes:     %s\n", e(c.Baseline))
		case changed == "":
			fmt.Fprintf(w, "Changes:     none since the last boot\n")
		default:
			fmt.Fprintf(w, "Changed:     %s\n", e(changed))
			if applied != "" {
				fmt.Fprintf(w, "Applied:     %s\n", e(applied))
			}
			if waiting != "" {
				fmt.Fprintf(w, "Waiting:     %s (until a new instance)\n", e(waiting))
			}
		}
		for _, x := range c.Warnings {
			fmt.Fprintf(w, "             warning: %s\n", e(x))
		}
	}
	if n := st.Network; n != nil {
		switch n.Action {
		case "skipped":
			fmt.Fprintf(w, "Network:     left alone: %s\n", e(n.Reason))
		default:
			owned := j(n.Owned)
			if owned == "" {
				owned = "none present"
			}
			fmt.Fprintf(w, "Network:     %s: %d operations, %d failed; owned NICs: %s\n", e(n.Action), len(n.Ops), len(n.Failed), owned)
			for _, f := range n.Failed {
				fmt.Fprintf(w, "             failed: %s\n", e(f))
			}
		}
		if n.Stack != "" {
			fmt.Fprintf(w, "Stack:       %s\n", e(n.Stack))
		}
		for _, x := range n.Netplan {
			fmt.Fprintf(w, "netplan:     %s\n", e(x))
		}
		if n.ResolvConf != "" {
			fmt.Fprintf(w, "Resolvers:   /etc/resolv.conf %s\n", e(n.ResolvConf))
		}
		fmt.Fprintf(w, "Hotplug:     allowlist %s\n", e(n.Allowlist))
	}
	printHotplug(w, rep)
	printVMware(w, rep)
	for _, x := range append(slices.Clone(rep.Warnings), rep.WatchWarnings...) {
		fmt.Fprintf(w, "Warning:     %s\n", e(x))
	}
}

// printVMware prints what the VMware source did in the last boot (its
// wait, fallback and guestinfo, then the customization lines) and what
// seedkeeper watch did since: the guestinfo it set and a customization
// spec handed over while the machine ran.
func printVMware(w io.Writer, rep *report.Report) {
	st := &rep.Status
	e := safetext.Escape
	if v := st.VMware; v != nil {
		if v.Wait != "" {
			fmt.Fprintf(w, "Waited:      %s\n", e(v.Wait))
		}
		if v.Fallback != "" {
			fmt.Fprintf(w, "Fallback:    %s\n", e(v.Fallback))
		}
		for _, p := range v.Published {
			key, _, _ := strings.Cut(p, " ")
			if g := rep.Watch.Key(key); g != nil && g.Value != "" {
				continue // the watch set it since: its line says what the VMX holds
			}
			fmt.Fprintf(w, "Guestinfo:   published %s\n", e(p))
		}
		for _, x := range v.Notes {
			fmt.Fprintf(w, "Guestinfo:   %s\n", e(x))
		}
	}
	printGuestinfo(w, rep)
	if v := st.VMware; v != nil {
		for _, x := range v.Customization {
			fmt.Fprintf(w, "VMware Tools: %s\n", e(x))
		}
	}
	if rep.Watch != nil {
		// A spec handed over while the machine ran, after boot's lines.
		for _, c := range rep.Watch.Customization {
			for _, x := range c.Lines {
				fmt.Fprintf(w, "VMware Tools: %s (seedkeeper-watch, %s)\n", e(x), clock(c.At, rep.Time))
			}
		}
	}
}

// printGuestinfo prints what seedkeeper watch set in guestinfo after boot:
// per key, the value it last set, and a failure since.
func printGuestinfo(w io.Writer, rep *report.Report) {
	if rep.Watch == nil {
		return
	}
	e := safetext.Escape
	for _, g := range rep.Watch.Guestinfo {
		if g.Value != "" {
			fmt.Fprintf(w, "Guestinfo:   published %s %s (seedkeeper-watch, %s)\n", e(g.Key), e(g.Value), clock(g.At, rep.Time))
		}
		switch f := g.Failed; {
		case f == nil:
		case f.RetryAt.IsZero(): // what was to be set is no longer wanted
			fmt.Fprintf(w, "Guestinfo:   %s: setting failed (%s)\n", e(g.Key), e(f.Error))
		default:
			fmt.Fprintf(w, "Guestinfo:   %s: setting failed (%s), trying again after %s\n", e(g.Key), e(f.Error), clock(f.RetryAt, rep.Time))
		}
	}
}

// printHotplug prints what became of each NIC seedkeeper watch applied
// after boot, its last event, in the order they happened.
func printHotplug(w io.Writer, rep *report.Report) {
	if rep.Watch == nil {
		return
	}
	e := safetext.Escape
	nics := slices.Clone(rep.Watch.Hotplug)
	slices.SortStableFunc(nics, func(a, b agent.WatchNIC) int { return a.Last().At.Compare(b.Last().At) })
	for _, n := range nics {
		ev := n.Last()
		var what string
		switch ev.Result {
		case hotplug.Applied:
			what = "applied at " + clock(ev.At, rep.Time)
		case hotplug.Partial:
			what = "applied in part at " + clock(ev.At, rep.Time) + ": " + e(ev.Error)
		case hotplug.GaveUp:
			what = "given up at " + clock(ev.At, rep.Time) + ": " + e(ev.Error)
		case hotplug.Removed:
			what = "removed at " + clock(ev.At, rep.Time)
		default:
			what = "failed at " + clock(ev.At, rep.Time) + ": " + e(ev.Error)
		}
		fmt.Fprintf(w, "Hotplug:     %s (%s): %s\n", e(ev.Name), e(n.MAC), what)
	}
}

// clock is t as the time of day when it is on the day of the boot, ref;
// with the date when it is not (a machine up for days).
func clock(t, ref time.Time) string {
	if y, m, d := t.Date(); !ref.IsZero() {
		if ry, rm, rd := ref.In(t.Location()).Date(); y == ry && m == rm && d == rd {
			return t.Format("15:04:05")
		}
	}
	return t.Format("2006-01-02 15:04:05")
}
