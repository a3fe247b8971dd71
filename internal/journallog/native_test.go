package journallog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

type sent struct {
	msg  string
	prio journal.Priority
	vars map[string]string
}

func fakeSend(t *testing.T, fail bool) *[]sent {
	t.Helper()
	var got []sent
	old := send
	send = func(msg string, prio journal.Priority, vars map[string]string) error {
		if fail {
			return errors.New("no journal")
		}
		got = append(got, sent{msg, prio, vars})
		return nil
	}
	t.Cleanup(func() { send = old })
	return &got
}

// Each record reaches the journal's socket with its priority, its unit,
// its attributes as fields (those of WithAttrs and groups too) and the
// text line as MESSAGE; the console gets the text line; the stream gets
// nothing.
func TestJournalHandlerFields(t *testing.T) {
	got := fakeSend(t, false)
	var stream, console bytes.Buffer
	log := slog.New(NewJournalHandler("seedkeeper-boot.service", &stream, &console)).With("source", "nocloud")
	log.Warn("apply failed", "iface", "eth1", "instance-id", "i-1", slog.Group("nic", "mac", "52:54:00:00:00:01"))
	log.Info("read")
	log.Debug("not kept")

	if len(*got) != 2 {
		t.Fatalf("sent %d records, want 2: %+v", len(*got), *got)
	}
	w := (*got)[0]
	for k, v := range map[string]string{
		"SYSLOG_IDENTIFIER": "seedkeeper", "OBJECT_SYSTEMD_UNIT": "seedkeeper-boot.service",
		"SEEDKEEPER_SOURCE": "nocloud", "SEEDKEEPER_IFACE": "eth1", "SEEDKEEPER_INSTANCE_ID": "i-1",
		"SEEDKEEPER_NIC_MAC": "52:54:00:00:00:01", "CODE_FUNC": "github.com/seedkeeper/seedkeeper/internal/journallog.TestJournalHandlerFields",
	} {
		if w.vars[k] != v {
			t.Errorf("field %s = %q, want %q (all: %v)", k, w.vars[k], v, w.vars)
		}
	}
	if !strings.HasSuffix(w.vars["CODE_FILE"], "native_test.go") || w.vars["CODE_LINE"] == "" {
		t.Errorf("CODE_FILE %q CODE_LINE %q: want this file and a line", w.vars["CODE_FILE"], w.vars["CODE_LINE"])
	}
	wantMsg := `level=WARN msg="apply failed" source=nocloud iface=eth1 instance-id=i-1 nic.mac=52:54:00:00:00:01`
	if w.prio != journal.PriWarning || w.msg != wantMsg {
		t.Errorf("sent %d %q; want %d %q", w.prio, w.msg, journal.PriWarning, wantMsg)
	}
	if i := (*got)[1]; i.prio != journal.PriInfo || i.vars["SEEDKEEPER_IFACE"] != "" {
		t.Errorf("second record %+v: want info, without the first's fields", i)
	}
	if stream.Len() != 0 || console.String() != wantMsg+"\nlevel=INFO msg=read source=nocloud\n" {
		t.Errorf("stream %q, console %q", stream.String(), console.String())
	}
}

// A record the socket does not take goes to the stream, with its
// priority, as NewStreamHandler writes it: nothing is lost.
func TestJournalHandlerFallsBackToTheStream(t *testing.T) {
	fakeSend(t, true)
	var stream, console bytes.Buffer
	slog.New(NewJournalHandler("u.service", &stream, &console)).Error("boom", "iface", "eth0")
	if stream.String() != "<3>level=ERROR msg=boom iface=eth0\n" || console.Len() != 0 {
		t.Errorf("stream %q console %q; want the stream line with <3> and nothing on the console (journald forwards the stream)", stream.String(), console.String())
	}
}

