package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/seedkeeper/seedkeeper/hotplug"
)

// Outcomes are the outcomes a boot records (agent.Status.Outcome).
var Outcomes = []string{"ok", "no-source", "error", "partial"}

// hotplugResults are the results of a watch's event, in the order given.
var hotplugResults = []string{hotplug.Applied, hotplug.Partial, hotplug.Failed, hotplug.GaveUp, hotplug.Removed}

// WritePrometheus writes r in the text format of Prometheus's exposition,
// as node_exporter's textfile collector reads it: for each metric its HELP
// and TYPE lines, then its samples; every label value escaped (a NIC's
// name, a MAC, an instance ID come from outside).
func (r *Report) WritePrometheus(w io.Writer) error {
	p := &promWriter{}
	st := &r.Status
	v := r.Verdict()
	p.family("seedkeeper_status_verdict", "What seedkeeper status says of the running boot (its exit status): 1 for the verdict in force.")
	for _, name := range verdictNames {
		p.sample(bool01(name == v.String()), "verdict", name)
	}
	p.family("seedkeeper_status_problems", "Problems a person or a later boot can put right (the failed and warning lines of seedkeeper status).")
	p.sample(float64(len(r.Problems())))
	p.family("seedkeeper_last_boot_this_boot", "1 when the last boot's record is of the running boot (0: seedkeeper boot has not run in it).")
	p.sample(bool01(r.Current()))
	if st.Outcome == "" {
		// No record of any boot: the verdict says so, and nothing else
		// is known.
		_, err := io.WriteString(w, p.b.String())
		return err
	}
	p.family("seedkeeper_last_boot_outcome", "The outcome of the last seedkeeper boot: 1 for the one it had.")
	outcomes := Outcomes
	if !slices.Contains(outcomes, st.Outcome) {
		outcomes = append(slices.Clone(outcomes), st.Outcome)
	}
	for _, o := range outcomes {
		p.sample(bool01(o == st.Outcome), "outcome", o)
	}
	p.family("seedkeeper_last_boot_timestamp_seconds", "When the last seedkeeper boot ran, in seconds since the epoch.")
	p.sample(float64(st.Time.UnixNano()) / 1e9)
	if st.MetadataSeconds > 0 {
		p.family("seedkeeper_metadata_read_seconds", "How long the last boot took to find and read the metadata (waits for a silent host or late devices included).")
		p.sample(st.MetadataSeconds, "source", st.Source, "transport", st.Transport)
	}
	if d := st.Identity; d != nil {
		p.family("seedkeeper_instance_info", "The instance ID the last boot handed cloud-init, and the rule that decided it.")
		p.sample(1, "instance_id", d.InstanceID, "rule", d.RuleName)
		p.family("seedkeeper_instance_id_changed", "1 when the last boot made, replaced or dropped the pinned instance ID.")
		p.sample(bool01(d.Changed))
	}
	if c := st.Changes; c != nil {
		p.family("seedkeeper_changes", "Settings changed in the metadata since the boot before, by what became of them at the last boot (waiting: held until a new instance).")
		p.sample(float64(len(c.Changed)), "state", "changed")
		p.sample(float64(len(c.Applied)), "state", "applied")
		p.sample(float64(len(c.Waiting)), "state", "waiting")
		p.sample(float64(len(c.Failed)), "state", "failed")
	}
	if n := st.Network; n != nil {
		p.family("seedkeeper_boot_network_operations", "Network operations of the last boot, by result.")
		p.sample(float64(len(n.Ops)-len(n.Failed)), "result", "ok")
		p.sample(float64(len(n.Failed)), "result", "failed")
	}
	if w := r.Watch; w != nil {
		total := map[string]int{}
		p.family("seedkeeper_hotplug_nic_events", "Events seedkeeper watch recorded per hot-added NIC in this boot (its last 8), by result.")
		for _, nic := range w.Hotplug {
			count := map[string]int{}
			for _, ev := range nic.Events {
				count[ev.Result]++
				total[ev.Result]++
			}
			for _, res := range hotplugResults {
				if count[res] > 0 {
					p.sample(float64(count[res]), "nic", nic.Last().Name, "mac", nic.MAC, "result", res)
				}
			}
		}
		p.family("seedkeeper_hotplug_nic_last_timestamp_seconds", "When seedkeeper watch last did something to the NIC, in seconds since the epoch.")
		for _, nic := range w.Hotplug {
			ev := nic.Last()
			p.sample(float64(ev.At.UnixNano())/1e9, "nic", ev.Name, "mac", nic.MAC, "result", ev.Result)
		}
		p.family("seedkeeper_hotplug_events", "Events seedkeeper watch recorded in this boot, of every NIC, by result.")
		for _, res := range hotplugResults {
			p.sample(float64(total[res]), "result", res)
		}
		if len(w.Guestinfo) > 0 {
			p.family("seedkeeper_guestinfo_set_failed", "1 when seedkeeper watch's last set of the guestinfo key failed.")
			for _, g := range w.Guestinfo {
				p.sample(bool01(g.Failed != nil), "key", g.Key)
			}
		}
	}
	_, err := io.WriteString(w, p.b.String())
	return err
}

type promWriter struct {
	b    strings.Builder
	name string
}

// family starts a gauge.
func (p *promWriter) family(name, help string) {
	p.name = name
	fmt.Fprintf(&p.b, "# HELP %s %s\n# TYPE %s gauge\n", name, escapeHelp(help), name)
}

// sample writes one sample of the current family with the label pairs
// kv (name, value, ...).
func (p *promWriter) sample(v float64, kv ...string) {
	p.b.WriteString(p.name)
	if len(kv) > 0 {
		p.b.WriteByte('{')
		for i := 0; i+1 < len(kv); i += 2 {
			if i > 0 {
				p.b.WriteByte(',')
			}
			fmt.Fprintf(&p.b, "%s=\"%s\"", kv[i], EscapeLabel(kv[i+1]))
		}
		p.b.WriteByte('}')
	}
	p.b.WriteByte(' ')
	p.b.WriteString(formatValue(v))
	p.b.WriteByte('\n')
}

// EscapeLabel is s as a label value of the text format: valid UTF-8
// (each invalid byte U+FFFD), with backslash, double quote and line feed
// escaped.
func EscapeLabel(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
