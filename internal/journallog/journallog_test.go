package journallog

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
)

type entry struct {
	msg    string
	pri    journal.Priority
	fields map[string]string
}

func capture(fail bool) (*[]entry, Sender) {
	var got []entry
	return &got, func(msg string, pri journal.Priority, fields map[string]string) error {
		if fail {
			return errors.New("no journald socket")
		}
		got = append(got, entry{msg, pri, maps.Clone(fields)})
		return nil
	}
}

// journalctl -p warning found none of seedkeeper's warnings: every record
// reached the journal at the default priority. Each level has its
// priority, and each attribute is a field journalctl can match.
func TestHandlerPriorityAndFields(t *testing.T) {
	got, send := capture(false)
	log := slog.New(New(send, slog.LevelInfo, nil))
	log.Debug("not logged")
	log.Info("network: applied", "nic", "eth1", "ops", 3)
	log.Warn("seed: changed by hand", "file", "/var/lib/cloud/seed/nocloud/meta-data")
	log.Error("boot failed", "err", errors.New("reading the seed: boom\nsecond line"))
	log.With("source", "smartos").WithGroup("mdata").Info("read", "took", 1500*time.Millisecond, "bad key!", "x")
	want := []entry{
		{`network: applied nic=eth1 ops=3`, journal.PriInfo, map[string]string{"SYSLOG_IDENTIFIER": "seedkeeper", "SEEDKEEPER_NIC": "eth1", "SEEDKEEPER_OPS": "3"}},
		{`seed: changed by hand file=/var/lib/cloud/seed/nocloud/meta-data`, journal.PriWarning, map[string]string{"SYSLOG_IDENTIFIER": "seedkeeper", "SEEDKEEPER_FILE": "/var/lib/cloud/seed/nocloud/meta-data"}},
		{`boot failed err="reading the seed: boom\nsecond line"`, journal.PriErr, map[string]string{"SYSLOG_IDENTIFIER": "seedkeeper", "SEEDKEEPER_ERR": "reading the seed: boom\nsecond line"}},
		{`read source=smartos mdata.took=1.5s "mdata.bad key!"=x`, journal.PriInfo, map[string]string{"SYSLOG_IDENTIFIER": "seedkeeper", "SEEDKEEPER_SOURCE": "smartos", "SEEDKEEPER_MDATA_TOOK": "1.5s", "SEEDKEEPER_MDATA_BAD_KEY_": "x"}},
	}
	if len(*got) != len(want) {
		t.Fatalf("sent %d entries, want %d: %+v", len(*got), len(want), *got)
	}
	for i, w := range want {
		g := (*got)[i]
		if g.msg != w.msg || g.pri != w.pri || !maps.Equal(g.fields, w.fields) {
			t.Errorf("entry %d:\n got %q %d %v\nwant %q %d %v", i, g.msg, g.pri, g.fields, w.msg, w.pri, w.fields)
		}
	}
}

// Every field name is one journald takes (A-Z, 0-9, _, not starting with
// _, at most 64 bytes): the package's own check in Send refuses others.
func TestFieldName(t *testing.T) {
	for key, want := range map[string]string{
		"nic":                   "SEEDKEEPER_NIC",
		"instance_id":           "SEEDKEEPER_INSTANCE_ID",
		"waited-for":            "SEEDKEEPER_WAITED_FOR",
		"é\n=":                  "SEEDKEEPER_____",
		"":                      "",
		strings.Repeat("k", 80): "SEEDKEEPER_" + strings.Repeat("K", 53),
	} {
		if got := FieldName(key); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestPriority(t *testing.T) {
	for l, want := range map[slog.Level]journal.Priority{
		slog.LevelDebug: journal.PriDebug, slog.LevelInfo: journal.PriInfo, slog.LevelInfo + 2: journal.PriWarning,
		slog.LevelWarn: journal.PriWarning, slog.LevelError: journal.PriErr, slog.LevelError + 4: journal.PriCrit,
	} {
		if got := Priority(l); got != want {
			t.Errorf("Priority(%v) = %d, want %d", l, got, want)
		}
	}
}

// A record the journal does not take is written as text: nothing lost.
func TestHandlerFallsBack(t *testing.T) {
	_, send := capture(true)
	var buf bytes.Buffer
	log := slog.New(New(send, slog.LevelInfo, NewTextHandler(&buf, true)))
	log.Warn("network: failed", "nic", "eth1")
	if got := buf.String(); got != "level=WARN msg=\"network: failed\" nic=eth1\n" {
		t.Errorf("fallback text: %q", got)
	}
}

// JOURNAL_STREAM names the stream journald reads by device and inode:
// only that file is the journal; another file, a malformed value or none
// is not.
func TestIsStream(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	stream, other := open("stream"), open("other")
	fi, err := stream.Stat()
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	for env, want := range map[string]bool{
		fmt.Sprintf("%d:%d", st.Dev, st.Ino):   true,
		fmt.Sprintf("%d:%d", st.Dev, st.Ino+1): false,
		fmt.Sprintf("%d:%d", st.Dev+1, st.Ino): false,
		fmt.Sprintf("%d", st.Ino):              false,
		fmt.Sprintf("%d:%dx", st.Dev, st.Ino):  false,
		"":                                     false,
	} {
		t.Setenv(EnvStream, env)
		if got := IsStream(stream); got != want {
			t.Errorf("JOURNAL_STREAM=%q: IsStream = %v, want %v", env, got, want)
		}
	}
	t.Setenv(EnvStream, fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	if IsStream(other) {
		t.Errorf("another file is taken for the stream")
	}
}

// The text handler is today's line: with a time on a terminal, without
// when journald reads the stream.
func TestNewTextHandler(t *testing.T) {
	var a, b bytes.Buffer
	slog.New(NewTextHandler(&a, false)).Info("hello", "nic", "eth0")
	slog.New(NewTextHandler(&b, true)).Info("hello", "nic", "eth0")
	if !strings.HasPrefix(a.String(), "time=") || !strings.HasSuffix(a.String(), " level=INFO msg=hello nic=eth0\n") {
		t.Errorf("terminal: %q", a.String())
	}
	if b.String() != "level=INFO msg=hello nic=eth0\n" {
		t.Errorf("journal stream: %q", b.String())
	}
}
