package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/seedkeeper/seedkeeper/image"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// sealSchemaVersion is the version of "image seal --json".
const sealSchemaVersion = 1

// sealJSON is "image seal --json" (and --dry-run --json): the plan, and
// after a real run what failed and the check of the sealed image.
type sealJSON struct {
	SchemaVersion int            `json:"schema_version"`
	Root          string         `json:"root"`
	DryRun        bool           `json:"dry_run"`
	Digest        string         `json:"digest"`
	Actions       []image.Action `json:"actions"`
	// PlanChanged: --expect named another plan; nothing was changed.
	PlanChanged bool          `json:"plan_changed,omitempty"`
	Error       string        `json:"error,omitempty"`
	Check       *image.Report `json:"check,omitempty"`
}

func writeSealJSON(w io.Writer, r sysroot.Root, opts image.SealOptions, s *image.Sealing, err error) {
	out := sealJSON{
		SchemaVersion: sealSchemaVersion,
		Root:          r.Path("/"),
		DryRun:        opts.DryRun,
		Digest:        s.Plan.Digest(),
		Actions:       s.Plan.Actions,
		PlanChanged:   errors.Is(err, image.ErrPlanChanged),
		Check:         s.Report,
	}
	if err = errors.Join(err, s.Err); err != nil {
		out.Error = err.Error()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(out)
}

// validDigest reports whether v is a plan's digest: "sha256:" and 64 hex
// digits.
func validDigest(v string) bool {
	hex, ok := strings.CutPrefix(v, "sha256:")
	return ok && len(hex) == 64 && strings.Trim(strings.ToLower(hex), "0123456789abcdef") == ""
}

// readExpected reads --expect: a digest ("sha256:" and 64 hex digits), or
// a file holding a dry run's --json output (what names the command that
// wrote it), whose digest and actions are then the plan that was read.
func readExpected[A any](v, what string) (digest string, read []A, err error) {
	if strings.HasPrefix(v, "sha256:") {
		if !validDigest(v) {
			return "", nil, errors.New("a digest is sha256: and 64 hex digits")
		}
		return v, nil, nil
	}
	b, err := fsutil.ReadFile(context.Background(), v, fsutil.SmallFile)
	if err != nil {
		return "", nil, err
	}
	var plan struct {
		Digest  string `json:"digest"`
		Actions []A    `json:"actions"`
	}
	if err := json.Unmarshal(b, &plan); err != nil || !validDigest(plan.Digest) {
		return "", nil, fmt.Errorf("%s: want a digest, or the output of %s --dry-run --json", v, what)
	}
	return plan.Digest, plan.Actions, nil
}

// netSchemaVersion is the version of "net plan|apply --json".
const netSchemaVersion = 1

// netOpJSON is one operation of a plan, and after apply its error.
type netOpJSON struct {
	Op    string `json:"op"`
	Error string `json:"error,omitempty"`
	Done  *bool  `json:"done,omitempty"`
}

// writeNetJSON prints "net plan|apply --json": the plan and its digest,
// and after apply what each operation did.
func writeNetJSON(w io.Writer, s *apply.Synced, err error) {
	out := struct {
		SchemaVersion int         `json:"schema_version"`
		Digest        string      `json:"digest"`
		Ops           []netOpJSON `json:"ops"`
		Notes         []string    `json:"notes"`
		Applied       bool        `json:"applied"`
		PlanChanged   bool        `json:"plan_changed,omitempty"`
		Error         string      `json:"error,omitempty"`
	}{SchemaVersion: netSchemaVersion, Digest: s.Plan.Digest(), Ops: []netOpJSON{}, Notes: s.Plan.Notes,
		Applied: s.Result != nil, PlanChanged: errors.Is(err, apply.ErrPlanChanged)}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	if s.Result != nil {
		for _, o := range s.Result.Ops {
			done := o.Err == nil
			j := netOpJSON{Op: o.Op.String(), Done: &done}
			if o.Err != nil {
				j.Error = o.Err.Error()
			}
			out.Ops = append(out.Ops, j)
		}
	} else {
		for _, o := range s.Plan.Ops {
			out.Ops = append(out.Ops, netOpJSON{Op: o.String()})
		}
	}
	if err != nil {
		out.Error = err.Error()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(out)
}
