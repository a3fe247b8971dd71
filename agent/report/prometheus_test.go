package report_test

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/agent/report"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/intent"
)

type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*`)
)

// parseProm parses the text format as node_exporter's textfile collector
// takes it, strictly: each family's HELP, then its TYPE, then its samples,
// a family once; label values with only the escapes \\, \" and \n; every
// value a float. It fails the test at the first line that breaks a rule.
func parseProm(t *testing.T, text string) map[string][]promSample {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("the text does not end with a line feed")
	}
	families := map[string][]promSample{}
	var cur, helpFor string
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fail := func(format string, a ...any) { t.Fatalf("line %d %q: %s", n, line, fmt.Sprintf(format, a...)) }
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if !metricName.MatchString(name) {
				fail("not a metric name")
			}
			if _, seen := families[name]; seen {
				fail("a second family of the name")
			}
			helpFor = name
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(strings.TrimPrefix(line, "# TYPE "))
			if len(f) != 2 || f[0] != helpFor || f[1] != "gauge" {
				fail("want the TYPE of %s, gauge", helpFor)
			}
			cur = f[0]
			families[cur] = []promSample{}
		case strings.HasPrefix(line, "#") || line == "":
			fail("a comment or an empty line")
		default:
			s := promSample{labels: map[string]string{}}
			i := strings.IndexAny(line, "{ ")
			if i < 0 {
				fail("no value")
			}
			s.name = line[:i]
			if s.name != cur {
				fail("a sample of %s outside its family %s", s.name, cur)
			}
			rest := line[i:]
			if rest[0] == '{' {
				rest = rest[1:]
				for rest[0] != '}' {
					ln := labelName.FindString(rest)
					if ln == "" || !strings.HasPrefix(rest[len(ln):], `="`) {
						fail("a label without a name or =\"")
					}
					rest = rest[len(ln)+2:]
					var v strings.Builder
					for {
						if rest == "" {
							fail("a label value not closed")
						}
						c := rest[0]
						rest = rest[1:]
						if c == '"' {
							break
						}
						if c == '\n' {
							fail("a line feed in a label value")
						}
						if c == '\\' {
							switch rest[0] {
							case '\\', '"':
								v.WriteByte(rest[0])
							case 'n':
								v.WriteByte('\n')
							default:
								fail("an escape that is not one")
							}
							rest = rest[1:]
							continue
						}
						v.WriteByte(c)
					}
					if _, dup := s.labels[ln]; dup {
						fail("label %s twice", ln)
					}
					s.labels[ln] = v.String()
					if rest[0] == ',' {
						rest = rest[1:]
					}
				}
				rest = rest[1:]
			}
			val, ok := strings.CutPrefix(rest, " ")
			if !ok {
				fail("no space before the value")
			}
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				fail("the value: %v", err)
			}
			s.value = f
			families[cur] = append(families[cur], s)
		}
	}
	return families
}

