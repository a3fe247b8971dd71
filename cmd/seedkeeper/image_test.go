package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testseed"
)

// imageRoot is a root as an image build leaves it: the package installed
// with its units enabled, cloud-init and networkd installed, an empty
// machine-id, DMI saying uuid.
func imageRoot(t *testing.T, uuid string) string {
	t.Helper()
	root := scratchRoot(t, kvmProduct, kvmVendor, uuid)
	for _, u := range []string{"seedkeeper-boot.service", "seedkeeper-watch.service"} {
		writeFile(t, filepath.Join(root, "lib/systemd/system", u), readFile(t, filepath.Join("..", "..", "packaging", u)), 0o644)
	}
	links := map[string]string{
		"etc/systemd/system/sysinit.target.wants/seedkeeper-boot.service":     "/lib/systemd/system/seedkeeper-boot.service",
		"etc/systemd/system/multi-user.target.wants/seedkeeper-watch.service": "/lib/systemd/system/seedkeeper-watch.service",
		"etc/systemd/system/multi-user.target.wants/systemd-networkd.service": "/lib/systemd/system/systemd-networkd.service",
	}
	for l, target := range links {
		os.MkdirAll(filepath.Dir(filepath.Join(root, l)), 0o755)
		if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "lib/systemd/system/systemd-networkd.service"), "[Install]\nWantedBy=multi-user.target\n", 0o644)
	writeFile(t, filepath.Join(root, "lib/systemd/system/cloud-init-local.service"), "[Unit]\n", 0o644)
	writeFile(t, filepath.Join(root, "etc/cloud/cloud.cfg.d/95-seedkeeper.cfg"), readFile(t, filepath.Join("..", "..", "packaging", "95-seedkeeper.cfg")), 0o644)
	writeFile(t, filepath.Join(root, "etc/machine-id"), "", 0o644)
	return root
}

// cloudInitRan leaves what a cloud-init run with id leaves in root.
func cloudInitRan(t *testing.T, root, id string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "var/lib/cloud/data/instance-id"), id+"\n", 0o644)
	writeFile(t, filepath.Join(root, "var/lib/cloud/instances", id, "sem/config_ssh"), "", 0o644)
	if err := os.Symlink("/var/lib/cloud/instances/"+id, filepath.Join(root, "var/lib/cloud/instance")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "var/log/cloud-init.log"), "ran\n", 0o644)
	writeFile(t, filepath.Join(root, "etc/machine-id"), "5f1c8a2e3b4d4e6f8a9b0c1d2e3f4a5b\n", 0o644)
	writeFile(t, filepath.Join(root, "etc/ssh/ssh_host_ed25519_key"), "key\n", 0o600)
}

func TestImageUsage(t *testing.T) {
	if r := runInProcess("image", "--help"); r.code != exitOK || r.stdout != imageUsage || r.stderr != "" {
		t.Errorf("image --help: %v", r)
	}
	for _, args := range [][]string{
		{"image", "check", "--help"}, {"image", "seal", "--help"},
	} {
		if r := runInProcess(args...); r.code != exitOK || r.stdout != imageUsage {
			t.Errorf("%q: %v", args, r)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"image"}, "Usage: seedkeeper image check"},
		{[]string{"image", "shrink"}, `unknown command "shrink" (want check or seal)`},
		{[]string{"image", "check", "--dry-run"}, "flag provided but not defined: -dry-run"},
		{[]string{"image", "seal", "--root", t.TempDir(), "--expect", "sha256:short"}, "--expect: a digest is sha256: and 64 hex digits"},
		{[]string{"image", "check", "--expect", "x"}, "flag provided but not defined: -expect"},
		{[]string{"image", "check", "--root", t.TempDir(), "extra"}, `unexpected argument "extra"`},
	} {
		if r := runInProcess(c.args...); r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: %v", c.args, r)
		}
	}
}

