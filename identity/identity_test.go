package identity

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

var update = flag.Bool("update", false, "rewrite the testdata fixtures")

const (
	uuidA = "4c4c4544-0042-3510-8052-b4c04f4e3332"
	uuidB = "9a1b7c2e-5d3f-4e8a-b6c1-0f2e3d4c5b6a"
)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// machine is one VM disk: a root with the state file and cloud-init's data.
type machine struct {
	t    *testing.T
	root sysroot.Root
	now  time.Time
}

func newMachine(t *testing.T) *machine {
	return &machine{t: t, root: sysroot.Root(t.TempDir()), now: t0}
}

// cloudInitRan records that cloud-init ran with id.
func (m *machine) cloudInitRan(id string) {
	m.t.Helper()
	p := m.root.Path(CloudInitIDPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// boot decides for in one day after the previous boot.
func (m *machine) boot(in Input) Decision {
	m.t.Helper()
	m.now = m.now.Add(24 * time.Hour)
	in.Root, in.Now = string(m.root), m.now
	d, err := Decide(in)
	if err != nil {
		m.t.Fatalf("Decide: %v", err)
	}
	if d.InstanceID == "" || d.Explanation == "" || d.RuleName != d.Rule.String() {
		m.t.Fatalf("incomplete decision: %+v", d)
	}
	return d
}

// copyTo copies the disk to a new machine (a clone).
func (m *machine) copyTo(t *testing.T) *machine {
	c := newMachine(t)
	c.now = m.now
	for _, p := range []string{StatePath, CloudInitIDPath} {
		data, err := os.ReadFile(m.root.Path(p))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(c.root.Path(p)), 0o755)
		if err := os.WriteFile(c.root.Path(p), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func nocloud(machineID string, ud, nc []byte, reported string) Input {
	return Input{Source: datasource.SourceNoCloud, ReportedID: reported, MachineID: machineID, UserData: ud, NetworkConfig: nc}
}

func proxmoxInput(machineID string, vm proxmoxVM, host proxmoxHost) Input {
	ud, nc, _ := vm.seed(host)
	return nocloud(machineID, ud, nc, DerivedID(ud, nc))
}

func vmware(machineID, id string) Input {
	return Input{Source: datasource.SourceVMware, ReportedID: id, MachineID: machineID}
}

func expect(t *testing.T, d Decision, id string, rule Rule) {
	t.Helper()
	if d.InstanceID != id || d.Rule != rule {
		t.Fatalf("decision = %q by rule %d (%s), want %q by rule %d (%s)\n%s", d.InstanceID, d.Rule, d.Rule, id, rule, rule, d.Explanation)
	}
}

var (
	web1 = proxmoxVM{
		Name: "web1.example.lan", User: "debian",
		SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx web@admin"},
		NICs:    []proxmoxNIC{{Index: 0, MAC: "BC:24:11:AA:BB:01", IP: "192.0.2.10/24", GW: "192.0.2.1"}},
	}
	hostA = proxmoxHost{Nameservers: []string{"192.0.2.53", "192.0.2.54"}, Search: []string{"example.lan"}}
	hostB = proxmoxHost{Nameservers: []string{"198.51.100.53"}, Search: []string{"dc2.example.lan"}}
)

// TestProxmoxSeedFixture checks the seed generator against the fixture
// and the fixture's instance ID against sha1sum's arithmetic.
func TestProxmoxSeedFixture(t *testing.T) {
	ud, nc, md := web1.seed(hostA)
	dir := filepath.Join("..", "testdata", "identity", "proxmox-web1")
	files := map[string][]byte{"user-data": ud, "network-config": nc, "meta-data": md, "vendor-data": nil}
	if *update {
		os.MkdirAll(dir, 0o755)
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: fixture differs from the generator:\n%s\nwant\n%s", name, got, want)
		}
	}
	// Computed independently with: cat user-data network-config | sha1sum
	const want = "instance-id: 7546db88024ce241dfedc87840dcb2324dc66569\n"
	if *update {
		t.Logf("meta-data: %s", md)
		return
	}
	if string(md) != want {
		t.Errorf("meta-data = %q, want %q", md, want)
	}
}

func TestClassify(t *testing.T) {
	ud, nc, _ := web1.seed(hostA)
	h := DerivedID(ud, nc)
	for _, tc := range []struct {
		name string
		in   Input
		want Kind
	}{
		{"proxmox hash", nocloud(uuidA, ud, nc, h), KindDerived},
		{"proxmox hash upper case", nocloud(uuidA, ud, nc, strings.ToUpper(h)), KindDerived},
		{"hash of other bytes", nocloud(uuidA, ud, nil, h), KindExplicit},
		{"cicustom meta= id", nocloud(uuidA, ud, nc, "vm-100"), KindExplicit},
		{"nocloud default flag", Input{Source: datasource.SourceNoCloud, ReportedID: "nocloud", Defaulted: true}, KindDefault},
		{"nocloud literal", nocloud(uuidA, ud, nc, "nocloud"), KindDefault},
		{"vmware", vmware(uuidA, h), KindExplicit},
		{"smartos", Input{Source: datasource.SourceSmartOS, ReportedID: uuidA}, KindExplicit},
	} {
		if got := Classify(tc.in); got != tc.want {
			t.Errorf("%s: Classify = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestMachineIdentity(t *testing.T) {
	for in, want := range map[string]string{
		" 4C4C4544-0042-3510-8052-B4C04F4E3332\n": uuidA,
		"00000000-0000-0000-0000-000000000000":    "",
		"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF":    "",
		"":                                        "",
		"sdc-uuid-like-value":                     "sdc-uuid-like-value",
	} {
		if got := MachineIdentity(in); got != want {
			t.Errorf("MachineIdentity(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFirstRunPinsReportedID(t *testing.T) {
	m := newMachine(t)
	in := proxmoxInput(uuidA, web1, hostA)
	d := m.boot(in)
	expect(t, d, in.ReportedID, RuleFirstRun)
	if !d.Changed || d.PinnedID != in.ReportedID || !d.PinnedAt.Equal(m.now) {
		t.Errorf("first run: %+v", d)
	}
	st, err := Load(m.root)
	if err != nil || st == nil {
		t.Fatalf("Load = %v, %v", st, err)
	}
	if st.Version != 1 || st.InstanceID != in.ReportedID || st.MachineID != uuidA || st.Rule != RuleFirstRun ||
		st.RuleName != "first-run" || st.Source != "nocloud" || !st.PinnedAt.Equal(m.now) || st.Last == nil {
		t.Errorf("state = %+v", st)
	}
	fi, err := os.Stat(m.root.Path(StatePath))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("state file mode: %v %v", fi.Mode(), err)
	}
}

// Rule 1, and the Proxmox resolver regression: with DNS on "use host
// settings" the host's resolv.conf is in network-config, so a cold start
// on a node with other resolvers changes the SHA-1 instance ID
// (docs/cloud-init.md, "Proxmox VE"); the same machine must keep its ID.
func TestRule1ProxmoxResolverChangeKeepsID(t *testing.T) {
	m := newMachine(t)
	before := proxmoxInput(uuidA, web1, hostA)
	after := proxmoxInput(uuidA, web1, hostB)
	if before.ReportedID == after.ReportedID {
		t.Fatal("test setup: the resolver change did not change the Proxmox hash")
	}
	expect(t, m.boot(before), before.ReportedID, RuleFirstRun)
	d := m.boot(after)
	expect(t, d, before.ReportedID, RuleKeep)
	if d.Changed || d.ReportedKind != KindDerived || d.PreviousID != before.ReportedID {
		t.Errorf("keep: %+v", d)
	}
	for _, s := range []string{after.ReportedID, "SHA-1", "rule 1, keep", uuidA} {
		if !strings.Contains(d.Explanation, s) {
			t.Errorf("explanation lacks %q: %s", s, d.Explanation)
		}
	}
	// And back: still the same.
	expect(t, m.boot(before), before.ReportedID, RuleKeep)
	// A config edit (new user) is a derived change too.
	edited := web1
	edited.User = "ops"
	expect(t, m.boot(proxmoxInput(uuidA, edited, hostB)), before.ReportedID, RuleKeep)
	st, _ := Load(m.root)
	if st.Rule != RuleFirstRun || !st.PinnedAt.Equal(t0.Add(24*time.Hour)) || !st.ConfirmedAt.Equal(m.now) {
		t.Errorf("state after keeps: %+v", st)
	}
}

// Rule 2: an explicit ID that differs from the pin is a new instance.
func TestRule2ExplicitIDHonoured(t *testing.T) {
	t.Run("proxmox cicustom meta", func(t *testing.T) {
		m := newMachine(t)
		ud, nc, _ := web1.seed(hostA)
		h := DerivedID(ud, nc)
		expect(t, m.boot(nocloud(uuidA, ud, nc, h)), h, RuleFirstRun)
		// The operator sets cicustom meta= with instance-id: vm-100.
		d := m.boot(nocloud(uuidA, ud, nc, "vm-100"))
		expect(t, d, "vm-100", RuleExplicit)
		if !d.Changed || d.PreviousID != h || d.PinnedID != "vm-100" {
			t.Errorf("explicit: %+v", d)
		}
		// It stays while the snippet says so, whatever the resolvers do.
		ud2, nc2, _ := web1.seed(hostB)
		expect(t, m.boot(nocloud(uuidA, ud2, nc2, "vm-100")), "vm-100", RuleKeep)
		// A new snippet ID is another new instance.
		expect(t, m.boot(nocloud(uuidA, ud2, nc2, "vm-100-b")), "vm-100-b", RuleExplicit)
	})
	t.Run("explicit equal to pin", func(t *testing.T) {
		// Pinning the current hash with cicustom meta= is the documented
		// Proxmox way to freeze the ID: nothing changes.
		m := newMachine(t)
		in := proxmoxInput(uuidA, web1, hostA)
		expect(t, m.boot(in), in.ReportedID, RuleFirstRun)
		ud, nc, _ := web1.seed(hostB)
		d := m.boot(nocloud(uuidA, ud, nc, in.ReportedID))
		expect(t, d, in.ReportedID, RuleKeep)
		if d.Changed || d.ReportedKind != KindExplicit || !strings.Contains(d.Explanation, "the pinned ID itself") {
			t.Errorf("explicit equal to pin: %+v", d)
		}
	})
	t.Run("vmware", func(t *testing.T) {
		m := newMachine(t)
		expect(t, m.boot(vmware(uuidA, "i-1")), "i-1", RuleFirstRun)
		expect(t, m.boot(vmware(uuidA, "i-1")), "i-1", RuleKeep)
		expect(t, m.boot(vmware(uuidA, "i-2")), "i-2", RuleExplicit)
	})
}

// Rule 3: installing seedkeeper into a running fleet changes nothing, even
// when the Proxmox seed was regenerated since cloud-init last ran.
func TestRule3ExistingVMInstallKeepsCloudInitID(t *testing.T) {
	m := newMachine(t)
	old := proxmoxInput(uuidA, web1, hostA)
	m.cloudInitRan(old.ReportedID)
	now := proxmoxInput(uuidA, web1, hostB) // migrated since, other resolvers
	d := m.boot(now)
	expect(t, d, old.ReportedID, RuleAdopt)
	if !d.Changed || d.PinnedID != old.ReportedID {
		t.Errorf("adopt: %+v", d)
	}
	expect(t, m.boot(now), old.ReportedID, RuleKeep)

	// An explicit source that reports cloud-init's own ID: adopted, kept.
	v := newMachine(t)
	v.cloudInitRan("vm-42")
	expect(t, v.boot(vmware(uuidA, "vm-42")), "vm-42", RuleAdopt)
	expect(t, v.boot(vmware(uuidA, "vm-42")), "vm-42", RuleKeep)
	expect(t, v.boot(vmware(uuidA, "vm-43")), "vm-43", RuleExplicit)
}

// An explicit ID that differs from the one cloud-init ran with is a new
// instance, as cloud-init itself would decide: adopting cloud-init's ID
// would let every clone of a template that ran cloud-init (and was not
// cleaned) keep the template's identity and SSH host keys.
func TestTemplateCloneWithExplicitIDIsNewInstance(t *testing.T) {
	clone := newMachine(t)
	clone.cloudInitRan("template-uuid")
	expect(t, clone.boot(vmware(uuidB, "clone-uuid")), "clone-uuid", RuleExplicit)
	expect(t, clone.boot(vmware(uuidB, "clone-uuid")), "clone-uuid", RuleKeep)
}

// Rule 4: a Proxmox clone gets a new product_uuid and new MACs, so a new
// ID and new SSH host keys.
func TestRule4ProxmoxCloneGetsNewID(t *testing.T) {
	m := newMachine(t)
	in := proxmoxInput(uuidA, web1, hostA)
	m.cloudInitRan(in.ReportedID)
	expect(t, m.boot(in), in.ReportedID, RuleAdopt)

	c := m.copyTo(t)
	clone := web1
	clone.Name = "web2.example.lan"
	clone.NICs = []proxmoxNIC{{Index: 0, MAC: "BC:24:11:CC:DD:02", IP: "192.0.2.11/24", GW: "192.0.2.1"}}
	cin := proxmoxInput(uuidB, clone, hostA)
	d := c.boot(cin)
	expect(t, d, cin.ReportedID, RuleNewMachine)
	if !d.Changed || d.PreviousID != in.ReportedID || !strings.Contains(d.Explanation, uuidA) {
		t.Errorf("clone: %+v", d)
	}
	// The clone then keeps its own pin.
	expect(t, c.boot(proxmoxInput(uuidB, clone, hostB)), cin.ReportedID, RuleKeep)
	// And the original is unaffected.
	expect(t, m.boot(proxmoxInput(uuidA, web1, hostB)), in.ReportedID, RuleKeep)
}

// Rule 4 when the clone reports the very ID the original had: the same
// config hash, a template's fixed explicit ID, or NoCloud's default.
func TestRule4CloneWithSameReportedID(t *testing.T) {
	ud, nc, _ := web1.seed(hostA)
	for _, tc := range []struct {
		name string
		in   func(machineID string) Input
	}{
		{"derived", func(id string) Input { return nocloud(id, ud, nc, DerivedID(ud, nc)) }},
		{"explicit", func(id string) Input { return vmware(id, "template-1") }},
		{"nocloud default", func(id string) Input {
			in := nocloud(id, ud, nc, NoCloudDefaultID)
			in.Defaulted = true
			return in
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			orig := m.boot(tc.in(uuidA))
			m.cloudInitRan(orig.InstanceID)
			c := m.copyTo(t)
			d := c.boot(tc.in(uuidB))
			want := orig.InstanceID + "-m" + DerivedID([]byte(uuidB), nil)[:8]
			expect(t, d, want, RuleNewMachine)
			// Stable afterwards, not a new instance every boot.
			expect(t, c.boot(tc.in(uuidB)), want, RuleKeep)
		})
	}
}

// Rule 5: without a machine identity the reported ID passes through.
func TestRule5NoMachineIdentityPassesThrough(t *testing.T) {
	for _, mid := range []string{"", "00000000-0000-0000-0000-000000000000"} {
		m := newMachine(t)
		a := proxmoxInput(mid, web1, hostA)
		b := proxmoxInput(mid, web1, hostB)
		d := m.boot(a)
		expect(t, d, a.ReportedID, RulePassThrough)
		if d.Changed || d.PinnedID != "" || !strings.Contains(d.Explanation, "no machine identity") {
			t.Errorf("pass-through: %+v", d)
		}
		expect(t, m.boot(b), b.ReportedID, RulePassThrough)
		st, err := Load(m.root)
		if err != nil || st == nil || st.InstanceID != "" || st.Last == nil || st.Last.Rule != RulePassThrough {
			t.Errorf("state after pass-through: %+v, %v", st, err)
		}
	}
	// A pin made earlier is left alone and used again once the identity
	// is readable.
	m := newMachine(t)
	a := proxmoxInput(uuidA, web1, hostA)
	expect(t, m.boot(a), a.ReportedID, RuleFirstRun)
	b := proxmoxInput("", web1, hostB)
	d := m.boot(b)
	expect(t, d, b.ReportedID, RulePassThrough)
	if !strings.Contains(d.Explanation, a.ReportedID) {
		t.Errorf("explanation does not name the untouched pin: %s", d.Explanation)
	}
	b.MachineID = uuidA
	expect(t, m.boot(b), a.ReportedID, RuleKeep)
}

func TestResetGivesNewIDOnce(t *testing.T) {
	m := newMachine(t)
	in := proxmoxInput(uuidA, web1, hostA)
	expect(t, m.boot(in), in.ReportedID, RuleFirstRun)

	st, err := Reset(string(m.root), m.now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reset == nil || len(st.Reset.Suffix) != 8 || st.Reset.From != in.ReportedID {
		t.Fatalf("reset state: %+v", st.Reset)
	}
	again, err := Reset(string(m.root), m.now.Add(time.Hour))
	if err != nil || *again.Reset != *st.Reset {
		t.Fatalf("second reset changed the request: %+v, %v", again.Reset, err)
	}

	d := m.boot(in) // the reported ID has not changed
	want := in.ReportedID + "-r" + st.Reset.Suffix
	expect(t, d, want, RuleReset)
	if !d.Changed || d.PreviousID != in.ReportedID {
		t.Errorf("reset: %+v", d)
	}
	expect(t, m.boot(in), want, RuleKeep)
	expect(t, m.boot(proxmoxInput(uuidA, web1, hostB)), want, RuleKeep)
	if st, _ := Load(m.root); st.Reset != nil || st.Rule != RuleReset {
		t.Errorf("reset not consumed: %+v", st)
	}

	// An explicit source: the reset ID must stay after the reset boot.
	v := newMachine(t)
	expect(t, v.boot(vmware(uuidA, "vm-7")), "vm-7", RuleFirstRun)
	st, err = Reset(string(v.root), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want = "vm-7-r" + st.Reset.Suffix
	expect(t, v.boot(vmware(uuidA, "vm-7")), want, RuleReset)
	expect(t, v.boot(vmware(uuidA, "vm-7")), want, RuleKeep)
}

func TestResetEdgeCases(t *testing.T) {
	t.Run("before the first run", func(t *testing.T) {
		m := newMachine(t)
		m.cloudInitRan("vm-1")
		st, err := Reset(string(m.root), m.now)
		if err != nil {
			t.Fatal(err)
		}
		d := m.boot(vmware(uuidA, "vm-1"))
		expect(t, d, "vm-1-r"+st.Reset.Suffix, RuleReset)
	})
	t.Run("no machine identity keeps it pending", func(t *testing.T) {
		m := newMachine(t)
		expect(t, m.boot(vmware(uuidA, "vm-1")), "vm-1", RuleFirstRun)
		st, _ := Reset(string(m.root), m.now)
		d := m.boot(vmware("", "vm-1"))
		expect(t, d, "vm-1", RulePassThrough)
		if !strings.Contains(d.Explanation, "reset stays pending") {
			t.Errorf("explanation: %s", d.Explanation)
		}
		expect(t, m.boot(vmware(uuidA, "vm-1")), "vm-1-r"+st.Reset.Suffix, RuleReset)
	})
	t.Run("reported ID already carries the suffix", func(t *testing.T) {
		m := newMachine(t)
		st, _ := Reset(string(m.root), m.now)
		id := "vm-1-r" + st.Reset.Suffix
		m.cloudInitRan(id + "-r" + st.Reset.Suffix)
		d := m.boot(vmware(uuidA, "vm-1"))
		if d.InstanceID == id+"-r"+st.Reset.Suffix || d.Rule != RuleReset {
			t.Fatalf("reset ID equals cloud-init's: %+v", d)
		}
	})
	t.Run("clone consumes the reset", func(t *testing.T) {
		m := newMachine(t)
		expect(t, m.boot(vmware(uuidA, "vm-1")), "vm-1", RuleFirstRun)
		Reset(string(m.root), m.now)
		c := m.copyTo(t)
		expect(t, c.boot(vmware(uuidB, "vm-2")), "vm-2", RuleNewMachine)
		if st, _ := Load(c.root); st.Reset != nil {
			t.Errorf("reset still pending on the clone: %+v", st.Reset)
		}
	})
}

func TestBadStateKeepsCloudInitID(t *testing.T) {
	for name, content := range map[string]string{
		"truncated":   `{"version": 1, "instance_id": "ab`,
		"not json":    "garbage\n",
		"version":     `{"version": 2, "instance_id": "x", "machine_id": "m", "rule": 1}`,
		"no machine":  `{"version": 1, "instance_id": "x", "rule": 1}`,
		"bad rule":    `{"version": 1, "instance_id": "x", "machine_id": "m", "rule": 8}`,
		"empty file":  "",
		"two objects": `{"version": 1}{"version": 1}`,
	} {
		t.Run(name, func(t *testing.T) {
			m := newMachine(t)
			m.cloudInitRan("ci-id")
			path := m.root.Path(StatePath)
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(content), 0o644)
			in := vmware(uuidA, "reported")
			in.Root = string(m.root)
			d, err := Decide(in)
			if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want ErrBadState naming %s", err, path)
			}
			expect(t, d, "ci-id", RuleBadState)
			if !strings.Contains(d.Explanation, "keeps cloud-init's current ID") {
				t.Errorf("explanation: %s", d.Explanation)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Errorf("the unreadable state file was changed to %q", got)
			}
			if _, err := Reset(string(m.root), time.Time{}); !errors.Is(err, ErrBadState) {
				t.Errorf("Reset on a bad state: %v", err)
			}
		})
	}
	// Without cloud-init history the reported ID passes through.
	m := newMachine(t)
	path := m.root.Path(StatePath)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("{"), 0o644)
	d, err := Decide(Input{Root: string(m.root), Source: "vmware", ReportedID: "r", MachineID: uuidA})
	if !errors.Is(err, ErrBadState) {
		t.Fatal(err)
	}
	expect(t, d, "r", RuleBadState)
	// An unreadable state file (a directory in its place) is bad too.
	m = newMachine(t)
	os.MkdirAll(m.root.Path(StatePath), 0o755)
	if _, err := Decide(Input{Root: string(m.root), ReportedID: "r", MachineID: uuidA}); !errors.Is(err, ErrBadState) {
		t.Fatalf("state path is a directory: %v", err)
	}
}

func TestDecideRequiresReportedID(t *testing.T) {
	if _, err := Decide(Input{Root: t.TempDir(), MachineID: uuidA}); err == nil {
		t.Fatal("no error for an empty reported ID")
	}
}

func TestStateIsChangeOnlyAndHasNoSecrets(t *testing.T) {
	m := newMachine(t)
	in := proxmoxInput(uuidA, web1, hostA)
	in.Root, in.Now = string(m.root), t0
	for range 2 { // first run, then the first keep
		if _, err := Decide(in); err != nil {
			t.Fatal(err)
		}
	}
	path := m.root.Path(StatePath)
	fi1, _ := os.Stat(path)
	if _, err := Decide(in); err != nil {
		t.Fatal(err)
	}
	fi2, _ := os.Stat(path)
	if !os.SameFile(fi1, fi2) {
		t.Error("a decision with the same inputs and time rewrote the state file")
	}
	data, _ := os.ReadFile(path)
	for _, secret := range []string{"ssh-ed25519", "#cloud-config", "192.0.2"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("state file contains %q:\n%s", secret, data)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil || raw["version"] != float64(1) {
		t.Errorf("state JSON: %v %v", raw, err)
	}
}

func TestFromMetadata(t *testing.T) {
	md := &datasource.Metadata{Source: "nocloud", InstanceID: "nocloud", InstanceIDDefaulted: true,
		MachineID: uuidA, UserData: []byte("u"), NetworkConfigRaw: []byte("n")}
	in := FromMetadata("/r", md)
	if in.Root != "/r" || in.ReportedID != "nocloud" || !in.Defaulted || in.MachineID != uuidA ||
		string(in.UserData) != "u" || string(in.NetworkConfig) != "n" || Classify(in) != KindDefault {
		t.Errorf("FromMetadata = %+v", in)
	}
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"version":1,"instance_id":"a","machine_id":"m","rule":1}`))
	f.Add([]byte(`{"version":1,"reset":{"requested_at":"2026-01-01T00:00:00Z","suffix":"abcd0123"}}`))
	f.Add([]byte(`{"version":1,"last":{"at":"2026-01-01T00:00:00Z","rule":5}}`))
	f.Add([]byte(`{"version":1,"pinned_at":"not a time"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseState(data)
		if err != nil {
			return
		}
		// What parses must survive a save and a reload unchanged.
		root := sysroot.Root(t.TempDir())
		if _, err := Save(root, st); err != nil {
			t.Fatal(err)
		}
		back, err := Load(root)
		if err != nil {
			t.Fatalf("reloading a saved state: %v", err)
		}
		a, _ := json.Marshal(st)
		b, _ := json.Marshal(back)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the state:\n%s\n%s", a, b)
		}
	})
}

// A boot that decides exactly as the one before rewrites no file (the
// golden-image guest's unchanged-boot check found identity.json rewritten
// on every boot for its confirmed_at alone).
func TestUnchangedDecisionLeavesStateFile(t *testing.T) {
	m := newMachine(t)
	in := proxmoxInput(uuidA, web1, hostA)
	expect(t, m.boot(in), in.ReportedID, RuleFirstRun)
	expect(t, m.boot(in), in.ReportedID, RuleKeep) // records the keep
	path := m.root.Path(StatePath)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi1, _ := os.Stat(path)

	expect(t, m.boot(in), in.ReportedID, RuleKeep)
	fi2, _ := os.Stat(path)
	after, _ := os.ReadFile(path)
	if string(after) != string(before) || !os.SameFile(fi1, fi2) || !fi1.ModTime().Equal(fi2.ModTime()) {
		t.Errorf("an unchanged boot rewrote %s:\n%s\nthen\n%s", path, before, after)
	}

	// Other input (a resolver change: a new derived ID) is recorded.
	expect(t, m.boot(proxmoxInput(uuidA, web1, hostB)), in.ReportedID, RuleKeep)
	if changed, _ := os.ReadFile(path); string(changed) == string(after) {
		t.Error("a decision on a new reported ID left the state file as it was")
	}
}