func TestFieldName(t *testing.T) {
	for key, want := range map[string]string{
		"iface": "SEEDKEEPER_IFACE", "instance-id": "SEEDKEEPER_INSTANCE_ID", "nic.mac": "SEEDKEEPER_NIC_MAC",
		"": "", strings.Repeat("a", 54): "", strings.Repeat("a", 53): "SEEDKEEPER_" + strings.Repeat("A", 53),
		"ünï": "SEEDKEEPER__N_",
	} {
		if got := FieldName(key); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestUnitOfCgroup(t *testing.T) {
	for text, want := range map[string]string{
		"0::/system.slice/seedkeeper-boot.service\n":      "seedkeeper-boot.service",
		"0::/system.slice/seedkeeper-watch.service/sub\n": "seedkeeper-watch.service",
		"1:name=systemd:/system.slice/a.service\n0::/\n":  "a.service",
		"0::/user.slice/user-0.slice/session-1.scope\n":   "",
		"0::/\n": "",
		"12:pids:/x.service\n1:name=systemd:/system.slice/b.service\n0::/\n": "b.service",
	} {
		if got := unitOfCgroup(text); got != want {
			t.Errorf("unitOfCgroup(%q) = %q, want %q", text, got, want)
		}
	}
}

// envJournalChild makes the test binary a short-lived process that logs
// as a unit's process would and exits at once.
const envJournalChild = "SEEDKEEPER_TEST_JOURNAL_UNIT"

// With a journald reading its socket: the records of a process that has
// already exited are found by "journalctl -u UNIT" (OBJECT_SYSTEMD_UNIT
// from uid 0), by -p warning at their priority, and by their fields; a
// record sent without the unit is not found by -u.
func TestIntegrationJournalFields(t *testing.T) {
	testenv.Integration(t)
	if unit := os.Getenv(envJournalChild); unit != "" {
		log := slog.New(NewJournalHandler(unit, os.Stderr, nil))
		log.Warn("apply failed", "iface", "eth1", "instance-id", "i-test")
		log.Info("read", "source", "nocloud")
		journal.Send("without its unit", journal.PriWarning, map[string]string{"SEEDKEEPER_IFACE": "eth1", "SYSLOG_IDENTIFIER": Identifier})
		return
	}
	switch {
	case os.Geteuid() != 0:
		t.Skip("integration test: needs root (journalctl -u trusts OBJECT_SYSTEMD_UNIT from uid 0 only); run as root")
	case !journal.Enabled():
		t.Skip("no journald socket (/run/systemd/journal/socket): run where journald runs")
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		t.Skip("journalctl not installed")
	}
	unit := fmt.Sprintf("sktest-%d-%d.service", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^TestIntegrationJournalFields$")
	cmd.Env = append(os.Environ(), envJournalChild+"="+unit)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}

	query := func(args ...string) []map[string]any {
		var recs []map[string]any
		for range 50 { // journald writes the records a moment after they are sent
			out, err := exec.Command("journalctl", append([]string{"--no-pager", "-o", "json", "-u", unit}, args...)...).Output()
			if err != nil {
				t.Fatalf("journalctl %v: %v", args, err)
			}
			recs = recs[:0]
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil {
					recs = append(recs, m)
				}
			}
			if len(recs) > 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return recs
	}
	all := query()
	if len(all) != 2 {
		t.Fatalf("journalctl -u %s: %d records, want the 2 sent with the unit: %v", unit, len(all), all)
	}
	w := all[0]
	for k, v := range map[string]string{
		"PRIORITY": "4", "SYSLOG_IDENTIFIER": "seedkeeper", "OBJECT_SYSTEMD_UNIT": unit, "_UID": "0",
		"SEEDKEEPER_IFACE": "eth1", "SEEDKEEPER_INSTANCE_ID": "i-test",
		"MESSAGE": `level=WARN msg="apply failed" iface=eth1 instance-id=i-test`,
	} {
		if w[k] != v {
			t.Errorf("%s = %v, want %q", k, w[k], v)
		}
	}
	t.Logf("journalctl -u %s -o json: first record %v", unit, w)
	if warn := query("-p", "warning"); len(warn) != 1 || warn[0]["MESSAGE"] != w["MESSAGE"] {
		t.Errorf("journalctl -u %s -p warning: %v; want the warning only", unit, warn)
	}
	if byField := query("SEEDKEEPER_SOURCE=nocloud"); len(byField) != 1 || byField[0]["PRIORITY"] != "6" {
		t.Errorf("journalctl -u %s SEEDKEEPER_SOURCE=nocloud: %v; want the info record", unit, byField)
	}
}