func TestImageCheckExitCodes(t *testing.T) {
	root := imageRoot(t, kvmUUID)
	r := runBinary(t, nil, "image", "check", "--root", root)
	if r.code != exitOK || !strings.Contains(r.stdout, "Verdict: a clone of this image will behave at first boot") || r.stderr != "" {
		t.Errorf("fresh image: %v", r)
	}

	cloudInitRan(t, root, "template-1")
	r = runBinary(t, nil, "image", "check", "--root", root)
	if r.code != exitNotFound || !strings.Contains(r.stdout, "FINDING  cloud-init-state: ") ||
		!strings.Contains(r.stdout, "adopts cloud-init's template-1 on its first run (rule 3)") ||
		!strings.Contains(r.stdout, "fix:   seedkeeper image seal --root "+root) ||
		!strings.Contains(r.stdout, "Verdict: 3 finding(s)") {
		t.Errorf("used template: %v", r)
	}

	r = runBinary(t, nil, "image", "check", "--root", root, "--json")
	var rep struct {
		Root  string `json:"root"`
		Items []struct {
			ID, Verdict, Fix string
		} `json:"items"`
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitNotFound {
		t.Fatalf("--json: %v\n%v", err, r)
	}
	var findings []string
	for _, it := range rep.Items {
		if it.Verdict == "finding" {
			findings = append(findings, it.ID)
		}
	}
	if want := []string{"cloud-init-state", "machine-id", "ssh-host-keys"}; !slices.Equal(findings, want) || rep.Root != root {
		t.Errorf("--json findings %q (root %q), want %q", findings, rep.Root, want)
	}

	// An item that cannot be checked: a link that climbs out of the root
	// lands, inside it, on itself.
	os.Remove(filepath.Join(root, "etc/machine-id"))
	os.Symlink("../../../../../../../../../../../etc/machine-id", filepath.Join(root, "etc/machine-id"))
	if r := runBinary(t, nil, "image", "check", "--root", root); r.code != exitError || !strings.Contains(r.stdout, "ERROR    machine-id: ") || !strings.Contains(r.stdout, "too many levels of symbolic links") {
		t.Errorf("link loop: %v", r)
	}
	if r := runBinary(t, nil, "image", "check", "--root", filepath.Join(root, "none")); r.code != exitError || !strings.Contains(r.stderr, "is not a directory") {
		t.Errorf("missing root: %v", r)
	}
}

// One plan, two executions: the dry run's list is what the real run
// prints and removes, and nothing else changes.
func TestImageSealDryRunIsThePlan(t *testing.T) {
	root := imageRoot(t, kvmUUID)
	cloudInitRan(t, root, "template-1")
	writeFile(t, filepath.Join(root, "etc/ssh/sshd_config"), "Port 22\n", 0o644)
	before := filesUnder(t, root)

	dry := runBinary(t, nil, "image", "seal", "--root", root, "--dry-run")
	if dry.code != exitOK || !strings.HasPrefix(dry.stdout, "Dry run: sealing "+root+" would do this, and nothing else:\n") {
		t.Fatalf("dry run: %v", dry)
	}
	if after := filesUnder(t, root); !slices.Equal(after, before) {
		t.Fatalf("the dry run changed files: %q", after)
	}
	planLines := strings.SplitAfter(dry.stdout, "\n")[1:]

	real := runBinary(t, nil, "image", "seal", "--root", root)
	if real.code != exitOK || real.stderr != "" {
		t.Fatalf("seal: %v", real)
	}
	head, tail, _ := strings.Cut(real.stdout, "\nimage check after the seal:\n")
	if got := strings.SplitAfter(head, "\n")[1:]; !slices.Equal(got, planLines) {
		t.Errorf("the real run's list differs from the dry run's:\n%q\n%q", got, planLines)
	}
	if tail != "Verdict: a clone of this image will behave at first boot\n" {
		t.Errorf("after the seal:\n%s", tail)
	}
	var planned []string
	for _, l := range planLines {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] != "keep" {
			planned = append(planned, strings.TrimSuffix(f[1], ":"))
		}
	}
	after := filesUnder(t, root)
	for _, f := range before {
		sys := "/" + f
		inPlan := slices.ContainsFunc(planned, func(p string) bool { return sys == p || strings.HasPrefix(sys, p+"/") })
		switch gone := !slices.Contains(after, f); {
		case gone && !inPlan:
			t.Errorf("%s removed but not in the plan", sys)
		case !gone && inPlan && sys != "/etc/machine-id":
			t.Errorf("%s in the plan but still there", sys)
		}
	}
	if got := readFile(t, filepath.Join(root, "etc/machine-id")); got != "" {
		t.Errorf("machine-id not emptied: %q", got)
	}
	if r := runBinary(t, nil, "image", "check", "--root", root); r.code != exitOK {
		t.Errorf("check after seal: %v", r)
	}
}

// A link that climbs out of the root resolves inside it, as in a chroot:
// seal and its closing check never reach the host's file through it.
func TestImageSealLinkOutOfRootStaysInside(t *testing.T) {
	root := imageRoot(t, kvmUUID)
	cloudInitRan(t, root, "template-1")
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "data", "instance-id"), "host-secret-id\n", 0o644)
	os.RemoveAll(filepath.Join(root, "var/lib/cloud"))
	rel, _ := filepath.Rel(filepath.Join(root, "var/lib"), outside)
	os.Symlink(rel, filepath.Join(root, "var/lib/cloud"))
	r := runBinary(t, nil, "image", "seal", "--root", root)
	if r.code != exitOK || strings.Contains(r.stdout+r.stderr, "host-secret-id") || strings.Contains(r.stdout, "/var/lib/cloud/data") {
		t.Errorf("seal: %v", r)
	}
	if readFile(t, filepath.Join(outside, "data", "instance-id")) != "host-secret-id\n" {
		t.Error("a file outside the root changed")
	}
	if _, err := os.Lstat(filepath.Join(root, "var/lib/cloud")); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
}

