package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

func identityCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runIdentity(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestIdentityCommand(t *testing.T) {
	dir := t.TempDir()
	root := sysroot.Root(dir)

	code, out, _ := identityCmd("show", "--root", dir)
	if code != exitOK || !strings.Contains(out, "No identity state yet") || !strings.Contains(out, "cloud-init has not run here") {
		t.Fatalf("show with no state: %d %q", code, out)
	}

	in := identity.Input{Root: string(root), Source: datasource.SourceVMware, ReportedID: "vm-42",
		MachineID: "4c4c4544-0042-3510-8052-b4c04f4e3332", Now: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)}
	if _, err := identity.Decide(in); err != nil {
		t.Fatal(err)
	}
	code, out, _ = identityCmd("show", "--root", dir)
	for _, s := range []string{"Pinned ID:        vm-42", "2026-03-01T08:00:00Z by rule 6 (first-run), source vmware", "4c4c4544-0042-3510-8052-b4c04f4e3332", "(rule 6, first-run)."} {
		if !strings.Contains(out, s) {
			t.Errorf("show lacks %q:\n%s", s, out)
		}
	}
	if code != exitOK {
		t.Errorf("show: exit %d", code)
	}

	code, out, _ = identityCmd("reset", "--root", dir)
	if code != exitOK || !strings.Contains(out, "the next boot will be a new instance") || !strings.Contains(out, "vm-42 will be replaced") {
		t.Fatalf("reset: %d %q", code, out)
	}
	code, out, _ = identityCmd("show", "--json", "--root", dir)
	var got struct {
		Path  string
		State identity.State
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("show --json: %d %v\n%s", code, err, out)
	}
	if got.Path != identity.StatePath || got.State.InstanceID != "vm-42" || got.State.Reset == nil {
		t.Errorf("show --json = %+v", got)
	}
	in.Now = in.Now.Add(time.Hour)
	d, err := identity.Decide(in)
	if err != nil || d.InstanceID != "vm-42-r"+got.State.Reset.Suffix {
		t.Errorf("after reset: %+v %v", d, err)
	}
}

func TestIdentityCommandErrors(t *testing.T) {
	dir := t.TempDir()
	path := sysroot.Root(dir).Path(identity.StatePath)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("{broken"), 0o644)
	for _, sub := range []string{"show", "reset"} {
		code, _, errs := identityCmd(sub, "--root", dir)
		if code != exitError || !strings.Contains(errs, path) || !strings.Contains(errs, "keeps cloud-init's current instance ID") {
			t.Errorf("%s on a broken state: %d %q", sub, code, errs)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "{broken" {
		t.Error("the broken state file was changed")
	}
	for _, args := range [][]string{{}, {"frob"}, {"show", "--bogus"}, {"show", "extra"}} {
		if code, _, _ := identityCmd(args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
	if _, _, errs := identityCmd("frob"); !strings.Contains(errs, `unknown command "frob" (want show, reset or pin)`) {
		t.Errorf("unknown command: %q", errs)
	}
	for _, args := range [][]string{{"--help"}, {"show", "--help"}, {"help"}} {
		code, out, _ := identityCmd(args...)
		if code != exitOK || !strings.Contains(out, "Usage: seedkeeper identity show") {
			t.Errorf("%q: %d %q", args, code, out)
		}
	}
}
