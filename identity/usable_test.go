package identity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seedkeeper/seedkeeper/datasource"
)

// A cloud-init instance-id or a pin that cloud-init could
// not use came back as the decided ID, and seed.Write then failed the boot.
func TestDecideTreatsUnusableCloudInitIDAsAbsent(t *testing.T) {
	for _, bad := range []string{"..", "../../etc", "evil\x1b[2J/x", strings.Repeat("i", datasource.MaxInstanceID+1)} {
		m := newMachine(t)
		m.cloudInitRan(bad)
		in := vmware(uuidA, "vm-1")
		in.Root, in.Now = string(m.root), t0
		d, err := Decide(in)
		if !errors.Is(err, ErrUnusableID) || !strings.Contains(err.Error(), m.root.Path(CloudInitIDPath)) {
			t.Fatalf("cloud-init ID %q: err = %v, want ErrUnusableID naming the file", bad, err)
		}
		if len(bad) > 2 && (strings.Contains(err.Error(), bad) || strings.Contains(d.Explanation, bad)) {
			t.Errorf("the unusable ID is quoted: %v / %s", err, d.Explanation)
		}
		expect(t, d, "vm-1", RuleFirstRun)
		if !strings.Contains(d.Explanation, "Not used: ") {
			t.Errorf("explanation does not say what was not used: %s", d.Explanation)
		}
		if st, err := Load(m.root); err != nil || st.InstanceID != "vm-1" {
			t.Errorf("state after the decision: %+v, %v", st, err)
		}
	}
}

func TestDecideTreatsUnusablePinAsAbsent(t *testing.T) {
	m := newMachine(t)
	m.cloudInitRan("vm-1")
	path := m.root.Path(StatePath)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"version":1,"instance_id":"../x","machine_id":"`+uuidA+`","rule":1,
		"reset":{"requested_at":"2026-01-01T00:00:00Z","suffix":"abcd0123","from":"../x"}}`), 0o644)
	in := vmware(uuidA, "vm-1")
	in.Root, in.Now = string(m.root), t0
	d, err := Decide(in)
	if !errors.Is(err, ErrUnusableID) || errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want ErrUnusableID naming %s", err, path)
	}
	// No pin: the pending reset applies, to the reported ID.
	expect(t, d, "vm-1-rabcd0123", RuleReset)
	if d.PreviousID != "" {
		t.Errorf("previous ID %q: the unusable pin is carried on", d.PreviousID)
	}
	st, err := Load(m.root)
	if err != nil || st.InstanceID != "vm-1-rabcd0123" || st.Reset != nil {
		t.Fatalf("state after the decision: %+v, %v", st, err)
	}
	// The next boot keeps the new pin, without complaint.
	expect(t, m.boot(in), "vm-1-rabcd0123", RuleKeep)
}

func TestDecideBadStateFallbackSkipsUnusableCloudInitID(t *testing.T) {
	m := newMachine(t)
	m.cloudInitRan("..")
	path := m.root.Path(StatePath)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("{"), 0o644)
	in := vmware(uuidA, "vm-1")
	in.Root = string(m.root)
	d, err := Decide(in)
	if !errors.Is(err, ErrBadState) || !errors.Is(err, ErrUnusableID) {
		t.Fatalf("err = %v, want ErrBadState and ErrUnusableID", err)
	}
	expect(t, d, "vm-1", RuleBadState)
}

// A reported ID of the longest length cloud-init takes still gets a reset
// or clone suffix, and the result is still one cloud-init can use.
func TestDecideSuffixedIDsStayUsable(t *testing.T) {
	long := strings.Repeat("é", datasource.MaxInstanceID/2) // 254 bytes, 2 per character
	check := func(d Decision, suffix string) {
		t.Helper()
		if err := datasource.CheckInstanceID(d.InstanceID); err != nil || !strings.HasSuffix(d.InstanceID, suffix) {
			t.Errorf("ID of %d bytes by rule %s (valid UTF-8: %v): %v", len(d.InstanceID), d.Rule, utf8.ValidString(d.InstanceID), err)
		}
	}

	m := newMachine(t)
	m.boot(vmware(uuidA, long))
	st, err := Reset(string(m.root), t0)
	if err != nil {
		t.Fatal(err)
	}
	d := m.boot(vmware(uuidA, long))
	if d.Rule != RuleReset {
		t.Fatalf("rule %s after a reset", d.Rule)
	}
	check(d, "-r"+st.Reset.Suffix)

	m = newMachine(t)
	m.boot(vmware(uuidA, long))
	c := m.copyTo(t)
	d = c.boot(vmware(uuidB, long))
	if d.Rule != RuleNewMachine {
		t.Fatalf("rule %s on a clone", d.Rule)
	}
	check(d, DerivedID([]byte(uuidB), nil)[:8])
}

func TestParseStateRejectsResetSuffixNotHex(t *testing.T) {
	for _, s := range []string{"/../x", "ABCD", "ab\ncd", strings.Repeat("a", 17)} {
		data := `{"version":1,"reset":{"requested_at":"2026-01-01T00:00:00Z","suffix":` + quote(s) + `}}`
		if _, err := ParseState([]byte(data)); err == nil || !strings.Contains(err.Error(), "reset.suffix") {
			t.Errorf("suffix %q: err = %v", s, err)
		}
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}
