package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/seedkeeper/seedkeeper/image"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const imageUsage = `Usage: seedkeeper image check [--root DIR] [--json]
       seedkeeper image seal  [--root DIR] [--keep-ssh-host-keys] [--dry-run]
                              [--expect DIGEST|FILE] [--json]

For image builders (Packer, virt-customize, a template made by hand).

check reads an image (the running system, or a mounted or extracted root
with --root) and says, item by item, what a clone made from it will do at
its first boot, and for each finding the command that fixes it:
  units             seedkeeper's units installed and enabled (by their
                    .wants links: an image never booted is checked too),
                    and cloud-init installed
  drop-in           /etc/cloud/cloud.cfg.d/95-seedkeeper.cfg present and not
                    overridden by a later file (datasource_list, NoCloud's
                    fs_label, network config); names the file that wins
  nocloud-line      a ds=nocloud line (kernel command line, SMBIOS serial,
                    /etc/default/grub) forcing cloud-init's datasource: its
                    i= and seedfrom beside seedkeeper's seed
  cloud-init-hotplug
                    cloud-init's own hotplug (its udev rule, hotplug.enabled,
                    updates.network.when) beside seedkeeper-watch
  cloud-init-state  cloud-init's instance state from an earlier boot, and
                    what it means for derived IDs (Proxmox)
  seedkeeper-state  seedkeeper's identity pin, status and network receipt
  sealed            the sealed marker image seal leaves
  machine-id        /etc/machine-id filled or empty; D-Bus's copy
  ssh-host-keys     SSH host keys, and what replaces them on a clone
  network-stack     systemd-networkd, NetworkManager or ifupdown (netplan over
                    networkd or NetworkManager, and its catch-alls), and whether
                    seedkeeper can own NICs on it
  allowlist         the hotplug driver allowlist in effect
  seed-dir          a seed a person left in cloud-init's seed directory
  vmware-tools      VMware Tools (open-vm-tools, from dpkg's database) hands
                    customization specs to seedkeeper: before 12.4 it reads
                    disable_vmware_customization in /etc/cloud/cloud.cfg alone

seal makes the image ready to be cloned, and nothing more. It removes
cloud-init's instance state and logs (as "cloud-init clean --logs"; the
scripts of /etc/cloud/clean.d are not run), the seed seedkeeper wrote (a
seed a person put there is kept), seedkeeper's identity pin, status and
receipt, /var/lib/dbus/machine-id when it is not a link, the SSH host keys
(unless --keep-ssh-host-keys) and the network files seedkeeper rendered
that still carry its header (its ifupdown stanzas in the image, and on
the running system its files under /run). It empties /etc/machine-id (not
removed: systemd then treats the first boot as the first boot), and leaves
a sealed marker so that the first boot of every clone is a new instance,
even for derived-ID sources. It never touches a path it does not list,
resolves links inside the root as a chroot would (an absolute link starts
at the root, ".." stays in it), never crosses a mount point inside it,
removes a log only when it is a file (a directory there is listed as
skipped, with why) and a tree only in cloud-init's state directory and its
own seed.
It ends by running check and printing its verdict. Run it last, then shut
the machine down without booting it again.

Options:
  --root DIR             the image's root instead of the running system
  --json                 (check) print the report as JSON
  --keep-ssh-host-keys   (seal) leave the SSH host keys in place
  --dry-run              (seal) print what seal removes, change nothing;
                         the real run removes exactly that list. The plan
                         ends with its digest: of each action and the state
                         of its path (kind, size, modification time) when
                         the plan was made
  --expect DIGEST|FILE   (seal) act only if the plan made right before
                         acting is the one that was read: its digest, or a
                         file holding "image seal --dry-run --json"'s
                         output (then what changed is said action by
                         action); otherwise change nothing and exit 5
  --json                 (seal) print the plan (schema_version, root,
                         dry_run, digest, actions with op, path, why,
                         state), and after a real run error and the check

Exit status:
  0  a clone will behave (seal: sealed, and check found nothing)
  1  findings: a clone will not behave as it should
  2  error: an item could not be checked, or seal could not finish
  3  usage error
  5  (seal --expect) the plan is no longer the one that was read; nothing
     was changed
