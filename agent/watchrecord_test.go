package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const (
	testBootA = "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44"
	testBootB = "0d3e5a71-c2b4-4f08-a9e6-7b1f3c5d8a20"
)

// recorderRoot is a root whose kernel says the boot is bootID, and a
// recorder on it whose clock the test sets.
func recorderRoot(t *testing.T, bootID string) (string, *watchRecorder, *time.Time, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, BootIDPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(bootID+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	log := &bytes.Buffer{}
	w := newWatchRecorder(sysroot.Root(root), slog.New(slog.NewTextHandler(log, nil)))
	now := time.Date(2026, 12, 1, 14, 2, 11, 0, time.UTC)
	w.now = func() time.Time { return now }
	return root, w, &now, log
}

func readRecord(t *testing.T, root string) *WatchRecord {
	t.Helper()
	r, warn, err := ReadWatchRecord(sysroot.Root(root))
	if err != nil || len(warn) != 0 {
		t.Fatalf("reading the record: %v %q", err, warn)
	}
	return r
}

// The record is written atomically (a new file renamed into place: a
// hard link to the old one keeps the old content), 0600, and only when
// it changes.
func TestWatchRecorderWritesOnChangeOnly(t *testing.T) {
	root, w, now, _ := recorderRoot(t, testBootA)
	p := filepath.Join(root, WatchRecordPath)
	w.Published("guestinfo.local-ipv4", "192.0.2.10")
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("record after a set: %v, mode %v", err, fi.Mode())
	}
	r := readRecord(t, root)
	if r.BootID != testBootA || len(r.Guestinfo) != 1 || r.Guestinfo[0] != (WatchGuestinfo{Key: "guestinfo.local-ipv4", Value: "192.0.2.10", At: *now}) {
		t.Errorf("record %+v", r)
	}
	old := p + ".old"
	if err := os.Link(p, old); err != nil {
		t.Fatal(err)
	}
	w.Published("guestinfo.local-ipv4", "192.0.2.10") // the same: no write
	if fi, _ := os.Lstat(p); !os.SameFile(fi, mustLstat(t, old)) {
		t.Error("the record was written again with the same content")
	}
	*now = now.Add(time.Minute)
	w.Published("guestinfo.local-ipv4", "192.0.2.11")
	if fi, _ := os.Lstat(p); os.SameFile(fi, mustLstat(t, old)) {
		t.Error("the record was changed in place, not replaced")
	}
	if b, _ := os.ReadFile(old); !strings.Contains(string(b), "192.0.2.10") || strings.Contains(string(b), "192.0.2.11") {
		t.Errorf("the old record's file changed:\n%s", b)
	}
	if r := readRecord(t, root); r.Guestinfo[0].Value != "192.0.2.11" {
		t.Errorf("record %+v", r)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 2 {
		t.Errorf("files left in %s: %v", filepath.Dir(p), ents)
	}
}

func mustLstat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// A failure keeps the value set before it; a success clears the failure.
func TestWatchRecorderFailureAndRecovery(t *testing.T) {
	root, w, now, _ := recorderRoot(t, testBootA)
	w.Published("guestinfo.local-ipv6", "2001:db8::1")
	*now = now.Add(time.Minute)
	retry := now.Add(30 * time.Second)
	w.SetFailed("guestinfo.local-ipv6", "2001:db8::2", errors.New("vmware-rpctool: Permission denied\nsecond line"), retry)
	g := readRecord(t, root).Key("guestinfo.local-ipv6")
	if g == nil || g.Value != "2001:db8::1" || g.Failed == nil ||
		*g.Failed != (WatchFailure{Value: "2001:db8::2", At: *now, Error: "vmware-rpctool: Permission denied", RetryAt: retry}) {
		t.Fatalf("after a failed set: %+v", g)
	}
	*now = now.Add(time.Minute)
	w.Published("guestinfo.local-ipv6", "2001:db8::2")
	if g := readRecord(t, root).Key("guestinfo.local-ipv6"); g.Value != "2001:db8::2" || g.Failed != nil || !g.At.Equal(*now) {
		t.Errorf("after the set worked: %+v", g)
	}
}

// Many hotplug events do not grow the record without limit: the last
// WatchKeepEvents per NIC, the WatchKeepNICs NICs with the latest events.
func TestWatchRecorderBounded(t *testing.T) {
	root, w, now, _ := recorderRoot(t, testBootA)
	const mac = "52:54:00:00:00:01"
	for i := range 3 * WatchKeepEvents {
		*now = now.Add(time.Second)
		w.hotplug(hotplug.Outcome{Name: "eth1", MAC: mac, Result: hotplug.Failed, Err: fmt.Errorf("try %d", i)})
	}
	r := readRecord(t, root)
	if len(r.Hotplug) != 1 || len(r.Hotplug[0].Events) != WatchKeepEvents {
		t.Fatalf("%d NICs, %d events", len(r.Hotplug), len(r.Hotplug[0].Events))
	}
	if ev := r.Hotplug[0].Events; ev[0].Error != fmt.Sprintf("try %d", 2*WatchKeepEvents) || ev[len(ev)-1].Error != fmt.Sprintf("try %d", 3*WatchKeepEvents-1) {
		t.Errorf("kept events %+v, want the last ones", ev)
	}
	for i := range 2 * WatchKeepNICs {
		*now = now.Add(time.Second)
		w.hotplug(hotplug.Outcome{Name: fmt.Sprint("eth", i), MAC: fmt.Sprintf("52:54:00:00:01:%02x", i), Result: hotplug.Applied})
	}
	r = readRecord(t, root)
	if len(r.Hotplug) != WatchKeepNICs {
		t.Fatalf("%d NICs kept, want %d", len(r.Hotplug), WatchKeepNICs)
	}
	for _, n := range r.Hotplug {
		if n.MAC == mac || n.MAC < fmt.Sprintf("52:54:00:00:01:%02x", WatchKeepNICs) {
			t.Errorf("kept %s, one of the oldest", n.MAC)
		}
	}
	if fi := mustLstat(t, filepath.Join(root, WatchRecordPath)); fi.Size() > 64<<10 {
		t.Errorf("the record is %d bytes", fi.Size())
	}
}

// A link at the record's place is not written through; the watch goes on
// and says so once.
func TestWatchRecorderRefusesLink(t *testing.T) {
	root, w, now, log := recorderRoot(t, testBootA)
	target := filepath.Join(root, "target")
	if err := os.WriteFile(target, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, WatchRecordPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	w.Published("guestinfo.local-ipv4", "192.0.2.10")
	*now = now.Add(time.Second)
	w.Published("guestinfo.local-ipv4", "192.0.2.11")
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("written through the link: %q", b)
	}
	if fi := mustLstat(t, p); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if n := strings.Count(log.String(), "recording what the watch did"); n != 1 {
		t.Errorf("%d log lines about the failed write, want 1:\n%s", n, log)
	}
}

// A watch restarted in the same boot goes on from its record; in another
// boot it starts afresh.
func TestWatchRecorderRestart(t *testing.T) {
	root, w, _, _ := recorderRoot(t, testBootA)
	w.hotplug(hotplug.Outcome{Name: "eth1", MAC: "52:54:00:00:00:01", Result: hotplug.Applied})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	again := newWatchRecorder(sysroot.Root(root), quiet)
	again.hotplug(hotplug.Outcome{Name: "eth2", MAC: "52:54:00:00:00:02", Result: hotplug.Applied})
	if r := readRecord(t, root); len(r.Hotplug) != 2 {
		t.Errorf("after a restart in the same boot: %+v", r.Hotplug)
	}
	if err := os.WriteFile(filepath.Join(root, BootIDPath), []byte(testBootB+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	next := newWatchRecorder(sysroot.Root(root), quiet)
	next.hotplug(hotplug.Outcome{Name: "eth3", MAC: "52:54:00:00:00:03", Result: hotplug.Applied})
	if r := readRecord(t, root); r.BootID != testBootB || len(r.Hotplug) != 1 || r.Hotplug[0].MAC != "52:54:00:00:00:03" {
		t.Errorf("in the next boot: %+v", r)
	}
}

// firstLine keeps one line, cut at a character.
func TestFirstLine(t *testing.T) {
	long := strings.Repeat("é", watchErrorMax)
	if got := firstLine(errors.New(long + "\nrest")); len(got) > watchErrorMax || !strings.HasSuffix(got, "…") || textCheck(got) != "" {
		t.Errorf("firstLine of a long error: %d bytes, %q", len(got), textCheck(got))
	}
	if got := firstLine(errors.New("a\r\nb")); got != "a" {
		t.Errorf("firstLine = %q", got)
	}
}

const (
	secretMarker = "SECRET-d4b1"
	secretDigits = "31415926535897932384626"
)

// What does not parse is a clear error that never quotes the file; an
// entry that is not of its kind is left out, with a warning.
func TestParseWatchRecord(t *testing.T) {
	for _, tc := range []struct{ name, in, err string }{
		{"not JSON", `{"version": 1, ` + secretMarker, "not JSON (at byte"},
		{"wrong type", `{"version": "` + secretMarker + `"}`, "version is a JSON string"},
		// encoding/json puts a number that does not fit in its error.
		{"a number not of its kind", `{"version": 1.` + secretDigits + `}`, "version is a JSON number, not of its kind"},
		{"a number in a list", `{"version": 1, "hotplug": [{"mac": "52:54:00:00:00:01", "events": [` + secretDigits + `]}]}`, "hotplug.events is a JSON number, not of its kind"},
		{"a number, not an object", secretDigits, "a JSON number, not an object"},
		{"a list", `["` + secretMarker + `"]`, "a JSON array, not an object"},
		{"bad time", `{"version": 1, "hotplug": [{"mac": "52:54:00:00:00:01", "events": [{"name": "eth1", "at": "` + secretMarker + `", "result": "applied"}]}]}`, "a time that is not one"},
		{"version", `{"version": 7}`, "version 7, not 1"},
		{"boot ID", `{"version": 1, "boot_id": "` + secretMarker + `"}`, "boot_id: "},
	} {
		_, _, err := ParseWatchRecord([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), secretMarker) || strings.Contains(err.Error(), secretDigits) {
			t.Errorf("%s: %v, want %q and no quote", tc.name, err, tc.err)
		}
	}

	in := `{"version": 1, "boot_id": "` + strings.ToUpper(testBootA) + `",
  "guestinfo": [
    {"key": "guestinfo.local-ipv4", "value": "192.0.2.10", "at": "2026-12-01T14:02:11Z"},
    {"key": "guestinfo.` + secretMarker + `", "value": "192.0.2.10"},
    {"key": "guestinfo.local-ipv6", "value": "` + secretMarker + `"},
    {"key": "guestinfo.local-ipv4", "value": "192.0.2.11", "at": "2026-12-01T14:03:11Z"},
    {"key": "guestinfo.local-ipv6", "value": "2001:db8::1"}
  ],
  "hotplug": [
    {"mac": "` + secretMarker + `", "events": [{"name": "eth1", "result": "applied"}]},
    {"mac": "52:54:00:00:00:0A", "events": [
      {"name": "eth2", "at": "2026-12-01T14:01:55Z", "result": "applied"},
      {"name": "eth2", "result": "` + secretMarker + `"},
      {"name": "` + secretMarker + `-longer-than-15", "result": "applied"},
      {"name": "eth2", "result": "failed"},
      {"name": "eth2", "result": "failed", "error": "line\n` + secretMarker + `"},
      {"name": "eth2", "result": "failed", "error": "busy"}
    ]}
  ]}`
	r, warn, err := ParseWatchRecord([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if r.BootID != testBootA || len(r.Guestinfo) != 1 || r.Guestinfo[0].Value != "192.0.2.10" ||
		len(r.Hotplug) != 1 || r.Hotplug[0].MAC != "52:54:00:00:00:0a" || len(r.Hotplug[0].Events) != 1 {
		t.Errorf("parsed %+v", r)
	}
	want := []string{
		"guestinfo entry 2: not a key seedkeeper watch sets; left out",
		"guestinfo entry 3: the value set is not an IP address; left out",
		"guestinfo entry 4: guestinfo.local-ipv4 again; left out",
		"guestinfo entry 5: no time; left out",
		"hotplug entry 1: not an ethernet MAC address; left out",
		"hotplug entry 2 (52:54:00:00:00:0a), event 2: not a result seedkeeper watch records; left out",
		"hotplug entry 2 (52:54:00:00:00:0a), event 3: not a link name; left out",
		"hotplug entry 2 (52:54:00:00:00:0a), event 4: not applied, with no error; left out",
		"hotplug entry 2 (52:54:00:00:00:0a), event 5: the error is more than one line; left out",
		"hotplug entry 2 (52:54:00:00:00:0a), event 6: no time; left out",
	}
	if strings.Join(warn, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warn, "\n"), strings.Join(want, "\n"))
	}
}

// A customization's entry holds one to a bound of lines, each one line
// of text within its bound, with a time; one that does not is left out
// whole, said without quoting it. Only the last few are kept.
func TestParseWatchRecordCustomization(t *testing.T) {
	line := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	many := strings.TrimSuffix(strings.Repeat(`"x",`, watchCustomizationLines+1), ",")
	in := `{"version": 1, "customization": [
    {"at": "2026-12-01T14:02:11Z", "lines": ["spec arrived", "network: applied"]},
    {"lines": ["no time"]},
    {"at": "2026-12-01T14:02:12Z", "lines": []},
    {"at": "2026-12-01T14:02:13Z", "lines": [` + many + `]},
    {"at": "2026-12-01T14:02:14Z", "lines": ["ok", ` + line("two\n"+secretMarker) + `]},
    {"at": "2026-12-01T14:02:15Z", "lines": [` + line(strings.Repeat("y", watchLineMax+1)) + `]},
    {"at": "2026-12-01T14:02:16Z", "lines": ["failed"], "failed": true},
    {"at": "2026-12-01T14:02:17Z", "lines": ["ok"], "why": "a reason"},
    {"at": "2026-12-01T14:02:18Z", "lines": ["failed"], "failed": true, "why": "two\nlines"}
  ]}`
	r, warn, err := ParseWatchRecord([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Customization) != 2 || r.Customization[0].Lines[1] != "network: applied" || !r.Customization[1].Failed {
		t.Errorf("parsed %+v", r.Customization)
	}
	want := []string{
		"customization entry 2: no time; left out",
		"customization entry 3: 0 lines, not 1 to 32; left out",
		"customization entry 4: 33 lines, not 1 to 32; left out",
		"customization entry 5: line 2 is not one line of UTF-8 text of 1 to 1024 bytes; left out",
		"customization entry 6: line 1 is not one line of UTF-8 text of 1 to 1024 bytes; left out",
		"customization entry 8: a reason it failed, and not failed; left out",
		"customization entry 9: why is not one line of UTF-8 text of at most 1024 bytes; left out",
	}
	if strings.Join(warn, "\n") != strings.Join(want, "\n") || strings.Contains(strings.Join(warn, ""), secretMarker) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warn, "\n"), strings.Join(want, "\n"))
	}

	// The recorder keeps the last few, each line one line within its
	// bound.
	_, w, now, _ := recorderRoot(t, testBootA)
	for i := range WatchKeepCustomizations + 2 {
		*now = now.Add(time.Second)
		why := ""
		if i%2 == 1 {
			why = "failed\nfor " + strings.Repeat("w", watchLineMax)
		}
		w.Customized([]string{fmt.Sprintf("spec %d", i), "a\nb", strings.Repeat("z", watchLineMax+10), ""}, why)
	}
	w.Customized(nil, "failed") // nothing to say: nothing recorded
	got, _, err := ReadWatchRecord(w.root)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Customization); n != WatchKeepCustomizations {
		t.Fatalf("%d customizations kept, want %d", n, WatchKeepCustomizations)
	}
	c := got.Customization[0]
	if c.Lines[0] != "spec 2" || c.Lines[1] != "a b" || len(c.Lines[2]) > watchLineMax || len(c.Lines) != 3 || c.Failed || c.Why != "" {
		t.Errorf("oldest kept: %+v", c)
	}
	if c := got.Customization[1]; !c.Failed || !strings.HasPrefix(c.Why, "failed for www") || len(c.Why) != watchLineMax {
		t.Errorf("failed one kept: %+v", c)
	}
}

