package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

const (
	bootA = "9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e44"
	bootB = "0d3e5a71-c2b4-4f08-a9e6-7b1f3c5d8a20"
)

func setBootID(t *testing.T, root, id string) {
	t.Helper()
	p := filepath.Join(root, agent.BootIDPath)
	if id == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
}

func TestParseBootID(t *testing.T) {
	for in, want := range map[string]string{
		bootA + "\n":                  bootA,
		bootA:                         bootA,
		strings.ToUpper(bootA) + "\n": bootA,
	} {
		if got, err := agent.ParseBootID([]byte(in)); err != nil || got != want {
			t.Errorf("ParseBootID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                                     "0 bytes",
		bootA + "\n\n":                         "37 bytes",
		"9b1c4f2e_77a0-4d5c-8e3b-2f6a1d0c9e44": "byte 9 is not the dash",
		"9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e4g": "byte 36 is not a hex digit",
		"9b1c4f2e-77a0-4d5c-8e3b-2f6a1d0c9e4\x1b": "byte 36 is not a hex digit",
	} {
		_, err := agent.ParseBootID([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("ParseBootID(%q) err = %v, want %q", in, err, want)
		}
	}
}

func FuzzParseBootID(f *testing.F) {
	for _, s := range []string{bootA + "\n", bootB, "", "not-a-uuid", strings.Repeat("-", 36)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := agent.ParseBootID(b)
		if err != nil {
			if id != "" {
				t.Errorf("an error and an ID %q", id)
			}
			return
		}
		if len(id) != 36 || id != strings.ToLower(id) || strings.Count(id, "-") != 4 {
			t.Errorf("accepted %q as %q", b, id)
		}
		if again, err := agent.ParseBootID([]byte(id)); err != nil || again != id {
			t.Errorf("the parsed ID %q does not parse to itself: %q, %v", id, again, err)
		}
	})
}

// Boot records the ID of the boot it ran in; the record says whether it
// is the running boot's.
func TestBootRecordsBootID(t *testing.T) {
	root := kvmRoot(t, nil)
	setBootID(t, root, bootA)
	st, _ := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{})
	if st.BootID != bootA {
		t.Errorf("boot_id %q, want %q", st.BootID, bootA)
	}
	saved, err := agent.ReadStatus(sysroot.Root(root))
	if err != nil || saved.BootID != bootA {
		t.Fatalf("saved status boot_id %q (%v)", saved.BootID, err)
	}
	for _, c := range []struct {
		current     string
		same, known bool
	}{{bootA, true, true}, {bootB, false, true}, {"", true, false}} {
		if same, known := saved.ThisBoot(c.current); same != c.same || known != c.known {
			t.Errorf("ThisBoot(%q) = %v, %v; want %v, %v", c.current, same, known, c.same, c.known)
		}
	}
	// A record without a boot ID (an earlier version, a root without
	// /proc) cannot be told apart: it counts as this boot's, as before.
	saved.BootID = ""
	if same, known := saved.ThisBoot(bootB); !same || known {
		t.Errorf("ThisBoot without a recorded ID = %v, %v", same, known)
	}
}

// A boot without /proc under its root records no boot ID.
func TestBootWithoutBootID(t *testing.T) {
	root := kvmRoot(t, nil)
	st, _ := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{})
	if st.BootID != "" || agent.CurrentBootID(sysroot.Root(root)) != "" {
		t.Errorf("boot_id %q without a /proc", st.BootID)
	}
	setBootID(t, root, "garbage")
	if id := agent.CurrentBootID(sysroot.Root(root)); id != "" {
		t.Errorf("CurrentBootID of a malformed boot_id = %q", id)
	}
}

// The watch command compared what it found with an earlier boot's decision
// when seedkeeper-boot had not run in this boot. An earlier boot's record
// is no decision for this one.
func TestLastBootIsThisBootsOnly(t *testing.T) {
	root := kvmRoot(t, map[string]string{
		"var/lib/cloud/seed/nocloud/meta-data": "instance-id: iid-agent\n",
		"var/lib/cloud/seed/nocloud/user-data": "#cloud-config\n",
	})
	setBootID(t, root, bootA)
	if _, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{Network: agent.NetworkPlan}); err != nil {
		t.Fatal(err)
	}
	if b := agent.LastBoot(sysroot.Root(root)); !b.Ran || b.Source != datasource.SourceNoCloud {
		t.Errorf("LastBoot in the boot that decided: %+v", b)
	}
	if msg := agent.LateSource(agent.Env{Root: sysroot.Root(root)}); msg != "" {
		t.Errorf("LateSource in the boot that decided: %q", msg)
	}
	setBootID(t, root, bootB) // the machine rebooted; boot has not run yet
	if b := agent.LastBoot(sysroot.Root(root)); b.Ran {
		t.Errorf("LastBoot after a reboot: %+v, want no decision in this boot", b)
	}
	if msg := agent.LateSource(agent.Env{Root: sysroot.Root(root)}); !strings.Contains(msg, "seedkeeper boot has not decided on a source in this boot") {
		t.Errorf("LateSource after a reboot: %q", msg)
	}
}

// Under a root whose state directory is a link to a host directory, the
// status read is the root's own (resolved inside it), never the host's.
func TestReadStatusStaysInRoot(t *testing.T) {
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "status.json"), []byte(`{"source":"host-secret"}`+"\n"), 0o600)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "var/lib"), 0o755)
	if err := os.Symlink(host, filepath.Join(root, "var/lib/seedkeeper")); err != nil {
		t.Fatal(err)
	}
	st, err := agent.ReadStatus(sysroot.Root(root))
	if err == nil {
		t.Errorf("read the host's status through a link: %+v", st)
	}
	os.MkdirAll(filepath.Join(root, "proc/sys/kernel"), 0o755)
	os.WriteFile(filepath.Join(host, "boot_id"), []byte("0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9\n"), 0o644)
	os.Symlink(host, filepath.Join(root, "proc/sys/kernel/random"))
	if id := agent.CurrentBootID(sysroot.Root(root)); id != "" {
		t.Errorf("read the host's boot ID through a link: %q", id)
	}
}

// SaveStatus under a root whose /var/lib is a link to a host directory
// writes nothing there.
func TestSaveStatusStaysInRoot(t *testing.T) {
	host := t.TempDir()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "var"), 0o755)
	if err := os.Symlink(host, filepath.Join(root, "var/lib")); err != nil {
		t.Fatal(err)
	}
	if err := agent.SaveStatus(sysroot.Root(root), &agent.Status{}); err == nil {
		t.Errorf("SaveStatus through a link out of the root succeeded")
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("the status was written on the host: %v", ents)
	}
}
