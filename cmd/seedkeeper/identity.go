package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const identityUsage = `Usage: seedkeeper identity show  [--root DIR] [--json]
       seedkeeper identity reset [--root DIR] [--json]
       seedkeeper identity pin   [--root DIR] [--json]

show prints the instance ID seedkeeper pinned for this machine, the machine
identity it belongs to, the rule that pinned it and when, cloud-init's
current ID, and the explanation of the last decision, from
` + identity.StatePath + `.

reset makes the next boot a new instance on purpose (new SSH host keys,
cloud-init's per-instance modules run again): the next boot hands cloud-init
the reported instance ID followed by "-r" and 8 random hex digits chosen
now, and pins it. Running reset again before that boot changes nothing.
` + identityPinUsage + `
Options:
  --root DIR  read and write the state under DIR instead of /
  --json      print the state as JSON

Exit status:
  0  done
  2  error: the state file cannot be read or written
  3  usage error
`

// runIdentity implements "seedkeeper identity show|reset|pin".
// identitySchemaVersion is the version of "identity show|reset|pin
// --json" (docs/json.md).
const identitySchemaVersion = 1

func runIdentity(args []string, stdout, stderr io.Writer) int {
	fs, code, ok := subcommand("identity", args, []string{"show", "reset", "pin"}, identityUsage, stdout, stderr)
	if !ok {
		return code
	}
	sub := args[0]
	rootDir := fs.String("root", "", "")
	asJSON := fs.Bool("json", false, "")
	if code, ok := parseFlags(fs, args[1:], identityUsage, stdout, stderr); !ok {
		return code
	}
	root := sysroot.Root(*rootDir)
	if sub == "pin" {
		return runIdentityPin(root, *asJSON, stdout, stderr)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "seedkeeper identity %s: %s\n", sub, safetext.Escape(err.Error()))
		if errors.Is(err, identity.ErrBadState) {
			fmt.Fprintf(stderr, "seedkeeper identity %s: until it is fixed, boot keeps cloud-init's current instance ID; removing the file makes the next boot pin cloud-init's current ID again\n", sub)
		}
		return exitError
	}

	var st *identity.State
	var err error
	if sub == "reset" {
		st, err = identity.Reset(string(root), time.Time{})
	} else {
		st, err = identity.Load(root)
	}
	if err != nil {
		return fail(err)
	}
	ciID, ciErr := identity.CloudInitID(root)

	if *asJSON {
		out := struct {
			SchemaVersion int             `json:"schema_version"`
			Path          string          `json:"path"`
			State         *identity.State `json:"state"`
			CloudInitID   string          `json:"cloud_init_instance_id,omitempty"`
		}{identitySchemaVersion, identity.StatePath, st, ciID}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}

	if sub == "reset" {
		r := st.Reset
		fmt.Fprintf(stdout, "Reset requested at %s: the next boot will be a new instance.\n", r.RequestedAt.Format(time.RFC3339))
		if r.From != "" {
			fmt.Fprintf(stdout, "The pinned ID %s will be replaced by the reported ID followed by -r%s.\n", safetext.Escape(r.From), safetext.Escape(r.Suffix))
		} else {
			fmt.Fprintf(stdout, "The next boot will use the reported ID followed by -r%s.\n", safetext.Escape(r.Suffix))
		}
		return exitOK
	}
	showIdentity(stdout, st, ciID, ciErr)
	return exitOK
}

func showIdentity(w io.Writer, st *identity.State, ciID string, ciErr error) {
	when := func(t time.Time) string {
		if t.IsZero() {
			return "unknown"
		}
		return t.Format(time.RFC3339)
	}
	// Every value may come from the metadata host: escaped.
	line := func(k, v string) { fmt.Fprintf(w, "%-17s %s\n", k+":", safetext.Escape(v)) }
	switch {
	case ciErr != nil:
		line("cloud-init's ID", ciErr.Error())
	case ciID == "":
		line("cloud-init's ID", "none (cloud-init has not run here)")
	default:
		line("cloud-init's ID", ciID)
	}
	if st == nil {
		fmt.Fprintf(w, "No identity state yet (%s): seedkeeper has not decided an instance ID on this machine.\n", identity.StatePath)
		return
	}
	if st.InstanceID == "" {
		line("Pinned ID", "none")
	} else {
		line("Pinned ID", st.InstanceID)
		line("Machine identity", st.MachineID)
		line("Pinned", fmt.Sprintf("%s by rule %d (%s), source %s", when(st.PinnedAt), st.Rule, st.RuleName, st.Source))
		line("Confirmed", when(st.ConfirmedAt))
		line("Reported ID", st.ReportedID)
	}
	if r := st.Reset; r != nil {
		line("Reset", fmt.Sprintf("requested at %s: the next boot will be a new instance (suffix -r%s)", when(r.RequestedAt), r.Suffix))
	}
	if d := st.Last; d != nil {
		line("Last decision", fmt.Sprintf("%s: %s by rule %d (%s), reported %s", when(d.At), d.InstanceID, d.Rule, d.RuleName, d.ReportedID))
		fmt.Fprintf(w, "\n%s\n", safetext.Escape(d.Explanation))
	}
}