// A file of many bad entries is a few warnings, not one per entry.
func TestParseWatchRecordBoundsWarnings(t *testing.T) {
	in := `{"version": 1, "hotplug": [` + strings.Repeat(`{"mac": "x", "events": []},`, 999) + `{"mac": "x"}]}`
	_, warn, err := ParseWatchRecord([]byte(in))
	if err != nil || len(warn) != maxWarnings+1 || warn[maxWarnings] != "990 more entries left out" {
		t.Errorf("%v, %d warnings, last %q", err, len(warn), warn[len(warn)-1])
	}
}

// A record of another boot is not this boot's; one with no boot ID, or
// a root with none to compare, is, as Status.ThisBoot takes it.
func TestWatchRecordThisBoot(t *testing.T) {
	for _, tc := range []struct {
		rec, current, status string
		want                 bool
	}{
		{testBootA, testBootA, "", true},
		{testBootA, testBootB, testBootA, false},
		{testBootA, "", testBootA, true},
		{testBootA, "", testBootB, false},
		{testBootA, "", "", true},
		{"", testBootB, testBootB, true},
	} {
		r := &WatchRecord{BootID: tc.rec}
		if got := r.ThisBoot(tc.current, tc.status); got != tc.want {
			t.Errorf("record %q, current %q, status %q: %v, want %v", tc.rec, tc.current, tc.status, got, tc.want)
		}
	}
}

