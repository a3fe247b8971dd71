package report

import (
	"strconv"

	"github.com/seedkeeper/seedkeeper/hotplug"
)

// Verdict is what a report says of the running boot, in the terms of
// cloud-init's status: it is what "seedkeeper status" exits with.
type Verdict int

// The verdicts, worst last but for NotRun, which says nothing of how a
// boot went.
const (
	// OK: boot ran in this boot and finished without a problem (no
	// metadata source on the machine is such a finish).
	OK Verdict = iota
	// Failed: the last boot ended in an error.
	Failed
	// Degraded: boot finished, with problems a person or a later boot
	// can put right (Problems lists them).
	Degraded
	// NotRun: no record of seedkeeper boot in this boot (it has not run
	// yet, or failed before saving).
	NotRun
)

var verdictNames = []string{"ok", "failed", "degraded", "not-run"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Verdict is r's verdict: NotRun for a record of an earlier boot, Failed
// for a boot that ended in an error, Degraded when Problems is not empty.
func (r *Report) Verdict() Verdict {
	switch {
	case !r.Current():
		return NotRun
	case r.Outcome == "error":
		return Failed
	case len(r.Problems()) > 0:
		return Degraded
	}
	return OK
}

// Problems lists what status reports as failed, and the warnings about the
// machine, one line each: the configuration file not used, network
// operations and changed settings that failed, the seed's and cloud-init's
// warnings, and what seedkeeper watch failed at in this boot (a NIC whose
// last apply failed, was partial or was given up, a guestinfo key not
// set, a customization not applied as a whole, a record that could not
// be read whole). What the metadata itself
// leaves out (the dropped fields, the changes' warnings) is not a problem
// of the machine: boot notes it.
func (r *Report) Problems() []string {
	var p []string
	st := &r.Status
	if st.ConfigError != "" {
		p = append(p, "configuration not used: "+st.ConfigError)
	}
	if st.Seed != nil {
		p = append(p, st.Seed.Warnings...)
	}
	if c := st.Changes; c != nil {
		for _, f := range c.Failed {
			p = append(p, "changed setting not applied: "+f)
		}
	}
	if n := st.Network; n != nil {
		for _, f := range n.Failed {
			p = append(p, "network: "+f)
		}
	}
	p = append(p, r.Warnings...)
	if w := r.Watch; w != nil {
		for _, n := range w.Hotplug {
			switch ev := n.Last(); ev.Result {
			case hotplug.Applied, hotplug.Removed:
			default:
				p = append(p, "hotplug: "+ev.Name+" ("+n.MAC+"): "+ev.Result+": "+ev.Error)
			}
		}
		for _, g := range w.Guestinfo {
			if g.Failed != nil {
				p = append(p, g.Key+": setting failed: "+g.Failed.Error)
			}
		}
		for _, c := range w.Customization {
			switch {
			case c.Why != "":
				p = append(p, "customization after boot not applied as a whole: "+c.Why)
			case c.Failed: // recorded before the reason was kept
				p = append(p, "customization after boot not applied as a whole (its lines say why)")
			}
		}
	}
	return append(p, r.WatchWarnings...)
}
