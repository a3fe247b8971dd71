package identity

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// noneFixture is what cloud-init 22.4.2 wrote after a run with
// DataSourceNone (see testdata/identity/cloud-init-22.4-none.README).
const noneFixture = "../testdata/identity/cloud-init-22.4-none"

// copyTree copies the fixture tree src into root, symlinks as symlinks.
func copyTree(t *testing.T, src string, root sysroot.Root) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(string(root), rel)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case e.IsDir():
			return os.MkdirAll(dst, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ranWithNone puts cloud-init 22.4.2's record of a DataSourceNone run on m.
func (m *machine) ranWithNone() {
	m.t.Helper()
	copyTree(m.t, noneFixture, m.root)
}

func TestPlaceholderIDs(t *testing.T) {
	for _, u := range placeholderIDs {
		for _, spelling := range []string{u.value, strings.ToUpper(u.value), " " + u.value + "\n"} {
			if why, ok := PlaceholderID(spelling); !ok || why != u.why {
				t.Errorf("PlaceholderID(%q) = %q, %v; want %q, true", spelling, why, ok, u.why)
			}
		}
	}
	for _, id := range []string{"", " \n"} {
		if _, ok := PlaceholderID(id); !ok {
			t.Errorf("PlaceholderID(%q) is not a placeholder", id)
		}
	}
	// Real IDs, including defaults of real sources (they ran with data).
	for _, id := range []string{"nocloud", "iid-fixture-01", "i-0123456789abcdef0", "iid-dsconfigdrive", uuidA} {
		if why, ok := PlaceholderID(id); ok {
			t.Errorf("PlaceholderID(%q) = %q: a real ID taken for a placeholder", id, why)
		}
	}
}

// TestUnknownMachineIDs checks every row of the table, and the patterns,
// in the spellings the sources produce.
func TestUnknownMachineIDs(t *testing.T) {
	for _, u := range unknownMachineIDs {
		for _, spelling := range []string{u.value, strings.ToUpper(u.value), " " + u.value + "\n"} {
			if got := MachineIdentity(spelling); got != "" {
				t.Errorf("MachineIdentity(%q) = %q; want \"\" (%s)", spelling, got, u.why)
			}
		}
	}
	for _, s := range []string{
		"00000000-0000-0000-0000-000000000000",
		"00000000000000000000000000000000",
		"{00000000-0000-0000-0000-000000000000}",
		"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
		"ffffffffffffffffffffffffffffffff",
		"Not Settable", "Not Specified", "Default string", "To Be Filled By O.E.M.", "None", "Not Present",
		"03000200-0400-0500-0006-000700080009",
	} {
		if got := MachineIdentity(s); got != "" {
			t.Errorf("MachineIdentity(%q) = %q; want \"\"", s, got)
		}
	}
	for in, want := range map[string]string{
		" 4C4C4544-0042-3510-8052-B4C04F4E3332\n": uuidA,
		"00000000-0000-0000-0000-000000000001":    "00000000-0000-0000-0000-000000000001",
		"0f0f0f0f-0000-ffff-0000-000000000000":    "0f0f0f0f-0000-ffff-0000-000000000000",
		"b3c2e5a0-8f1d-4c6e-9a2b-7d4e5f6a7b8c":    "b3c2e5a0-8f1d-4c6e-9a2b-7d4e5f6a7b8c", // an sdc:uuid
	} {
		if got := MachineIdentity(in); got != want {
			t.Errorf("MachineIdentity(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every unknown machine identity is rule 5: nothing is pinned, and the
// explanation names what was read and why it is no identity.
func TestUnknownMachineIDNeverPinned(t *testing.T) {
	values := []string{"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"}
	for _, u := range unknownMachineIDs {
		values = append(values, u.value)
	}
	for _, mid := range values {
		m := newMachine(t)
		in := proxmoxInput(mid, web1, hostA)
		d := m.boot(in)
		expect(t, d, in.ReportedID, RulePassThrough)
		if d.PinnedID != "" || d.Changed || !strings.Contains(d.Explanation, "no machine identity") {
			t.Errorf("%q: %+v", mid, d)
		}
		if mid != "" && !strings.Contains(d.Explanation, mid) {
			t.Errorf("%q: the explanation does not name the value read: %s", mid, d.Explanation)
		}
		st, err := Load(m.root)
		if err != nil || st == nil || st.InstanceID != "" || st.MachineID != "" {
			t.Errorf("%q: state %+v, %v; want no pin", mid, st, err)
		}
		// A VMware VM without instance-id reports its product_uuid as
		// the ID: a placeholder there passes through too.
		m2 := newMachine(t)
		expect(t, m2.boot(vmware(mid, "vm-"+mid)), "vm-"+mid, RulePassThrough)
	}
}

func TestReadCloudInit(t *testing.T) {
	t.Run("22.4 DataSourceNone run", func(t *testing.T) {
		m := newMachine(t)
		m.ranWithNone()
		c, err := ReadCloudInit(m.root)
		if err != nil {
			t.Fatal(err)
		}
		if c.ID != "iid-datasource-none" || c.Datasource != "DataSourceNone" || c.DatasourceFrom != "/var/lib/cloud/instance/datasource" ||
			c.Placeholder == "" || c.Adoptable() != "" {
			t.Errorf("ReadCloudInit = %+v", c)
		}
	})
	// DataSourceNone with another ID (a patched or future cloud-init):
	// each record alone is enough, and either may be missing.
	for _, keep := range []string{"/var/lib/cloud/instances/iid-datasource-none/datasource", CloudInitInstanceData} {
		t.Run("only "+keep, func(t *testing.T) {
			m := newMachine(t)
			m.ranWithNone()
			other := map[string]string{
				"/var/lib/cloud/instances/iid-datasource-none/datasource": CloudInitInstanceData,
				CloudInitInstanceData: "/var/lib/cloud/instances/iid-datasource-none/datasource",
			}[keep]
			if err := os.Remove(m.root.Path(other)); err != nil {
				t.Fatal(err)
			}
			m.cloudInitRan("iid-none-patched")
			if keep == CloudInitInstanceData {
				b := strings.ReplaceAll(readFileT(t, m.root.Path(keep)), "iid-datasource-none", "iid-none-patched")
				writeFileT(t, m.root.Path(keep), b)
			}
			c, err := ReadCloudInit(m.root)
			if err != nil {
				t.Fatal(err)
			}
			if c.ID != "iid-none-patched" || c.Datasource != "DataSourceNone" || c.Adoptable() != "" ||
				!strings.Contains(c.Placeholder, "no datasource") {
				t.Errorf("ReadCloudInit = %+v", c)
			}
		})
	}
	t.Run("instance-data of another run is ignored", func(t *testing.T) {
		m := newMachine(t)
		m.ranWithNone()
		os.Remove(m.root.Path("/var/lib/cloud/instances/iid-datasource-none/datasource"))
		m.cloudInitRan("iid-real-01")
		c, _ := ReadCloudInit(m.root)
		if c.Adoptable() != "iid-real-01" || c.Datasource != "" {
			t.Errorf("ReadCloudInit = %+v; want iid-real-01 adoptable", c)
		}
	})
	t.Run("NoCloud run", func(t *testing.T) {
		m := newMachine(t)
		m.cloudInitRan("iid-real-01")
		writeFileT(t, m.root.Path("/var/lib/cloud/instances/iid-real-01/datasource"),
			"DataSourceNoCloud: DataSourceNoCloud [seed=/var/lib/cloud/seed/nocloud][dsmode=net]\n")
		if err := os.Symlink("/var/lib/cloud/instances/iid-real-01", m.root.Path(CloudInitInstanceLink)); err != nil {
			t.Fatal(err)
		}
		c, err := ReadCloudInit(m.root)
		if err != nil || c.Adoptable() != "iid-real-01" || c.Datasource != "DataSourceNoCloud" {
			t.Errorf("ReadCloudInit = %+v, %v", c, err)
		}
	})
	t.Run("garbled records are no record", func(t *testing.T) {
		m := newMachine(t)
		m.cloudInitRan("iid-real-01")
		writeFileT(t, m.root.Path(CloudInitInstanceData), "{not json")
		writeFileT(t, m.root.Path("/var/lib/cloud/instance/datasource"), ":\n")
		c, err := ReadCloudInit(m.root)
		if err != nil || c.Adoptable() != "iid-real-01" || c.Datasource != "" {
			t.Errorf("ReadCloudInit = %+v, %v", c, err)
		}
	})
	t.Run("empty instance-id file", func(t *testing.T) {
		m := newMachine(t)
		m.cloudInitRan("  ")
		c, err := ReadCloudInit(m.root)
		if err != nil || c.ID != "" || c.Adoptable() != "" || !strings.Contains(c.Placeholder, "is empty") {
			t.Errorf("ReadCloudInit = %+v, %v", c, err)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		c, err := ReadCloudInit(newMachine(t).root)
		if err != nil || c != (CloudInit{}) {
			t.Errorf("ReadCloudInit = %+v, %v", c, err)
		}
	})
}

// A template booted once without its seed (cloud-init
// ran as DataSourceNone), then cloned; the clone's first boot with a
// Proxmox seed must be a new instance with the reported ID, never the
// placeholder.
func TestTemplateBootedWithoutSeedThenCloned(t *testing.T) {
	template := newMachine(t)
	template.ranWithNone()
	clone := template.copyTo(t)
	copyTree(t, noneFixture, clone.root) // copyTo copies only the ID
	in := proxmoxInput(uuidB, web1, hostA)
	d := clone.boot(in)
	expect(t, d, in.ReportedID, RuleFirstRun)
	for _, want := range []string{`cloud-init ran before with "iid-datasource-none"`, "not adopted", "new instance", "new SSH host keys", "DataSourceNone"} {
		if !strings.Contains(d.Explanation, want) {
			t.Errorf("explanation lacks %q: %s", want, d.Explanation)
		}
	}
	if d.PinnedID != in.ReportedID {
		t.Errorf("pinned %q, want %q", d.PinnedID, in.ReportedID)
	}
}

// The same disk, first booted without the CD-ROM and
// then with it. After that the pin is kept as for any machine.
func TestSameDiskFirstWithoutThenWithSeed(t *testing.T) {
	m := newMachine(t)
	m.ranWithNone()
	in := proxmoxInput(uuidA, web1, hostA)
	expect(t, m.boot(in), in.ReportedID, RuleFirstRun)
	m.cloudInitRan(in.ReportedID) // cloud-init now ran with it
	os.Remove(m.root.Path(CloudInitInstanceData))
	expect(t, m.boot(proxmoxInput(uuidA, web1, hostB)), in.ReportedID, RuleKeep)
}

// An earlier seedkeeper adopted and pinned the placeholder
// iid-datasource-none a seedless template boot left behind: the pin is
// dropped and the reported ID pinned, so cloud-init finally sees a new
// instance.
func TestPlaceholderPinIsDropped(t *testing.T) {
	m := newMachine(t)
	m.ranWithNone()
	in := proxmoxInput(uuidA, web1, hostA)
	if _, err := Save(m.root, &State{InstanceID: "iid-datasource-none", MachineID: uuidA, Rule: RuleAdopt,
		RuleName: "adopt-cloud-init", ReportedID: in.ReportedID, Source: "nocloud", PinnedAt: t0, ConfirmedAt: t0}); err != nil {
		t.Fatal(err)
	}
	d := m.boot(in)
	expect(t, d, in.ReportedID, RuleFirstRun)
	if d.PreviousID != "iid-datasource-none" || !d.Changed || !strings.Contains(d.Explanation, `the pin "iid-datasource-none"`) {
		t.Errorf("decision: %+v", d)
	}
	// Without cloud-init's record too (it was cleaned): still dropped.
	m2 := newMachine(t)
	if _, err := Save(m2.root, &State{InstanceID: "iid-datasource-none", MachineID: uuidA, Rule: RuleAdopt, PinnedAt: t0}); err != nil {
		t.Fatal(err)
	}
	expect(t, m2.boot(in), in.ReportedID, RuleFirstRun)
}

// A source that reports a placeholder as its ID: passed through, nothing
// pinned, an existing pin and its reported ID left as they are.
func TestReportedPlaceholderPassesThrough(t *testing.T) {
	m := newMachine(t)
	first := vmware(uuidA, "vm-001")
	expect(t, m.boot(first), "vm-001", RuleFirstRun)
	d := m.boot(vmware(uuidA, "iid-datasource-none"))
	expect(t, d, "iid-datasource-none", RulePlaceholder)
	if d.PinnedID != "" || d.Changed || d.RuleName != "placeholder-reported" {
		t.Errorf("decision: %+v", d)
	}
	st, _ := Load(m.root)
	if st.InstanceID != "vm-001" || st.ReportedID != "vm-001" {
		t.Errorf("state after a placeholder: %+v", st)
	}
	expect(t, m.boot(first), "vm-001", RuleKeep)

	fresh := newMachine(t)
	expect(t, fresh.boot(vmware(uuidA, "iid-datasource-none")), "iid-datasource-none", RulePlaceholder)
	if st, _ := Load(fresh.root); st == nil || st.InstanceID != "" {
		t.Errorf("state: %+v", st)
	}
}

// An empty or unreadable cloud-init instance-id file is never adopted.
func TestEmptyOrUnreadableCloudInitID(t *testing.T) {
	m := newMachine(t)
	m.cloudInitRan("")
	in := vmware(uuidA, "vm-001")
	d := m.boot(in)
	expect(t, d, "vm-001", RuleFirstRun)
	if !strings.Contains(d.Explanation, "instance-id is empty") {
		t.Errorf("explanation: %s", d.Explanation)
	}

	u := newMachine(t)
	// A directory where the file should be: exists, cannot be read.
	if err := os.MkdirAll(u.root.Path(CloudInitIDPath), 0o755); err != nil {
		t.Fatal(err)
	}
	u.now = u.now.Add(time.Hour)
	in.Root, in.Now = string(u.root), u.now
	d, err := Decide(in)
	if err == nil || d.InstanceID != "vm-001" || d.Rule != RuleBadState || d.PinnedID != "" {
		t.Errorf("unreadable instance-id: %+v, %v", d, err)
	}
	if st, _ := Load(u.root); st != nil {
		t.Errorf("state written: %+v", st)
	}
}

func readFileT(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFileT(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadCloudInit feeds cloud-init's three records arbitrary bytes: the
// reader never fails on the datasource records, and never offers a
// placeholder or a DataSourceNone run for adoption.
func FuzzReadCloudInit(f *testing.F) {
	f.Add([]byte("iid-datasource-none\n"), []byte("DataSourceNone: DataSourceNone\n"), []byte(`{"v1":{"platform":"none","instance_id":"iid-datasource-none"}}`))
	f.Add([]byte("i-123\n"), []byte("DataSourceNoCloud: DataSourceNoCloud [seed=/dev/sr0][dsmode=net]\n"), []byte(`{"v1":{"platform":"nocloud"}}`))
	f.Add([]byte(""), []byte(":"), []byte(`{"v1":{"platform":null}}`))
	f.Add([]byte("x"), []byte("\x00DataSourceNone"), []byte(`{"v1":{"platform":"NONE","instance_id":"x"}}`))
	f.Fuzz(func(t *testing.T, id, ds, data []byte) {
		root := sysroot.Root(t.TempDir())
		for p, b := range map[string][]byte{
			CloudInitIDPath: id, "/var/lib/cloud/instance/datasource": ds, CloudInitInstanceData: data,
		} {
			writeFileT(t, root.Path(p), string(b))
		}
		c, err := ReadCloudInit(root)
		if err != nil {
			t.Fatalf("ReadCloudInit: %v", err)
		}
		if a := c.Adoptable(); a != "" {
			if _, ok := PlaceholderID(a); ok || c.Datasource == noneDatasource {
				t.Errorf("adoptable %q from %+v", a, c)
			}
		}
	})
}