func find(fam map[string][]promSample, name string, labels ...string) (float64, bool) {
	for _, s := range fam[name] {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				match = false
			}
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

// Every metric a fleet asks for, in a text node_exporter takes, with the
// outside strings (a NIC name from a udev rule, an instance ID from the
// metadata) as label values that decode to what they were.
func TestWritePrometheus(t *testing.T) {
	hostile := "eth\"1\\x\nnew\xff"
	at := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	yes := true
	r := &report.Report{ThisBoot: &yes, Status: agent.Status{
		Version: 1, Time: at, Outcome: "partial", Source: "smartos", Transport: "serial:/dev/ttyS1", MetadataSeconds: 0.25,
		Identity: &identity.Decision{InstanceID: `iid-"q"`, RuleName: "platform", Changed: true},
		Changes:  &intent.Result{Changed: []intent.Change{{Setting: "a"}, {Setting: "b"}}, Waiting: []string{"b: held"}},
		Network:  &agent.NetResult{Ops: []string{"1", "2", "3"}, Failed: []string{"add 192.0.2.5/24 to eth1: exists"}},
	}, Watch: &agent.WatchRecord{Version: 1,
		Hotplug: []agent.WatchNIC{{MAC: "52:54:00:12:34:56", Events: []agent.WatchEvent{
			{Name: hostile, At: at.Add(time.Minute), Result: "failed", Error: "busy"},
			{Name: hostile, At: at.Add(2 * time.Minute), Result: "applied"},
			{Name: hostile, At: at.Add(3 * time.Minute), Result: "failed", Error: "busy"}}}},
		Guestinfo: []agent.WatchGuestinfo{{Key: "guestinfo.local-ipv4", Failed: &agent.WatchFailure{Error: "denied"}}},
	}}
	var b bytes.Buffer
	if err := r.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	fam := parseProm(t, b.String())
	decoded := strings.ToValidUTF8(hostile, "\uFFFD")
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"seedkeeper_status_verdict", []string{"verdict", "degraded"}, 1},
		{"seedkeeper_status_verdict", []string{"verdict", "ok"}, 0},
		{"seedkeeper_status_problems", nil, 3},
		{"seedkeeper_last_boot_this_boot", nil, 1},
		{"seedkeeper_last_boot_outcome", []string{"outcome", "partial"}, 1},
		{"seedkeeper_last_boot_outcome", []string{"outcome", "ok"}, 0},
		{"seedkeeper_last_boot_timestamp_seconds", nil, float64(at.Unix())},
		{"seedkeeper_metadata_read_seconds", []string{"source", "smartos", "transport", "serial:/dev/ttyS1"}, 0.25},
		{"seedkeeper_instance_info", []string{"instance_id", `iid-"q"`, "rule", "platform"}, 1},
		{"seedkeeper_instance_id_changed", nil, 1},
		{"seedkeeper_changes", []string{"state", "waiting"}, 1},
		{"seedkeeper_changes", []string{"state", "changed"}, 2},
		{"seedkeeper_boot_network_operations", []string{"result", "failed"}, 1},
		{"seedkeeper_boot_network_operations", []string{"result", "ok"}, 2},
		{"seedkeeper_hotplug_nic_events", []string{"nic", decoded, "mac", "52:54:00:12:34:56", "result", "failed"}, 2},
		{"seedkeeper_hotplug_nic_events", []string{"nic", decoded, "result", "applied"}, 1},
		{"seedkeeper_hotplug_nic_last_timestamp_seconds", []string{"nic", decoded, "result", "failed"}, float64(at.Add(3 * time.Minute).Unix())},
		{"seedkeeper_hotplug_events", []string{"result", "failed"}, 2},
		{"seedkeeper_hotplug_events", []string{"result", "gave-up"}, 0},
		{"seedkeeper_guestinfo_set_failed", []string{"key", "guestinfo.local-ipv4"}, 1},
	} {
		got, ok := find(fam, c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%q = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if t.Failed() {
		t.Logf("the text:\n%s", b.String())
	}
}

// Without any record, only the verdict and what it rests on: no boot
// metrics of a boot that never was.
func TestWritePrometheusNoRecord(t *testing.T) {
	no := false
	var b bytes.Buffer
	if err := (&report.Report{ThisBoot: &no}).WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	fam := parseProm(t, b.String())
	if v, ok := find(fam, "seedkeeper_status_verdict", "verdict", "not-run"); !ok || v != 1 {
		t.Errorf("verdict not-run: %v %v\n%s", v, ok, b.String())
	}
	if _, ok := fam["seedkeeper_last_boot_outcome"]; ok {
		t.Errorf("an outcome of no boot:\n%s", b.String())
	}
}

func TestEscapeLabel(t *testing.T) {
	for in, want := range map[string]string{
		`a"b`: `a\"b`, `a\b`: `a\\b`, "a\nb": `a\nb`, "a\xffb": "a\uFFFDb", "eth0": "eth0",
	} {
		if got := report.EscapeLabel(in); got != want {
			t.Errorf("EscapeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever the outside strings, the text parses and each label value
// decodes to the string made valid UTF-8.
func FuzzWritePrometheus(f *testing.F) {
	f.Add("eth0", "iid-1", "52:54:00:12:34:56")
	f.Add("eth\"1\\\n", "\xff\xfe", "")
	f.Fuzz(func(t *testing.T, nic, iid, mac string) {
		yes := true
		r := &report.Report{ThisBoot: &yes, Status: agent.Status{Version: 1, Outcome: "ok", Identity: &identity.Decision{InstanceID: iid}},
			Watch: &agent.WatchRecord{Version: 1, Hotplug: []agent.WatchNIC{{MAC: mac, Events: []agent.WatchEvent{{Name: nic, Result: "applied"}}}}}}
		var b bytes.Buffer
		if err := r.WritePrometheus(&b); err != nil {
			t.Fatal(err)
		}
		fam := parseProm(t, b.String())
		if _, ok := find(fam, "seedkeeper_instance_info", "instance_id", strings.ToValidUTF8(iid, "\uFFFD")); !ok {
			t.Errorf("instance ID %q not decoded back", iid)
		}
		if _, ok := find(fam, "seedkeeper_hotplug_nic_events", "nic", strings.ToValidUTF8(nic, "\uFFFD"), "mac", strings.ToValidUTF8(mac, "\uFFFD")); !ok {
			t.Errorf("NIC %q %q not decoded back", nic, mac)
		}
	})
}
