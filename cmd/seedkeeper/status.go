package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const statusHelp = `Usage: seedkeeper status [--root DIR] [--json]

Says what the last "seedkeeper boot" decided and why: the metadata source
and transport, the instance ID reported and the one handed to cloud-init
with the rule that decided it, the seed files, the network and the hotplug
allowlist in force. It also warns when another cloud-init setting overrides
seedkeeper's drop-in (a later datasource_list or network key).

Exit status: 0, or 1 when boot has not run yet, 2 on error.
`

// dropIn is the cloud-init configuration seedkeeper ships.
const dropIn = "/etc/cloud/cloud.cfg.d/95-seedkeeper.cfg"

func runStatus(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("status", stderr)
	root := flags.String("root", "", "")
	asJSON := flags.Bool("json", false, "")
	if code, ok := parseFlags(flags, args, statusHelp, stdout, stderr); !ok {
		return code
	}
	r := sysroot.Root(*root)
	var st bootStatus
	b, err := os.ReadFile(r.Path(statusPath))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(stderr, "seedkeeper boot has not run on this machine yet")
		return exitNotFound
	case err != nil:
		fmt.Fprintf(stderr, "seedkeeper status: %v\n", err)
		return exitError
	}
	if err := json.Unmarshal(b, &st); err != nil {
		fmt.Fprintf(stderr, "seedkeeper status: %s: %v\n", r.Path(statusPath), err)
		return exitError
	}
	warnings := cloudCfgWarnings(r)
	if *asJSON {
		out := struct {
			bootStatus
			Warnings []string `json:"warnings,omitempty"`
		}{st, warnings}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return exitError
		}
		return exitOK
	}
	printStatus(stdout, &st, r, warnings)
	return exitOK
}

func printStatus(w io.Writer, st *bootStatus, r sysroot.Root, warnings []string) {
	fmt.Fprintf(w, "Last boot:   %s (seedkeeper %s): %s\n", st.Time.Format("2006-01-02 15:04:05 MST"), st.Seedkeeper, st.Outcome)
	if st.Error != "" {
		fmt.Fprintf(w, "Error:       %s\n", st.Error)
	}
	if st.ConfigError != "" {
		fmt.Fprintf(w, "Config:      NOT USED: %s\n", st.ConfigError)
	} else {
		fmt.Fprintf(w, "Config:      %s\n", st.Config)
	}
	for _, c := range st.Candidates {
		mark := "not present"
		if c.Found {
			mark = "detected"
		}
		fmt.Fprintf(w, "%-12s %s: %s\n", c.Source+":", mark, c.Reason)
	}
	if st.Source != "" {
		fmt.Fprintf(w, "Read from:   %s via %s\n", st.Source, st.Transport)
	}
	if d := st.Identity; d != nil {
		fmt.Fprintf(w, "Instance ID: %s (reported %s; rule %d, %s)\n", d.InstanceID, d.ReportedID, d.Rule, d.RuleName)
		fmt.Fprintf(w, "Why:         %s\n", d.Explanation)
	} else if s, err := identity.Load(r); err == nil && s != nil && s.InstanceID != "" {
		fmt.Fprintf(w, "Pinned ID:   %s (since %s)\n", s.InstanceID, s.PinnedAt.Format("2006-01-02 15:04:05 MST"))
	}
	if s := st.Seed; s != nil {
		var parts []string
		if len(s.Written) > 0 {
			parts = append(parts, "wrote "+strings.Join(s.Written, ", "))
		}
		if len(s.Removed) > 0 {
			parts = append(parts, "removed "+strings.Join(s.Removed, ", "))
		}
		state := "unchanged"
		if len(parts) > 0 {
			state = strings.Join(parts, "; ")
		}
		fmt.Fprintf(w, "Seed:        %s: %s\n", s.Dir, state)
		for _, x := range s.Warnings {
			fmt.Fprintf(w, "             warning: %s\n", x)
		}
	}
	if n := st.Network; n != nil {
		switch n.Action {
		case "skipped":
			fmt.Fprintf(w, "Network:     left alone: %s\n", n.Reason)
		default:
			owned := strings.Join(n.Owned, ", ")
			if owned == "" {
				owned = "none present"
			}
			fmt.Fprintf(w, "Network:     %s: %d operations, %d failed; owned NICs: %s\n", n.Action, len(n.Ops), len(n.Failed), owned)
			for _, f := range n.Failed {
				fmt.Fprintf(w, "             failed: %s\n", f)
			}
		}
		if n.Stack != "" {
			fmt.Fprintf(w, "Stack:       %s\n", n.Stack)
		}
		if n.ResolvConf != "" {
			fmt.Fprintf(w, "Resolvers:   /etc/resolv.conf %s\n", n.ResolvConf)
		}
		fmt.Fprintf(w, "Hotplug:     allowlist %s\n", n.Allowlist)
	}
	for _, x := range warnings {
		fmt.Fprintf(w, "Warning:     %s\n", x)
	}
}

// cloudCfgWarnings reports cloud-init settings that silently override
// seedkeeper's drop-in: cloud-init reads cloud.cfg and then cloud.cfg.d/*.cfg
// in name order, later files winning, and system config ranks above the
// datasource for network config.
func cloudCfgWarnings(r sysroot.Root) []string {
	var warn []string
	if _, err := os.Stat(r.Path(dropIn)); err != nil {
		warn = append(warn, fmt.Sprintf("%s is missing: cloud-init may not use seedkeeper's seed", dropIn))
	}
	files := []string{"/etc/cloud/cloud.cfg"}
	matches, _ := filepath.Glob(r.Path("/etc/cloud/cloud.cfg.d/*.cfg"))
	slices.Sort(matches)
	for _, m := range matches {
		files = append(files, r.Rel(m))
	}
	last := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(r.Path(f))
		if err != nil {
			continue
		}
		var doc map[string]any
		if yaml.Unmarshal(b, &doc) != nil {
			continue
		}
		for _, k := range []string{"datasource_list", "network"} {
			if _, ok := doc[k]; ok {
				last[k] = f
			}
		}
	}
	for _, k := range []string{"datasource_list", "network"} {
		if f, ok := last[k]; ok && f != dropIn {
			warn = append(warn, fmt.Sprintf("%s sets %s and overrides %s", f, k, dropIn))
		}
	}
	return warn
}
