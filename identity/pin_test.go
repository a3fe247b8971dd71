package identity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadMachineIdentity(t *testing.T) {
	m := newMachine(t)
	if id, err := ReadMachineIdentity(m.root); id != "" || err != nil {
		t.Errorf("no DMI: %q, %v", id, err)
	}
	writeTestFile(t, m.root.Path(ProductUUIDPath), strings.ToUpper(uuidA)+"\n")
	if id, err := ReadMachineIdentity(m.root); id != uuidA || err != nil {
		t.Errorf("product_uuid: %q, %v; want %q", id, err, uuidA)
	}
	writeTestFile(t, m.root.Path(ProductUUIDPath), "00000000-0000-0000-0000-000000000000\n")
	if id, err := ReadMachineIdentity(m.root); id != "" || err != nil {
		t.Errorf("placeholder: %q, %v; want none", id, err)
	}
}

// The pin at install: a VM that ran cloud-init keeps its ID when seedkeeper
// first boots, and a copy of its disk made before that boot is another
// machine.
func TestPinAtInstall(t *testing.T) {
	m := newMachine(t)
	in := proxmoxInput(uuidA, web1, hostA)
	m.cloudInitRan(in.ReportedID)
	st, out, err := Pin(m.root, uuidA, t0)
	if err != nil || out != Pinned {
		t.Fatalf("Pin = %v, %v", out, err)
	}
	if st.InstanceID != in.ReportedID || st.MachineID != uuidA || st.Rule != RuleAdopt || !st.PinnedAt.Equal(t0) {
		t.Errorf("state: %+v", st)
	}
	if loaded, err := Load(m.root); err != nil || loaded.InstanceID != in.ReportedID || loaded.Last == nil {
		t.Fatalf("saved state: %+v, %v", loaded, err)
	}

	// A clone made before seedkeeper's first boot: rule 4, not rule 3.
	c := m.copyTo(t)
	other := web1
	other.NICs = []proxmoxNIC{{Index: 0, MAC: "BC:24:11:CC:DD:02", IP: "192.0.2.11/24", GW: "192.0.2.1"}}
	cin := proxmoxInput(uuidB, other, hostA)
	expect(t, c.boot(cin), cin.ReportedID, RuleNewMachine)

	// The VM itself, migrated to other resolvers: keeps its ID.
	expect(t, m.boot(proxmoxInput(uuidA, web1, hostB)), in.ReportedID, RuleKeep)

	// Pin again: the existing pin is left as it is.
	before, _ := os.ReadFile(m.root.Path(StatePath))
	if _, out, err := Pin(m.root, uuidB, t0); out != AlreadyPinned || err != nil {
		t.Errorf("second Pin = %v, %v", out, err)
	}
	if after, _ := os.ReadFile(m.root.Path(StatePath)); string(after) != string(before) {
		t.Error("a second pin rewrote the state")
	}
}

func TestPinWritesNothingWhenItCannotPin(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(m *machine)
		machine string
		want    PinOutcome
	}{
		{"cloud-init never ran", func(m *machine) {}, uuidA, NothingToPin},
		// A template that ran cloud-init as DataSourceNone has no identity to pin.
		{"cloud-init ran as DataSourceNone", func(m *machine) { m.ranWithNone() }, uuidA, NothingToPin},
		{"cloud-init's placeholder ID", func(m *machine) { m.cloudInitRan("iid-datasource-none") }, uuidA, NothingToPin},
		{"empty instance-id file", func(m *machine) { m.cloudInitRan("") }, uuidA, NothingToPin},
		{"no machine identity", func(m *machine) { m.cloudInitRan("i-1") }, "", NoMachineIdentity},
		{"placeholder identity", func(m *machine) { m.cloudInitRan("i-1") }, "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", NoMachineIdentity},
		{"sealed image", func(m *machine) {
			m.cloudInitRan("i-1")
			if err := MarkSealed(m.root, t0); err != nil {
				t.Fatal(err)
			}
		}, uuidA, SealedImage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMachine(t)
			c.setup(m)
			if _, out, err := Pin(m.root, c.machine, t0); out != c.want || err != nil {
				t.Errorf("Pin = %v, %v; want %v", out, err, c.want)
			}
			if _, err := os.Stat(m.root.Path(StatePath)); !os.IsNotExist(err) {
				t.Errorf("state file written (%v)", err)
			}
		})
	}
}

func TestPinBadState(t *testing.T) {
	m := newMachine(t)
	m.cloudInitRan("i-1")
	writeTestFile(t, m.root.Path(StatePath), "{not json")
	if _, _, err := Pin(m.root, uuidA, t0); err == nil || !strings.Contains(err.Error(), StatePath) {
		t.Errorf("Pin on a bad state file: %v", err)
	}
}
