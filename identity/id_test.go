package identity

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"i-0123abcd", "nocloud", "5f2ac7a4-87c2-4f6e-9d1c-0d1c0e3ed1b1", "iid-ü", "a b"} {
		if err := CheckID(ok); err != nil {
			t.Errorf("CheckID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "i-\x1b]0;owned\x07", "i\n", "\xff", "i-\u2028", "i-\u202e"} {
		err := CheckID(bad)
		if !errors.Is(err, ErrBadID) {
			t.Errorf("CheckID(%q) = %v, want ErrBadID", bad, err)
			continue
		}
		// "." and ".." are named by the fixed message for dot names.
		if len(bad) > 2 && strings.Contains(err.Error(), bad) {
			t.Errorf("CheckID(%q) quotes the ID: %v", bad, err)
		}
	}
}

// An instance ID with escape sequences was pinned in
// identity.json even though the seed writer then refused it.
func TestDecideDoesNotPinARefusedID(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	if _, err := Decide(Input{Root: string(root), Source: datasource.SourceVMware, ReportedID: "i-good", MachineID: uuidA}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(root.Path(StatePath))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decide(Input{Root: string(root), Source: datasource.SourceVMware, ReportedID: "i-\x1b]0;owned\x07", MachineID: uuidA})
	if !errors.Is(err, ErrBadID) || d.InstanceID != "" {
		t.Fatalf("Decide = %+v, %v; want no decision and ErrBadID", d, err)
	}
	after, _ := os.ReadFile(root.Path(StatePath))
	if string(after) != string(before) {
		t.Errorf("identity.json changed:\n%s", after)
	}
	fresh := sysroot.Root(t.TempDir())
	Decide(Input{Root: string(fresh), Source: datasource.SourceVMware, ReportedID: "..", MachineID: uuidA})
	if _, err := os.Stat(fresh.Path(StatePath)); err == nil {
		t.Errorf("identity.json written for a refused ID")
	}
}
