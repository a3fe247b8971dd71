package identity

import (
	"os"
	"strings"
	"testing"
)

// The derived-ID template case (docs/cloud-init.md, "Proxmox VE";
// docs/design.md, "Identity rules", rule 3): a Proxmox template that ran
// cloud-init but not seedkeeper hands every clone its own ID by adoption;
// sealed, each clone is a new instance.
func TestSealedImageFirstBootIsNewInstance(t *testing.T) {
	tmpl := newMachine(t)
	tin := proxmoxInput(uuidA, web1, hostA)
	tmpl.cloudInitRan(tin.ReportedID)

	clone := web1
	clone.NICs = []proxmoxNIC{{Index: 0, MAC: "BC:24:11:CC:DD:02", IP: "192.0.2.11/24", GW: "192.0.2.1"}}
	cin := proxmoxInput(uuidB, clone, hostA)

	unsealed := tmpl.copyTo(t)
	expect(t, unsealed.boot(cin), tin.ReportedID, RuleAdopt) // the failure sealing prevents

	// The seal leaves only the marker; a pin or a cloud-init ID that is
	// still there (copied in after the seal) does not count either.
	sealed := tmpl.copyTo(t)
	if _, _, err := Pin(sealed.root, uuidA, t0); err != nil {
		t.Fatal(err)
	}
	if err := MarkSealed(sealed.root, t0); err != nil {
		t.Fatal(err)
	}
	d := sealed.boot(cin)
	expect(t, d, cin.ReportedID, RuleFirstRun)
	if !strings.Contains(d.Explanation, "sealed (seedkeeper image seal) at 2026-03-01T08:00:00Z") {
		t.Errorf("explanation does not name the seal: %s", d.Explanation)
	}
	if _, err := os.Lstat(sealed.root.Path(SealedPath)); !os.IsNotExist(err) {
		t.Errorf("sealed marker not consumed (%v)", err)
	}
	if st, _ := Load(sealed.root); st == nil || st.Last == nil || st.Last.Explanation != d.Explanation || st.MachineID != uuidB {
		t.Errorf("saved state: %+v", st)
	}
	// The next boot, with other resolvers: the clone keeps its own ID.
	moved := proxmoxInput(uuidB, clone, hostB)
	expect(t, sealed.boot(moved), cin.ReportedID, RuleKeep)
}

func TestSealedImageWithoutMachineIdentity(t *testing.T) {
	m := newMachine(t)
	m.cloudInitRan("template")
	if err := MarkSealed(m.root, t0); err != nil {
		t.Fatal(err)
	}
	expect(t, m.boot(vmware("", "template")), "template", RulePassThrough)
	if _, err := os.Lstat(m.root.Path(SealedPath)); !os.IsNotExist(err) {
		t.Errorf("sealed marker not consumed (%v)", err)
	}
}

// A marker that cannot be parsed still means sealed; a state file that
// cannot be parsed does not stop the first boot of a sealed clone.
func TestSealedImageUnreadableMarkerAndState(t *testing.T) {
	m := newMachine(t)
	writeTestFile(t, m.root.Path(SealedPath), "garbage")
	writeTestFile(t, m.root.Path(StatePath), "{garbage")
	d, err := Decide(Input{Root: string(m.root), Source: "vmware", ReportedID: "vm-1", MachineID: uuidA, Now: t0})
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	expect(t, d, "vm-1", RuleFirstRun)
	if !strings.Contains(d.Explanation, "sealed (seedkeeper image seal) at an unknown time") {
		t.Errorf("explanation: %s", d.Explanation)
	}
}