// Why sealing matters (docs/design.md, "Identity rules", rule 3 and
// "Images"; the derived-ID template case): a Proxmox template that ran
// cloud-init before seedkeeper was added hands its ID to every clone;
// sealed, each clone is a new instance.
func TestImageSealProxmoxTemplateClones(t *testing.T) {
	tmpl := imageRoot(t, kvmUUID)
	_, _, meta := testseed.Proxmox("192.0.2.53")
	tmplID := strings.TrimSpace(strings.TrimPrefix(meta, "instance-id: "))
	cloudInitRan(t, tmpl, tmplID)

	clone := func(t *testing.T, uuid string, resolvers ...string) (root, reported string) {
		root = scratchRoot(t, kvmProduct, kvmVendor, uuid)
		if err := os.CopyFS(filepath.Join(root, "var"), os.DirFS(filepath.Join(tmpl, "var"))); err != nil {
			t.Fatal(err)
		}
		reported = attachProxmoxISO(t, root, resolvers...)
		bootOK(t, root)
		return root, reported
	}

	// Unsealed: the clone keeps the template's ID, and check says why.
	c, _ := clone(t, "7D1A0C44-5B6E-4F2A-8E3D-1C9B0A7F6E5D", "198.51.100.53")
	if got := metaDataID(t, c); got != tmplID {
		t.Fatalf("unsealed clone got %q; the test expects the failure sealing prevents (%q)", got, tmplID)
	}
	if r := runBinary(t, nil, "image", "check", "--root", tmpl); r.code != exitNotFound || !strings.Contains(r.stdout, "FINDING  cloud-init-state") {
		t.Errorf("check on the unsealed template: %v", r)
	}

	if r := runBinary(t, nil, "image", "seal", "--root", tmpl); r.code != exitOK {
		t.Fatalf("seal: %v", r)
	}
	c1, id1 := clone(t, "7D1A0C44-5B6E-4F2A-8E3D-1C9B0A7F6E5D", "198.51.100.53")
	c2, id2 := clone(t, "2B8E4F10-9A3C-4D5E-8F7A-6B1C0D2E3F4A", "203.0.113.53")
	for _, c := range []struct{ root, id string }{{c1, id1}, {c2, id2}} {
		if got := metaDataID(t, c.root); got != c.id || got == tmplID {
			t.Errorf("sealed clone got %q, want its reported %q", got, c.id)
		}
		st := readStatus(t, c.root)
		if st.Identity == nil || st.Identity.RuleName != "first-run" || !strings.Contains(st.Identity.Explanation, "sealed (seedkeeper image seal)") {
			t.Errorf("sealed clone's decision: %+v", st.Identity)
		}
		if _, err := os.Lstat(filepath.Join(c.root, "var/lib/seedkeeper/sealed")); !os.IsNotExist(err) {
			t.Errorf("the sealed marker was not consumed (%v)", err)
		}
	}
	if id1 == id2 {
		t.Error("the two clones have the same ID")
	}
}

func TestIdentityPinCommand(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	if r := runBinary(t, nil, "identity", "pin", "--root", root); r.code != exitOK || !strings.Contains(r.stdout, "Nothing pinned: cloud-init has not run here") {
		t.Errorf("before cloud-init: %v", r)
	}
	writeFile(t, filepath.Join(root, "var/lib/cloud/data/instance-id"), "vm-42\n", 0o644)
	r := runBinary(t, nil, "identity", "pin", "--root", root)
	if r.code != exitOK || r.stdout != "Pinned cloud-init's instance ID vm-42 for this machine ("+strings.ToLower(kvmUUID)+").\n" {
		t.Errorf("pin: %v", r)
	}
	if r := runBinary(t, nil, "identity", "show", "--root", root); !strings.Contains(r.stdout, "Pinned ID:        vm-42") || !strings.Contains(r.stdout, "rule 3 (adopt-cloud-init)") {
		t.Errorf("show after pin: %v", r)
	}
	if r := runBinary(t, nil, "identity", "pin", "--root", root, "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"outcome": "already-pinned"`) {
		t.Errorf("pin again: %v", r)
	}
	writeFile(t, filepath.Join(root, "var/lib/seedkeeper/identity.json"), "{", 0o644)
	if r := runBinary(t, nil, "identity", "pin", "--root", root); r.code != exitError || !strings.Contains(r.stderr, "identity state is unreadable") {
		t.Errorf("bad state: %v", r)
	}
}
