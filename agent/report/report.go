// Package report builds what "seedkeeper status" tells about a machine:
// the record the last boot saved (agent.Status, from
// /var/lib/seedkeeper/status.json), whether that record is the running
// boot's (the kernel's boot ID), a metadata source that appeared after boot
// decided, what seedkeeper watch did after boot (agent.WatchRecord, from
// /run/seedkeeper/watch.json, when it is this boot's), the pinned instance
// ID when the record holds no decision, and the cloud-init settings that do not leave the seed to seedkeeper (the
// drop-in item of image.Check). It also judges it (Verdict, Problems: what
// status exits with) and writes it as Prometheus metrics. cmd/seedkeeper
// only prints it.
//
// It is a package of its own rather than part of agent because image,
// whose check it runs, imports agent.
package report

import (
	"errors"
	"io/fs"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/image"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Report is the status of one machine. Its JSON form is the last boot's
// Status with the fields below added; it is what "seedkeeper status
// --json" prints.
type Report struct {
	agent.Status
	// ThisBoot is whether the record is the running boot's; nil when
	// that cannot be told (either boot ID missing).
	ThisBoot *bool `json:"this_boot,omitempty"`
	// CurrentBootID is the running boot's ID, "" when there is none to
	// read.
	CurrentBootID string `json:"current_boot_id,omitempty"`
	// LateSource says that a metadata source appeared after boot decided
	// ("" when none did).
	LateSource string `json:"late_source,omitempty"`
	// Warnings are cloud-init settings that override seedkeeper's
	// drop-in, or why they could not be checked.
	Warnings []string `json:"warnings,omitempty"`
	// Watch is what seedkeeper watch did in this boot (agent.WatchRecord):
	// nil when it recorded nothing, or its record is of another boot.
	Watch *agent.WatchRecord `json:"watch,omitempty"`
	// WatchWarnings say what of the watch's record could not be used:
	// the whole of it, or the entries left out.
	WatchWarnings []string `json:"watch_warnings,omitempty"`
	// Pin is the pinned identity when the record holds no identity
	// decision (a boot that ended before deciding); nil otherwise. It is
	// not part of the JSON form, which has the record's own decision.
	Pin *identity.State `json:"-"`
}

// Current reports whether the record is the running boot's; a record or a
// root without boot IDs counts as current, as before boot IDs were kept.
func (r *Report) Current() bool { return r.ThisBoot == nil || *r.ThisBoot }

// Read builds the report for e.Root. The error wraps fs.ErrNotExist when
// seedkeeper boot has never saved a status there; any other error means
// the record could not be read.
func Read(e agent.Env) (*Report, error) {
	st, err := agent.ReadStatus(e.Root)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Status:        *st,
		Warnings:      CloudConfigWarnings(e.Root),
		LateSource:    agent.LateSource(e),
		CurrentBootID: agent.CurrentBootID(e.Root),
	}
	if same, known := st.ThisBoot(r.CurrentBootID); known {
		r.ThisBoot = &same
	}
	r.Watch, r.WatchWarnings = readWatch(e.Root, r.CurrentBootID, st.BootID)
	if st.Identity == nil {
		if s, err := identity.Load(e.Root); err == nil && s != nil && s.InstanceID != "" {
			r.Pin = s
		}
	}
	return r, nil
}

// readWatch reads the watch's record when it is this boot's. A record of
// another boot is left out without a word; one that cannot be read is one
// warning, and the rest of the report stands.
func readWatch(root sysroot.Root, current, statusBoot string) (*agent.WatchRecord, []string) {
	rec, warn, err := agent.ReadWatchRecord(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, []string{"what seedkeeper watch did after boot is not shown: " + err.Error()}
	case !rec.ThisBoot(current, statusBoot):
		return nil, nil
	}
	return rec, warn
}

// CloudConfigWarnings is what "image check" finds in cloud-init's settings
// under root: the drop-in item's Found text when it is a finding, what a
// ds=nocloud line or cloud-init's own hotplug does beside seedkeeper (the
// nocloud-line and cloud-init-hotplug items, handled or not), or why the
// settings could not be checked.
func CloudConfigWarnings(root sysroot.Root) []string {
	warn, notes := CloudConfigNotes(root)
	return append(warn, notes...)
}

// CloudConfigNotes is CloudConfigWarnings split by weight: warn are the
// findings and what could not be checked, notes what is handled or
// harmless (a bare ds=nocloud line, a seedfrom the drop-in replaces),
// which boot logs as information, not as a warning.
func CloudConfigNotes(root sysroot.Root) (warn, notes []string) {
	rep, err := image.Check(string(root), "drop-in", "nocloud-line", "cloud-init-hotplug")
	if err != nil {
		return []string{err.Error()}, nil
	}
	for _, it := range rep.Items {
		switch {
		case (it.ID == "nocloud-line" || it.ID == "cloud-init-hotplug") && it.Verdict != image.OK:
			// A ds=nocloud line, cloud-init's own hotplug: what it is
			// and what comes of it beside seedkeeper, handled or not.
			w := it.Found + ": " + it.Clone
			if it.Fix != "" {
				w += " (fix: " + it.Fix + ")"
			}
			if it.Verdict == image.Note {
				notes = append(notes, w)
			} else {
				warn = append(warn, w)
			}
		case it.Verdict == image.Finding:
			warn = append(warn, it.Found)
		case it.Verdict == image.Error:
			warn = append(warn, "cloud-init's settings could not be checked: "+it.Found)
		}
	}
	return warn, notes
}
