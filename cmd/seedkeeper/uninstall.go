package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/image"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const uninstallHelp = `Usage: seedkeeper uninstall [--root DIR] [--dry-run] [--expect DIGEST|FILE]
                            [--json]

Takes away what seedkeeper wrote for cloud-init and the network stacks, so
that cloud-init sees what it would had seedkeeper never been installed: the
NoCloud seed in /var/lib/cloud/seed/nocloud and its marker, the SmartOS
per-boot scripts and /var/db/mdata-user-data, the network files rendered
for systemd-networkd, NetworkManager and ifupdown (the ifupdown stanza is
persistent), and the no-source gate. A seed a person had put in the seed
directory before seedkeeper first ran is given back, byte for byte, but
only where its path is still free when it is written: a file that
appeared there after the plan was made is left as it is, and the
imported copy kept and named.

Only a file that still holds what seedkeeper wrote is removed (the seed
marker's hashes say so; a network file by its name and its first line),
and only while it holds what the plan read: a file edited after the
plan was made is left and named.
Anything else is left in place and named on stderr, as is
/etc/resolv.conf when seedkeeper wrote it (removing it would end name
resolution now). The live network and seedkeeper's own state in
/var/lib/seedkeeper are not touched; a purge removes that state, all but
an imported seed that could not be given back, which it keeps. Under
--root every path is reached inside DIR: a link of the image's is never
followed out of it. Running it again changes nothing.

The package's removal runs it (prerm of the .deb, %preun of the .rpm). The
next boot is then plain cloud-init's: it decides the instance ID alone,
from the seed it finds, so a machine whose ID seedkeeper kept stable
across config changes becomes a new instance (new SSH host keys), as it
would without seedkeeper.

There is no way out that keeps the instance ID: a seed holding only the
kept ID would make cloud-init restore its cached datasource on every boot
(its quick instance-id check passes), so a drive's changes would never be
read, and it would render no network (seedkeeper owned it), leaving the
machine without one.

Uninstall plans, then carries out exactly the plan: every file removed,
every file given back, in order, each with the state of its path (kind,
size, modification time, and for a file of seedkeeper's its hash) when
the plan was made, and a digest over it. --dry-run prints the plan and
changes nothing; --expect acts only when the plan made right before
acting is the one that was read.

Options:
  --root DIR             work under DIR instead of /
  --dry-run              print the plan and its digest, change nothing
  --expect DIGEST|FILE   act only if the plan made right before acting is
                         the one that was read: its digest, or a file
                         holding "uninstall --dry-run --json"'s output (then
                         what changed is said action by action); otherwise
                         change nothing and exit 5
  --json                 print as JSON (schema_version, root, dry_run,
                         digest, actions with op, path, why, state; removed,
                         restored, left; plan_changed, error)

Exit status:
  0  done (also when files were left), or the plan printed (--dry-run)
  2  error
  3  usage error
  5  (--expect) the plan is no longer the one that was read; nothing was
     changed
`

// uninstallSchemaVersion is the version of "uninstall --json" (docs/json.md).
const uninstallSchemaVersion = 1

// uninstallJSON is "uninstall --json" (and --dry-run --json).
type uninstallJSON struct {
	SchemaVersion int                     `json:"schema_version"`
	Root          string                  `json:"root"`
	DryRun        bool                    `json:"dry_run"`
	Digest        string                  `json:"digest"`
	Actions       []agent.UninstallAction `json:"actions"`
	Removed       []string                `json:"removed"`
	Restored      []string                `json:"restored"`
	Left          []string                `json:"left"`
	// PlanChanged: --expect named another plan; nothing was changed.
	PlanChanged bool   `json:"plan_changed,omitempty"`
	Error       string `json:"error,omitempty"`
}

func runUninstall(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("uninstall")
	root := flags.String("root", "", "")
	dryRun := flags.Bool("dry-run", false, "")
	expect := flags.String("expect", "", "")
	asJSON := flags.Bool("json", false, "")
	if code, ok := parseFlags(flags, args, uninstallHelp, stdout, stderr); !ok {
		return code
	}
	r := sysroot.Root(*root)
	var read []agent.UninstallAction // the plan that was read, when --expect names a file
	var digest string
	if *expect != "" {
		var err error
		if digest, read, err = readExpected[agent.UninstallAction](*expect, "uninstall"); err != nil {
			fmt.Fprintf(stderr, "seedkeeper uninstall: --expect: %s\n", safetext.Escape(err.Error()))
			return exitUsage
		}
	}
	var u *agent.Uninstalled
	var err error
	if *dryRun {
		var p *agent.UninstallPlan
		p, err = agent.PlanUninstall(r)
		u = &agent.Uninstalled{Plan: p, Left: p.Left}
	} else {
		u, err = agent.UninstallExpecting(r, digest)
	}
	changed := errors.Is(err, agent.ErrPlanChanged)
	if !*asJSON || !changed {
		for _, l := range u.Left {
			fmt.Fprintf(stderr, "seedkeeper uninstall: left %s\n", safetext.Escape(l))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper uninstall: %s\n", safetext.Escape(err.Error()))
	}
	if changed && read != nil {
		for _, l := range image.DiffPlans(asSealActions(read), asSealActions(u.Plan.Actions)) {
			fmt.Fprintf(stderr, "  %s\n", safetext.Escape(l))
		}
	} else if changed && !*asJSON {
		fmt.Fprintln(stderr, "The plan now (give --expect the dry run's --json output to be told what changed):")
		printUninstallPlan(stderr, u.Plan)
	}
	if *asJSON {
		out := uninstallJSON{SchemaVersion: uninstallSchemaVersion, Root: r.Path("/"), DryRun: *dryRun,
			Actions: []agent.UninstallAction{}, Removed: nonNil(u.Removed), Restored: nonNil(u.Restored), Left: nonNil(u.Left),
			PlanChanged: changed}
		if u.Plan != nil {
			out.Digest, out.Actions = u.Plan.Digest(), u.Plan.Actions
		}
		if err != nil {
			out.Error = err.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "seedkeeper uninstall: %v\n", err)
			return exitError
		}
	}
	switch {
	case changed:
		return exitCode(err)
	case err != nil:
		return exitError
	case *asJSON:
		return exitOK
	case *dryRun:
		where := safetext.Escape(r.Path("/"))
		if r.IsReal() {
			where = "/ (the running system)"
		}
		fmt.Fprintf(stdout, "Dry run: uninstall under %s would do this, and nothing else:\n", where)
		printUninstallPlan(stdout, u.Plan)
		return exitOK
	}
	for _, p := range u.Removed {
		fmt.Fprintf(stdout, "removed %s\n", safetext.Escape(p))
	}
	for _, p := range u.Restored {
		fmt.Fprintf(stdout, "gave back %s\n", safetext.Escape(p))
	}
	return exitOK
}

func printUninstallPlan(w io.Writer, p *agent.UninstallPlan) {
	for _, a := range p.Actions {
		fmt.Fprintf(w, "  %-15s %s: %s\n", a.Op, safetext.Escape(a.Path), safetext.Escape(a.Why))
	}
	fmt.Fprintf(w, "Plan digest: %s\n", p.Digest())
}

// asSealActions gives an uninstall plan's actions the type image.DiffPlans
// compares: the same op, path, why and state.
func asSealActions(l []agent.UninstallAction) []image.Action {
	out := make([]image.Action, len(l))
	for i, a := range l {
		out[i] = image.Action{Op: image.Op(a.Op), Path: a.Path, Why: a.Why, State: a.State}
	}
	return out
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
