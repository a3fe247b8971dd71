package datasource

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/linkaddr"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// keepAndReboot keeps the spec md was read from as a boot that applied
// it does, then takes the spec out of /run (a reboot), and returns the
// kept file's bytes.
func keepAndReboot(t *testing.T, s *stubVMX, md *Metadata) []byte {
	t.Helper()
	h := &sourceduty.Host{Root: sysroot.Root(s.root), Live: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Links: linkaddr.Links{}}
	vs := &sourceduty.VMwareStatus{}
	keepIMC(h, vs, md.VMwareIMC)
	if len(vs.Notes) > 0 {
		t.Fatalf("keeping: %q", vs.Notes)
	}
	if err := os.RemoveAll(sysroot.Root(s.root).Path(iMCDir)); err != nil {
		t.Fatal(err)
	}
	p := sysroot.Root(s.root).Path(paths.VMwareIMCSpec)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kept spec mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A customized VM keeps its customization: after the boot that applied a
// spec, a boot that finds no spec in /run and empty guestinfo reads the
// kept copy and gets the same instance ID, hostname, network and data,
// without the password, marked as the kept spec.
func TestReadVMwareIMCKept(t *testing.T) {
	for _, spec := range []string{"dhcp-2nic-instance-id.cfg", "static-primary.cfg", "dhcp-2nic.cfg", "cloudinit"} {
		t.Run(spec, func(t *testing.T) {
			s := imcRoot(t, spec)
			first := s.mustRead()
			kept := keepAndReboot(t, s, first)
			if first.VMwareIMC.Password {
				for _, secret := range []string{"-PASS", "cjAwdC1zM2NyZXQK", "r00t-s3cret"} {
					if bytes.Contains(kept, []byte(secret)) {
						t.Errorf("the kept spec holds %q", secret)
					}
				}
			}
			second, err := s.read()
			if err != nil {
				t.Fatalf("the boot after the customization: %v", err)
			}
			if second.Source != SourceVMware || second.Origin.Transport != transportIMC || len(second.Origin.Items) != 1 || second.Origin.Items[0] != paths.VMwareIMCSpec {
				t.Errorf("origin %s %+v", second.Source, second.Origin)
			}
			if !second.VMwareIMC.Kept || second.VMwareIMC.AppliedAt == "" || second.VMwareIMC.MarkerID != first.VMwareIMC.MarkerID || second.VMwareIMC.Password {
				t.Errorf("spec %+v", second.VMwareIMC)
			}
			if second.InstanceID != first.InstanceID || second.InstanceIDDefaulted != first.InstanceIDDefaulted || second.MachineID != first.MachineID {
				t.Errorf("identity %q (defaulted %v, machine %q), first boot %q (%v, %q)", second.InstanceID, second.InstanceIDDefaulted, second.MachineID, first.InstanceID, first.InstanceIDDefaulted, first.MachineID)
			}
			if second.Hostname != first.Hostname || first.Hostname == "" {
				t.Errorf("hostname %q, first boot %q", second.Hostname, first.Hostname)
			}
			if !bytes.Equal(second.NetworkConfigRaw, first.NetworkConfigRaw) {
				t.Errorf("network\n%s\nfirst boot\n%s", second.NetworkConfigRaw, first.NetworkConfigRaw)
			}
			if (first.NetworkConfigRaw != nil) != (second.Network != nil) {
				t.Errorf("parsed network %v", second.Network)
			}
			if !bytes.Equal(second.UserData, first.UserData) {
				t.Errorf("user-data %q, first boot %q", second.UserData, first.UserData)
			}
			dropIMCPassword(first)
			if !bytes.Equal(second.VendorData, first.VendorData) {
				t.Errorf("vendor-data %q, first boot without the password %q", second.VendorData, first.VendorData)
			}
			if !reflect.DeepEqual(second.MetaData, first.MetaData) {
				t.Errorf("meta-data %v, first boot %v", second.MetaData, first.MetaData)
			}
		})
	}
}

// testTime is when the kept specs of the tests were applied.
var testTime = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// Guestinfo with data and a spec in /run both come before the kept spec;
// a new spec (another marker) replaces it; the same spec applied again
// leaves it as it was, with the time it was first applied.
func TestReadVMwareIMCKeptPrecedence(t *testing.T) {
	s := imcRoot(t, "dhcp-2nic-instance-id.cfg")
	kept := keepAndReboot(t, s, s.mustRead())

	s.set("userdata", "#cloud-config\n")
	if md := s.mustRead(); md.Origin.Transport != ToolRPCTool || md.VMwareIMC != nil {
		t.Errorf("transport %q, IMC %+v: guestinfo must win over the kept spec", md.Origin.Transport, md.VMwareIMC)
	}
	s.set("userdata", "")

	// The same spec again: read from /run, not the kept copy; kept as is.
	s2 := imcRoot(t, "dhcp-2nic-instance-id.cfg")
	copyKept(t, s, s2)
	md := s2.mustRead()
	if md.VMwareIMC.Kept || md.Origin.Items[0] != imcSpecPath {
		t.Errorf("a spec in /run must win over the kept one: %+v %+v", md.VMwareIMC, md.Origin)
	}
	before, err := os.ReadFile(sysroot.Root(s2.root).Path(paths.VMwareIMCSpec))
	if err != nil {
		t.Fatal(err)
	}
	if again := keepAndReboot(t, s2, md); !bytes.Equal(again, before) || bytes.Equal(before, kept) {
		t.Errorf("the same spec kept again:\n%s\nwas\n%s", again, before)
	}
	if md := s2.mustRead(); md.VMwareIMC.AppliedAt != testTime.Format(time.RFC3339) {
		t.Errorf("applied at %q, want the first time", md.VMwareIMC.AppliedAt)
	}

	// A new customization replaces it.
	s3 := imcRoot(t, "static-primary.cfg")
	copyKept(t, s, s3)
	first := s3.mustRead()
	if first.InstanceID != "app01-clone-7" {
		t.Fatalf("instance ID %q", first.InstanceID)
	}
	keepAndReboot(t, s3, first)
	if md := s3.mustRead(); !md.VMwareIMC.Kept || md.InstanceID != "app01-clone-7" || md.VMwareIMC.AppliedAt == testTime.Format(time.RFC3339) {
		t.Errorf("after a new spec: kept %v, instance ID %q, applied at %s", md.VMwareIMC.Kept, md.InstanceID, md.VMwareIMC.AppliedAt)
	}
}

// copyKept puts from's kept spec in to's root, applied at testTime.
func copyKept(t *testing.T, from, to *stubVMX) {
	t.Helper()
	p := sysroot.Root(to.root).Path(paths.VMwareIMCSpec)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sysroot.Root(from.root).Path(paths.VMwareIMCSpec))
	if err != nil {
		t.Fatal(err)
	}
	k, err := decodeKeptIMC(b)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = encodeKeptIMC(k, testTime); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A kept file that cannot be read is an error naming it, never quoting
// it; a missing one leaves the no-source reason as it was.
func TestReadVMwareIMCKeptBad(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	p := sysroot.Root(s.root).Path(paths.VMwareIMCSpec)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"format": "seedkeeper-vmware-imc-spec/1", "cust_cfg": "not base64 SECRET"}`,
		`{"format": "other SECRET"}`,
		`{"format": "seedkeeper-vmware-imc-spec/1", "cust_cfg": "", "files": {"../SECRET": ""}}`,
		`[SECRET`,
	} {
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := s.read()
		if !errors.Is(err, ErrBadIMCSpec) || !strings.Contains(err.Error(), paths.VMwareIMCSpec) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	// A link is not followed.
	os.Remove(p)
	target := filepath.Join(t.TempDir(), "spec")
	if err := os.WriteFile(target, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.read(); err == nil || errors.Is(err, ErrNoSource) {
		t.Errorf("a link: %v", err)
	}
}

// A kept spec never sets the password, whatever the file holds.
func TestParseKeptIMCDropsPassword(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vmware", "imc", "dhcp-2nic-instance-id.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("-PASS")) || bytes.Contains(stripIMCPassword(b), []byte("-PASS")) || !bytes.Contains(stripIMCPassword(b), []byte("[MISC]")) {
		t.Fatalf("stripIMCPassword:\n%s", stripIMCPassword(b))
	}
	k, err := encodeKeptIMC(&keptIMC{CustCfg: b}, testTime)
	if err != nil {
		t.Fatal(err)
	}
	md, _, err := parseKeptIMC(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if md.VMwareIMC.Password || bytes.Contains(md.VendorData, []byte("chpasswd")) {
		t.Errorf("vendor-data %q", md.VendorData)
	}
}

func FuzzParseKeptIMC(f *testing.F) {
	specs, _ := filepath.Glob(filepath.Join("..", "testdata", "vmware", "imc", "*.cfg"))
	for _, p := range specs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		k, err := encodeKeptIMC(&keptIMC{CustCfg: b}, testTime)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(k)
	}
	k, _ := encodeKeptIMC(&keptIMC{CustCfg: []byte("[CLOUDINIT]\nMETADATA = m\nUSERDATA = u\n"), Files: map[string][]byte{"m": []byte("instance-id: x\n"), "u": []byte("#cloud-config\n")}}, testTime)
	f.Add(k)
	k, _ = encodeKeptIMC(&keptIMC{MarkerID: "m", CustCfg: []byte("[MISC]\nMARKER-ID = m\nINSTANCE-ID = s\n"), InstanceID: "vm-id"}, testTime)
	f.Add(k)
	f.Fuzz(func(t *testing.T, b []byte) {
		md, k, err := parseKeptIMC(b, nil)
		if err != nil {
			if !errors.Is(err, ErrBadIMCSpec) && !strings.Contains(err.Error(), "meta-data") {
				t.Fatalf("error %v does not wrap ErrBadIMCSpec", err)
			}
			return
		}
		if err := checkUsable(md); err != nil {
			t.Fatal(err)
		}
		if md.VMwareIMC.Password || bytes.Contains(md.VendorData, []byte("chpasswd")) || !md.VMwareIMC.Kept {
			t.Fatalf("spec %+v, vendor-data %q", md.VMwareIMC, md.VendorData)
		}
		if len(k.Files) > maxKeptIMCFiles {
			t.Fatalf("%d files", len(k.Files))
		}
		if k.InstanceID != "" && (md.InstanceID != k.InstanceID || !md.VMwareIMC.Live) {
			t.Fatalf("kept instance ID %q, read %q (live %v)", k.InstanceID, md.InstanceID, md.VMwareIMC.Live)
		}
	})
}

// A line indented after a key continues it, for the reader and for the
// stripper alike: "-PASS" after an indented "[MISC]" is still the
// password's, and not kept.
func TestStripIMCPasswordReadsAsTheParser(t *testing.T) {
	b := []byte("[NETWORK]\nHOSTNAME = h\n\n[PASSWORD]\nFOO = 1\n  [MISC]\n-PASS = secret\n\n[MISC]\nMARKER-ID = m\n")
	got := stripIMCPassword(b)
	if bytes.Contains(got, []byte("secret")) || !bytes.Contains(got, []byte("HOSTNAME = h")) || !bytes.Contains(got, []byte("MARKER-ID = m")) {
		t.Fatalf("stripIMCPassword:\n%s", got)
	}
}

// The kept file is made in one buffer of its exact size, byte for byte
// what json.Marshal writes of the envelope (so that a file kept before
// reads and compares the same), and compared with one on disk but for
// the time it was applied.
func TestKeptEnvelopeIsJSONMarshal(t *testing.T) {
	big := bytes.Repeat([]byte("#cloud-config\n\x00\xff<&>"), 5000)
	for _, k := range []*keptIMC{
		{CustCfg: []byte("[NETWORK]\nHOSTNAME = a\n")},
		{MarkerID: "m-1", CustCfg: []byte("x"), Files: map[string][]byte{"userdata": big, "metadata": []byte("instance-id: i\n"), "e": nil}},
		{MarkerID: "m.2_x", CustCfg: big[:3*1024+1], Files: map[string][]byte{"a": big[:3*1024], "b": big[:3*1024-1]}},
		{CustCfg: nil},
		{MarkerID: "m-3", CustCfg: []byte("x"), InstanceID: "vm-id"},
		{CustCfg: []byte("y"), Files: map[string][]byte{"metadata": []byte("z")}, InstanceID: "i-\u2028"},
	} {
		c := *k
		c.Format, c.Applied = keptIMCFormat, testTime.UTC().Format(time.RFC3339)
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		got, err := encodeKeptIMC(k, testTime)
		if err != nil || !bytes.Equal(got, want) || cap(got) != len(want) {
			t.Errorf("marker %q: %d bytes (cap %d), %v; want json.Marshal's %d", k.MarkerID, len(got), cap(got), err, len(want))
			continue
		}
		env, err := newKeptEnvelope(k, "2031-01-02T03:04:05Z")
		if err != nil {
			t.Fatal(err)
		}
		if !env.sameAs(want) {
			t.Errorf("marker %q: not the same as the file it makes at another time", k.MarkerID)
		}
		at := bytes.Index(want, []byte(`"applied":"`)) + len(`"applied":"`)
		for _, i := range []int{0, at - 1, at + 20, (at + 20 + len(want)) / 2, len(want) - 2} {
			other := bytes.Clone(want)
			other[i] ^= 1
			if env.sameAs(other) {
				t.Errorf("marker %q: the same as a file with byte %d changed", k.MarkerID, i)
			}
		}
		if env.sameAs(want[:len(want)-1]) {
			t.Errorf("marker %q: the same as a shorter file", k.MarkerID)
		}
	}
}

// The same spec kept again leaves the kept file as it is, with the time
// it was first applied; another spec (or the same with another marker)
// replaces it.
func TestKeepIMCSameSpecLeavesIt(t *testing.T) {
	root := t.TempDir()
	h := &sourceduty.Host{Root: sysroot.Root(root), Live: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Links: linkaddr.Links{}}
	p := sysroot.Root(root).Path(paths.VMwareIMCSpec)
	spec := func(marker, cfg string) *IMCSpec {
		return &IMCSpec{keep: &keptIMC{MarkerID: marker, CustCfg: []byte(cfg), Files: map[string][]byte{"userdata": []byte("#cloud-config\n")}}}
	}
	first := []byte(`{"format":"seedkeeper-vmware-imc-spec/1","marker_id":"m-1","applied":"2020-01-02T03:04:05Z","cust_cfg":"W05FVFdPUktd","files":{"userdata":"I2Nsb3VkLWNvbmZpZwo="}}` + "\n")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, first, 0o600); err != nil {
		t.Fatal(err)
	}
	vs := &sourceduty.VMwareStatus{}
	keepIMC(h, vs, spec("m-1", "[NETWORK]"))
	if b, _ := os.ReadFile(p); !bytes.Equal(b, first) || len(vs.Customization) != 0 {
		t.Errorf("the same spec rewrote the kept file: %q, %q", b, vs.Customization)
	}
	for _, s := range []*IMCSpec{spec("m-2", "[NETWORK]"), spec("m-1", "[NETWORK] ")} {
		if err := os.WriteFile(p, first, 0o600); err != nil {
			t.Fatal(err)
		}
		keepIMC(h, vs, s)
		b, _ := os.ReadFile(p)
		if bytes.Equal(b, first) {
			t.Errorf("marker %s, cust.cfg %q: another spec left the kept file", s.keep.MarkerID, s.keep.CustCfg)
		}
		if k, err := decodeKeptIMC(b); err != nil || k.MarkerID != s.keep.MarkerID || !bytes.Equal(k.CustCfg, s.keep.CustCfg) || k.Applied == "2020-01-02T03:04:05Z" {
			t.Errorf("kept %+v, %v", k, err)
		}
	}
}

// encodeKeptIMC is the kept file of a spec applied at when, as keepIMC
// writes it.
func encodeKeptIMC(k *keptIMC, when time.Time) ([]byte, error) {
	env, err := newKeptEnvelope(k, when.UTC().Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return env.bytes()
}

// A spec applied while the VM ran is kept with the instance ID the VM
// had then: read again, from the kept file or as the same spec still in
// /run, that ID holds in place of the spec's own, so that no later boot
// is a new instance by it; another spec is read with its own ID. A kept
// ID that is not one is an error that does not quote it.
func TestKeptIMCLiveInstanceID(t *testing.T) {
	spec := []byte("[NETWORK]\nHOSTNAME = h\n[MISC]\nMARKER-ID = m-2\nINSTANCE-ID = spec-id\n")
	k, err := encodeKeptIMC(&keptIMC{MarkerID: "m-2", CustCfg: spec, InstanceID: "vm-id"}, testTime)
	if err != nil {
		t.Fatal(err)
	}
	md, _, err := parseKeptIMC(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "vm-id" || md.InstanceIDDefaulted || !md.VMwareIMC.Live || md.MetaData["instance-id"] != "vm-id" {
		t.Errorf("kept: instance ID %q (defaulted %v), live %v, meta-data %v", md.InstanceID, md.InstanceIDDefaulted, md.VMwareIMC.Live, md.MetaData)
	}
	bad, err := encodeKeptIMC(&keptIMC{CustCfg: spec, InstanceID: "a/secret"}, testTime)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseKeptIMC(bad, nil); !errors.Is(err, ErrBadIMCSpec) || !strings.Contains(err.Error(), "instance_id is not an instance ID") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a kept instance ID that is not one: %v", err)
	}

	root := sysroot.Root(t.TempDir())
	for p, b := range map[string][]byte{paths.VMwareIMCSpec: k, imcSpecPath: spec} {
		if err := os.MkdirAll(filepath.Dir(root.Path(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root.Path(p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	md, err = readIMC(t.Context(), root, log)
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "vm-id" || !md.VMwareIMC.Live || md.VMwareIMC.keep.InstanceID != "vm-id" {
		t.Errorf("the same spec in /run: instance ID %q, live %v", md.InstanceID, md.VMwareIMC.Live)
	}
	other := bytes.Replace(spec, []byte("m-2"), []byte("m-3"), 1)
	if err := os.WriteFile(root.Path(imcSpecPath), other, 0o600); err != nil {
		t.Fatal(err)
	}
	md, err = readIMC(t.Context(), root, log)
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "spec-id" || md.VMwareIMC.Live || md.VMwareIMC.keep.InstanceID != "" {
		t.Errorf("another spec in /run: instance ID %q, live %v", md.InstanceID, md.VMwareIMC.Live)
	}
}