`

// checkSchemaVersion is the version of "image check --json" (docs/json.md).
const checkSchemaVersion = 1

// runImage implements "seedkeeper image check|seal".
func runImage(args []string, stdout, stderr io.Writer) int {
	flags, code, ok := subcommand("image", args, []string{"check", "seal"}, imageUsage, stdout, stderr)
	if !ok {
		return code
	}
	sub := args[0]
	root := flags.String("root", "", "")
	var keepKeys, dryRun *bool
	var expect *string
	asJSON := flags.Bool("json", false, "")
	if sub == "seal" {
		keepKeys = flags.Bool("keep-ssh-host-keys", false, "")
		dryRun = flags.Bool("dry-run", false, "")
		expect = flags.String("expect", "", "")
	}
	if code, ok := parseFlags(flags, args[1:], imageUsage, stdout, stderr); !ok {
		return code
	}
	r := sysroot.Root(*root)
	if sub == "check" {
		return imageCheck(r, *asJSON, stdout, stderr)
	}
	return imageSeal(r, image.SealOptions{KeepSSHHostKeys: *keepKeys, DryRun: *dryRun}, *expect, *asJSON, stdout, stderr)
}

func imageCheck(r sysroot.Root, asJSON bool, stdout, stderr io.Writer) int {
	rep, err := image.Check(string(r))
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper image check: %s\n", clean(err.Error()))
		return exitError
	}
	if asJSON {
		out := struct {
			SchemaVersion int `json:"schema_version"`
			*image.Report
			Verdict string `json:"verdict"`
		}{checkSchemaVersion, rep, rep.Summary()}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return exitError
		}
		return checkExit(rep)
	}
	fmt.Fprintf(stdout, "Image: %s\n\n", clean(rep.Root))
	printItems(stdout, rep, false)
	fmt.Fprintf(stdout, "\nVerdict: %s\n", rep.Summary())
	return checkExit(rep)
}

// printItems prints the report's items; with problemsOnly, only findings
// and errors.
func printItems(w io.Writer, rep *image.Report, problemsOnly bool) {
	for _, it := range rep.Items {
		if problemsOnly && it.Verdict != image.Finding && it.Verdict != image.Error {
			continue
		}
		fmt.Fprintf(w, "%-8s %s: %s\n", strings.ToUpper(string(it.Verdict)), clean(it.ID), clean(it.Found))
		fmt.Fprintf(w, "         clone: %s\n", clean(it.Clone))
		if it.Fix != "" {
			fmt.Fprintf(w, "         fix:   %s\n", clean(it.Fix))
		}
	}
}

func imageSeal(r sysroot.Root, opts image.SealOptions, expect string, asJSON bool, stdout, stderr io.Writer) int {
	var read []image.Action // the plan that was read, when --expect names a file
	if expect != "" {
		var err error
		if opts.Expect, read, err = readExpected[image.Action](expect, "image seal"); err != nil {
			fmt.Fprintf(stderr, "seedkeeper image seal: --expect: %s\n", clean(err.Error()))
			return exitUsage
		}
	}
	s, err := image.Seal(string(r), opts)
	if err != nil && s == nil {
		fmt.Fprintf(stderr, "seedkeeper image seal: %s\n", clean(err.Error()))
		return exitError
	}
	if errors.Is(err, image.ErrPlanChanged) {
		fmt.Fprintf(stderr, "seedkeeper image seal: %s\n", clean(err.Error()))
		for _, l := range image.DiffPlans(read, s.Plan.Actions) {
			if read != nil {
				fmt.Fprintf(stderr, "  %s\n", clean(l))
			}
		}
		if read == nil {
			fmt.Fprintln(stderr, "The plan now (give --expect the dry run's --json output to be told what changed):")
			printPlan(stderr, s.Plan)
		}
		if asJSON {
			writeSealJSON(stdout, r, opts, s, err)
		}
		return exitCode(err)
	}
	if asJSON {
		writeSealJSON(stdout, r, opts, s, err)
		switch {
		case opts.DryRun:
			return exitOK
		case err != nil || s.Err != nil:
			return exitError
		}
		return checkExit(s.Report)
	}
	where := clean(r.Path("/"))
	if r.IsReal() {
		where = "/ (the running system)"
	}
	if opts.DryRun {
		fmt.Fprintf(stdout, "Dry run: sealing %s would do this, and nothing else:\n", where)
		printPlan(stdout, s.Plan)
		return exitOK
	}
	fmt.Fprintf(stdout, "Sealing %s:\n", where)
	printPlan(stdout, s.Plan)
	if s.Err != nil {
		fmt.Fprintf(stderr, "seedkeeper image seal: %s\n", clean(s.Err.Error()))
	}
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper image seal: %s\n", clean(err.Error()))
		return exitError
	}
	fmt.Fprintln(stdout, "\nimage check after the seal:")
	printItems(stdout, s.Report, true)
	fmt.Fprintf(stdout, "Verdict: %s\n", s.Report.Summary())
	if s.Err != nil {
		return exitError
	}
	return checkExit(s.Report)
}

func printPlan(w io.Writer, p *image.Plan) {
	for _, a := range p.Actions {
		fmt.Fprintf(w, "  %-11s %s: %s\n", a.Op, clean(a.Path), clean(a.Why))
	}
	fmt.Fprintf(w, "Plan digest: %s\n", p.Digest())
}

// clean makes text from the image safe for a terminal (a file name may
// hold any byte): the one escaper, safetext.Escape.
func clean(s string) string { return safetext.Escape(s) }