// Whatever the file holds, parsing does not panic, and what it accepts is
// within the bounds and reads back the same once written.
func FuzzParseWatchRecord(f *testing.F) {
	f.Add([]byte(`{"version": 1}`))
	f.Add([]byte(`{"version": 1, "boot_id": "` + testBootA + `", "guestinfo": [{"key": "guestinfo.local-ipv4", "value": "192.0.2.10", "at": "2026-12-01T14:02:11Z", "failed": {"value": "192.0.2.11", "at": "2026-12-01T14:03:00Z", "error": "denied", "retry_at": "2026-12-01T14:03:30Z"}}]}`))
	f.Add([]byte(`{"version": 1, "hotplug": [{"mac": "52:54:00:00:00:01", "events": [{"name": "eth1", "at": "2026-12-01T14:01:55Z", "result": "partial", "error": "1 of 2 operations failed"}]}]}`))
	f.Add([]byte(`{"version": 1, "hotplug": [{"mac": "52:54:00:00:00:01"}, {"mac": "52:54:00:00:00:01", "events": null}]}`))
	f.Add([]byte(`{"version": 1, "guestinfo": [{"key": "guestinfo.local-ipv6"}]}`))
	f.Add([]byte("\x00\xff{"))
	f.Add([]byte(`{"version": 1, "customization": [{"at": "2026-12-01T14:02:11Z", "lines": ["a", "b"], "failed": true}, {"at": "2026-12-01T14:02:12Z", "lines": ["c"]}]}`))
	f.Add([]byte(`{"version": 1.` + strings.Repeat("7", 200) + `}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := ParseWatchRecord(b)
		if err != nil {
			// What and where, in a few words: no room to quote the file.
			if len(err.Error()) > 100 {
				t.Fatalf("an error of %d bytes: %q", len(err.Error()), err)
			}
			return
		}
		if len(r.Hotplug) > WatchKeepNICs || len(r.Guestinfo) > len(watchKeys) {
			t.Fatalf("%d NICs, %d keys", len(r.Hotplug), len(r.Guestinfo))
		}
		if len(r.Customization) > WatchKeepCustomizations {
			t.Fatalf("%d customizations", len(r.Customization))
		}
		for _, c := range r.Customization {
			if len(c.Lines) == 0 || len(c.Lines) > watchCustomizationLines {
				t.Fatalf("%d lines", len(c.Lines))
			}
		}
		for _, n := range r.Hotplug {
			if len(n.Events) == 0 || len(n.Events) > WatchKeepEvents {
				t.Fatalf("%s: %d events", n.MAC, len(n.Events))
			}
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, warn, err := ParseWatchRecord(out)
		if err != nil || len(warn) != 0 {
			t.Fatalf("what was accepted does not read back: %v %q\n%s", err, warn, out)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("read back differs:\n%s\n%s", out, out2)
		}
	})
}

// A NIC boot applied is not repeated when the watch applies it again at
// start; but when that first apply failed, the one that then worked is
// recorded, or status would go on saying the NIC failed.
func TestWatchRecorderBootNICs(t *testing.T) {
	root, w, now, _ := recorderRoot(t, testBootA)
	w.bootLinks = []string{"eth0", "eth1"}
	const mac0, mac1 = "52:54:00:00:00:10", "52:54:00:00:00:11"
	w.hotplug(hotplug.Outcome{Name: "eth0", MAC: mac0, Result: hotplug.Applied, AtStart: true})
	if _, err := os.Lstat(filepath.Join(root, WatchRecordPath)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("boot's NIC, applied again at start, was recorded (%v)", err)
	}
	w.hotplug(hotplug.Outcome{Name: "eth1", MAC: mac1, Result: hotplug.Failed, Err: errors.New("busy"), AtStart: true})
	*now = now.Add(time.Second)
	w.hotplug(hotplug.Outcome{Name: "eth1", MAC: mac1, Result: hotplug.Applied, AtStart: true})
	r := readRecord(t, root)
	if len(r.Hotplug) != 1 || r.Hotplug[0].MAC != mac1 || len(r.Hotplug[0].Events) != 2 || r.Hotplug[0].Last().Result != hotplug.Applied {
		t.Errorf("record %+v", r.Hotplug)
	}
	// A NIC boot did not apply is the watch's even at start.
	w.hotplug(hotplug.Outcome{Name: "eth2", MAC: "52:54:00:00:00:12", Result: hotplug.Applied, AtStart: true})
	if r := readRecord(t, root); len(r.Hotplug) != 2 {
		t.Errorf("a NIC applied at start that boot did not apply: %+v", r.Hotplug)
	}
}

// The guestinfo reconcile and the hotplug loop record from their own
// goroutines: every change reaches the file, none is lost to the other's
// write (run with -race).
func TestWatchRecorderConcurrent(t *testing.T) {
	root, w, _, _ := recorderRoot(t, testBootA)
	w.now = time.Now // the test's clock is not safe for concurrent use
	const n = 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			w.Published("guestinfo.local-ipv4", fmt.Sprintf("192.0.2.%d", i+1))
		}
	}()
	for i := range n {
		w.hotplug(hotplug.Outcome{Name: fmt.Sprint("eth", i), MAC: fmt.Sprintf("52:54:00:00:02:%02x", i), Result: hotplug.Applied})
	}
	<-done
	r := readRecord(t, root)
	if g := r.Key("guestinfo.local-ipv4"); g == nil || g.Value != fmt.Sprintf("192.0.2.%d", n) || len(r.Hotplug) != n {
		t.Errorf("record after concurrent changes: %+v, %d NICs", g, len(r.Hotplug))
	}
}

// BenchmarkParseWatchRecordLarge parses a record of the largest size read
// (fsutil.SmallFile) holding as many distinct NICs as fit: before the
// MACs were kept in a set, each was compared with every one before it.
func BenchmarkParseWatchRecordLarge(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"version": 1, "hotplug": [`)
	for i := 0; s.Len() < 1<<20-200; i++ {
		if i > 0 {
			s.WriteString(",")
		}
		fmt.Fprintf(&s, `{"mac": "52:%02x:%02x:%02x:00:01", "events": [{"name": "e", "at": "2026-12-01T14:01:55Z", "result": "applied"}]}`, i>>16&255, i>>8&255, i&255)
	}
	s.WriteString("]}")
	in := []byte(s.String())
	for b.Loop() {
		if r, _, err := ParseWatchRecord(in); err != nil || len(r.Hotplug) != WatchKeepNICs {
			b.Fatal(err)
		}
	}
}
