package main

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

var netUsage = `Usage: seedkeeper net plan  --config FILE [--drivers LIST] [--root DIR] [--json]
       seedkeeper net apply --config FILE [--drivers LIST] [--root DIR] [--json]
                            [--expect DIGEST]

plan prints, and apply makes, the changes that bring the NICs seedkeeper
owns on this machine to the network configuration in FILE (cloud-init
network config version 1 or 2, YAML or JSON, with or without a top-level
"network:" key). One line per operation, for example
  eth0 (bc:24:11:aa:bb:02): add address 192.0.2.10/24

A NIC is owned when its MAC (or, for an entry without a MAC, its name) is in
the configuration and its driver is on the allowlist. Other links are never
read beyond the link list and never changed. Addresses and routes already
present are left alone; the only ones removed are those seedkeeper added
(recorded in the receipt, ` + agent.ReceiptPath + `)
and the configuration no longer has. DHCP and SLAAC are not configured here
(the systemd-networkd files do that); their links are only brought up.
Running apply twice with the same configuration changes nothing the second
time.

Options:
  --config FILE   the network configuration (required)
  --drivers LIST  comma-separated driver allowlist for this run; an empty
                  list allows nothing. Without it the allowlist is the one
                  "seedkeeper boot" decides: the metadata's (VMware
                  network-drivers, seedkeeper:network-drivers elsewhere),
                  else hotplug.drivers of ` + config.DefaultPath + `,
                  else the platform's default (below); the metadata is
                  read to find it
  --root DIR      read the configuration, the metadata sources and the
                  platform, and read and write the receipt, under DIR
                  instead of /; the links changed are always those of
                  this network namespace
  --json          print the plan (and after apply each operation's
                  result) as JSON: schema_version, digest, ops, notes,
                  and for apply results (op, error) and error
  --expect DIGEST (apply) apply only if the plan made right before
                  applying, under the receipt's lock, is the one plan
                  printed: its digest covers each operation, the links
                  owned and their MACs and names, the NICs absent and the
                  receipt. Otherwise change nothing, print the new plan
                  and exit 5

The allowlist in force is printed on stderr. The defaults by platform:
` + defaultDriversHelp() + `

Exit status:
  0  done, or nothing to do
  2  error: an unreadable configuration, metadata or receipt, or links
     that could not be read (nothing was changed); or, after apply, a
     receipt that could not be saved
  3  usage: bad arguments
  4  apply only: some operations failed and the others were applied; each
     failure is printed with its operation
  5  apply --expect: the plan is no longer the one that was read; nothing
     was changed
  128+N  stopped by signal N (SIGINT, SIGTERM)
`

// defaultDriversHelp lists the default allowlist of each platform, from
// the source table.
func defaultDriversHelp() string {
	var b strings.Builder
	for _, name := range datasource.Names() {
		s, _ := datasource.Lookup(name)
		if len(s.Platforms) > 0 {
			fmt.Fprintf(&b, "  %-26s %s\n", strings.Join(s.Platforms, ", "), strings.Join(s.Drivers, ","))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// runNet implements "seedkeeper net plan|apply".
func runNet(args []string, stdout, stderr io.Writer) (code int) {
	fs, code, ok := subcommand("net", args, []string{"plan", "apply"}, netUsage, stdout, stderr)
	if !ok {
		return code
	}
	sub := args[0]
	config := fs.String("config", "", "")
	drivers := driversFlag(fs)
	root := fs.String("root", "", "")
	asJSON := fs.Bool("json", false, "")
	var expect *string
	if sub == "apply" {
		expect = fs.String("expect", "", "")
	}
	if code, ok := parseFlags(fs, args[1:], netUsage, stdout, stderr); !ok {
		return code
	}
	opts := apply.SyncOptions{DryRun: sub == "plan"}
	if expect != nil {
		opts.Expect = *expect
		if opts.Expect != "" && !validDigest(opts.Expect) {
			fmt.Fprintf(stderr, "seedkeeper net apply: --expect: a digest is sha256: and 64 hex digits\n")
			return exitUsage
		}
	}
	if *config == "" {
		fmt.Fprintf(stderr, "seedkeeper net %s: --config FILE is required\n", sub)
		return exitUsage
	}
	flagAllow, err := drivers()
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper net %s: %v\n", sub, err)
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "seedkeeper net %s: %v\n", sub, err)
		return exitCode(err)
	}

	cfg, err := agent.ReadNetworkConfig(*config)
	if err != nil {
		return fail(err)
	}
	ctx, caught, stop := signalContext()
	defer stop()
	defer func() {
		if c, ok := caught(); ok {
			code = c
		}
	}()
	var allow hotplug.Allowlist
	if flagAllow != nil {
		allow = *flagAllow
	} else {
		// The allowlist boot decides, not one of this command's own.
		allow, err = newEnv(*root, "", stderr).NetworkAllowlist(ctx)
		if err != nil {
			return fail(fmt.Errorf("%w (give --drivers to choose the allowlist)", err))
		}
	}
	fmt.Fprintf(stderr, "seedkeeper net %s: driver allowlist %s\n", sub, safetext.Escape(allow.String()))
	// The receipt is read and written by its path: under a root no link
	// or mount may lie on the way to it (as boot and the watch check).
	if err := fsutil.NoLinkOnTheWayIn(*root, path.Dir(agent.ReceiptPath)); err != nil {
		return fail(fmt.Errorf("the network receipt: %w", err))
	}
	opts.Receipt = sysroot.Root(*root).Path(agent.ReceiptPath)
	opts.Allow = allow.Allows
	s, err := apply.Sync(ctx, cfg, opts)
	if errors.Is(err, apply.ErrPlanChanged) {
		fmt.Fprintf(stderr, "seedkeeper net apply: %v\nThe plan now:\n", err)
		fmt.Fprint(stderr, s.Plan)
		if *asJSON {
			writeNetJSON(stdout, s, err)
		}
		return exitCode(err)
	}
	if s == nil || s.Result == nil && sub == "apply" {
		return fail(err)
	}
	if *asJSON {
		writeNetJSON(stdout, s, err)
		return exitCode(err)
	}
	if sub == "plan" {
		fmt.Fprint(stdout, s.Plan)
		fmt.Fprintf(stdout, "Plan digest: %s\n", s.Plan.Digest())
		return exitOK
	}
	for _, o := range s.Result.Ops {
		if o.Err != nil {
			fmt.Fprintf(stdout, "FAILED %s: %v\n", o.Op, o.Err)
		} else {
			fmt.Fprintf(stdout, "done   %s\n", o.Op)
		}
	}
	if len(s.Result.Ops) == 0 {
		fmt.Fprintln(stdout, "no changes")
	}
	for _, n := range s.Plan.Notes {
		fmt.Fprintln(stdout, "note: "+n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper net apply: %v\n", err)
	}
	return exitCode(err)
}
