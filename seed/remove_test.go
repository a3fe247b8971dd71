package seed

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

func smartOSSeed() Seed {
	s := testSeed()
	s.SmartOS = &datasource.SmartOSExtras{
		OperatorScript: []byte("echo operator\n"), HasOperator: true,
		UserScript: []byte("echo user\n"), HasUserScript: true,
		LegacyUserData: []byte("legacy\n"), HasLegacyUser: true,
	}
	return s
}

// tree returns every file under root by system path, with its content.
func tree(t *testing.T, root sysroot.Root) map[string]string {
	t.Helper()
	got := map[string]string{}
	filepath.WalkDir(string(root), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			got[root.Rel(p)] = string(b)
		}
		return nil
	})
	return got
}

func mustRemove(t *testing.T, root sysroot.Root) Removal {
	t.Helper()
	res, err := Remove(root)
	if err != nil {
		t.Fatalf("Remove: %v", err)
	}
	return res
}

// A package removal takes away everything Write wrote (the seed, the
// marker, the SmartOS per-boot scripts and legacy user-data), so that
// cloud-init sees what it would without seedkeeper; a second run changes
// nothing.
func TestRemoveTakesAwayWhatWriteWrote(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	os.MkdirAll(root.Path(PerBootDir), 0o755) // cloud-init's
	before := tree(t, root)
	s := smartOSSeed()
	s.NetworkConfig = []byte("version: 1\nconfig: []\n")
	mustWrite(t, root, s)
	res := mustRemove(t, root)
	want := []string{sd(MetaDataFile), sd(UserDataFile), sd(VendorDataFile), sd(NetworkConfigFile), OperatorScript, UserScript, LegacyUserData}
	if !slices.Equal(res.Removed, want) || len(res.Left) != 0 || len(res.Restored) != 0 {
		t.Errorf("Remove = %+v; want removed %v", res, want)
	}
	if got := tree(t, root); len(got) != len(before) {
		t.Errorf("after Remove the tree holds %v; want nothing", got)
	}
	for _, d := range []string{Dir, filepath.Dir(Dir)} {
		if _, err := os.Lstat(root.Path(d)); err == nil {
			t.Errorf("%s, made by Write, is still there", d)
		}
	}
	if _, err := os.Stat(root.Path(PerBootDir)); err != nil {
		t.Errorf("cloud-init's %s was removed: %v", PerBootDir, err)
	}
	if res := mustRemove(t, root); len(res.Removed)+len(res.Left)+len(res.Restored) != 0 {
		t.Errorf("second Remove = %+v; want nothing done", res)
	}
}

// A seed a person put in the seed directory before seedkeeper first ran
// comes back byte for byte, every file of it, and the imported copy goes.
func TestRemoveGivesBackAnImportedSeed(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	person := map[string]string{
		MetaDataFile:   "instance-id: handmade\r\nlocal-hostname: h\n",
		UserDataFile:   "#cloud-config\n\x00\xff binary tail",
		VendorDataFile: "",
		"README":       "put by hand\n",
	}
	os.MkdirAll(root.Path(Dir), 0o755)
	for n, c := range person {
		os.WriteFile(root.Path(sd(n)), []byte(c), 0o644)
	}
	mustWrite(t, root, smartOSSeed())
	if read(t, root, sd(MetaDataFile)) == person[MetaDataFile] {
		t.Fatal("Write did not replace the person's meta-data; the test proves nothing")
	}
	// Boots later, with other metadata.
	s := testSeed()
	s.InstanceID = "i-later"
	mustWrite(t, root, s)

	res := mustRemove(t, root)
	if len(res.Left) != 0 || len(res.Restored) != len(person) {
		t.Errorf("Remove = %+v; want all %d files given back, nothing left", res, len(person))
	}
	got := tree(t, root)
	for n, c := range person {
		if got[sd(n)] != c {
			t.Errorf("%s = %q; want the person's %q", sd(n), got[sd(n)], c)
		}
		delete(got, sd(n))
	}
	if len(got) != 0 {
		t.Errorf("left besides the person's seed: %v", got)
	}
	if owned, err := Owned(string(root)); owned || err != nil {
		t.Errorf("Owned = %v, %v after Remove", owned, err)
	}
	// Installed again, seedkeeper imports the seed again, as the first time.
	if res := mustWrite(t, root, testSeed()); res.Imported != ImportDir {
		t.Errorf("second install: Imported = %q", res.Imported)
	}
}

// Only files whose content is still what seedkeeper wrote are removed;
// a hand edit and a file of a person's are left and named, without their
// content.
func TestRemoveLeavesWhatIsNotSeedkeepers(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	mustWrite(t, root, smartOSSeed())
	os.WriteFile(root.Path(sd(UserDataFile)), []byte("#cloud-config\nsecret: hand-edit\n"), 0o600)
	os.WriteFile(root.Path(OperatorScript), []byte("#!/bin/sh\necho mine\n"), 0o700)
	os.WriteFile(root.Path(sd("notes")), []byte("secret: mine\n"), 0o600)
	res := mustRemove(t, root)
	if want := []string{sd(MetaDataFile), sd(VendorDataFile), UserScript, LegacyUserData}; !slices.Equal(res.Removed, want) {
		t.Errorf("removed %v; want %v", res.Removed, want)
	}
	for _, p := range []string{sd(UserDataFile), OperatorScript, sd("notes")} {
		if !exists(root.Path(p)) {
			t.Errorf("%s was removed", p)
		}
		if !slices.ContainsFunc(res.Left, func(l string) bool { return strings.HasPrefix(l, p+": ") }) {
			t.Errorf("%s is not named in Left %q", p, res.Left)
		}
	}
	for _, l := range res.Left {
		if strings.Contains(l, "secret") || strings.Contains(l, "mine") {
			t.Errorf("Left quotes the file: %q", l)
		}
	}
	if exists(markerPath(root)) {
		t.Error("the marker is still there")
	}
}

// A person's file in the way of an imported one is kept, and so is the
// imported copy, both named.
func TestRemoveKeepsTheImportWhenItCannotBeGivenBack(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	os.MkdirAll(root.Path(Dir), 0o755)
	os.WriteFile(root.Path(sd(MetaDataFile)), []byte("instance-id: handmade\n"), 0o644)
	os.WriteFile(root.Path(sd(UserDataFile)), []byte(""), 0o644)
	mustWrite(t, root, testSeed())
	os.WriteFile(root.Path(sd(MetaDataFile)), []byte("instance-id: edited-later\n"), 0o644)
	res := mustRemove(t, root)
	if read(t, root, sd(MetaDataFile)) != "instance-id: edited-later\n" || read(t, root, sd(UserDataFile)) != "" {
		t.Errorf("seed directory = %v", tree(t, root))
	}
	if read(t, root, filepath.Join(ImportDir, MetaDataFile)) != "instance-id: handmade\n" {
		t.Error("the imported copy was not kept")
	}
	if !slices.ContainsFunc(res.Left, func(l string) bool {
		return strings.HasPrefix(l, filepath.Join(ImportDir, MetaDataFile)+": not given back")
	}) {
		t.Errorf("Left %q does not name the imported meta-data", res.Left)
	}
}

// A removal cut short after giving the seed back (the marker still there)
// finishes on the next run without calling the person's files hand edits.
func TestRemoveInterruptedAfterGivingBack(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	os.MkdirAll(root.Path(Dir), 0o755)
	os.WriteFile(root.Path(sd(MetaDataFile)), []byte("instance-id: handmade\n"), 0o644)
	os.WriteFile(root.Path(sd(UserDataFile)), []byte("#cloud-config\n"), 0o644)
	mustWrite(t, root, testSeed())
	for _, n := range []string{MetaDataFile, UserDataFile} {
		b, _ := os.ReadFile(root.Path(filepath.Join(ImportDir, n)))
		os.WriteFile(root.Path(sd(n)), b, 0o600)
	}
	res := mustRemove(t, root)
	if len(res.Left) != 0 || !slices.Equal(res.Removed, []string{sd(VendorDataFile)}) {
		t.Errorf("Remove = %+v", res)
	}
	if read(t, root, sd(MetaDataFile)) != "instance-id: handmade\n" || exists(markerPath(root)) || exists(root.Path(ImportDir)) {
		t.Errorf("after Remove: %v", tree(t, root))
	}
}

// Without a marker's hashes nothing can be told to be seedkeeper's:
// nothing is removed, and it says so.
func TestRemoveWithoutAReadableMarker(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	mustWrite(t, root, testSeed())
	os.WriteFile(markerPath(root), []byte("{not json"), 0o600)
	before := tree(t, root)
	res := mustRemove(t, root)
	if len(res.Removed) != 0 || len(res.Left) != 1 {
		t.Errorf("Remove = %+v", res)
	}
	if got := tree(t, root); len(got) != len(before) {
		t.Errorf("files changed: %v", got)
	}

	// No marker at all: the directory is a person's.
	root = sysroot.Root(t.TempDir())
	os.MkdirAll(root.Path(Dir), 0o755)
	os.WriteFile(root.Path(sd(MetaDataFile)), []byte("instance-id: handmade\n"), 0o644)
	res = mustRemove(t, root)
	if len(res.Removed) != 0 || read(t, root, sd(MetaDataFile)) != "instance-id: handmade\n" {
		t.Errorf("Remove = %+v", res)
	}
}

func TestRemoveRefusesALinkedSeedDirectory(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, MetaDataFile), nil, 0o644)
	os.MkdirAll(filepath.Dir(root.Path(Dir)), 0o755)
	os.Symlink(elsewhere, root.Path(Dir))
	if _, err := Remove(root); !errors.Is(err, fsutil.ErrSymlink) {
		t.Errorf("Remove through a linked seed directory: %v", err)
	}
	if !exists(filepath.Join(elsewhere, MetaDataFile)) {
		t.Error("removed through the link")
	}
}

// exists reports whether the host path path is there (a link itself
// counts).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Apply gives a file of the imported seed back only where the path is
// still as the plan read it: a file made where the plan saw none (or one
// that replaced a file of seedkeeper's the plan would remove, or one
// changed after it was given back) is left as it is, never overwritten,
// and the imported copy of it is kept and named, so nothing of the
// person's is lost. The rest of the plan goes on.
func TestApplyGivesBackOnlyWhereStillAbsent(t *testing.T) {
	person := map[string]string{MetaDataFile: "instance-id: handmade\n", UserDataFile: "#cloud-config\n", "README": "put by hand\n"}
	imported := func(t *testing.T) sysroot.Root {
		root := sysroot.Root(t.TempDir())
		os.MkdirAll(root.Path(Dir), 0o755)
		for n, c := range person {
			os.WriteFile(root.Path(sd(n)), []byte(c), 0o644)
		}
		mustWrite(t, root, testSeed())
		return root
	}
	for _, tc := range []struct {
		name string
		// prepare readies root before the plan, or nil.
		prepare func(root sysroot.Root)
		// file is the file of the seed made or changed after the plan,
		// and op the step the plan has for it.
		file, op string
	}{
		{name: "made where the plan saw none", file: "README", op: GiveBack, prepare: func(root sysroot.Root) {
			os.Remove(root.Path(sd("README")))
		}},
		{name: "seedkeeper's file edited after the plan", file: MetaDataFile, op: GiveBack},
		{name: "changed after it was given back", file: UserDataFile, op: GivenBack, prepare: func(root sysroot.Root) {
			os.WriteFile(root.Path(sd(UserDataFile)), []byte(person[UserDataFile]), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := imported(t)
			if tc.prepare != nil {
				tc.prepare(root)
			}
			p, err := PlanRemove(root)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Op == tc.op && s.Path == sd(tc.file) }) {
				t.Fatalf("the plan has no %s of %s; the test proves nothing: %+v", tc.op, sd(tc.file), p.Steps)
			}
			const late = "made after the plan\n"
			if err := os.WriteFile(root.Path(sd(tc.file)), []byte(late), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := p.Apply()
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := read(t, root, sd(tc.file)); got != late {
				t.Errorf("%s = %q after Apply; want the file made after the plan, untouched", sd(tc.file), got)
			}
			for n, c := range person {
				if got := read(t, root, filepath.Join(ImportDir, n)); got != c {
					t.Errorf("the imported copy of %s = %q; want it kept", n, got)
				}
				if n != tc.file && read(t, root, sd(n)) != c {
					t.Errorf("%s was not given back", sd(n))
				}
			}
			if slices.Contains(res.Restored, sd(tc.file)) {
				t.Errorf("Restored %v names %s", res.Restored, sd(tc.file))
			}
			want := filepath.Join(ImportDir, tc.file) + ": not given back, " + sd(tc.file)
			if !slices.ContainsFunc(res.Left, func(l string) bool {
				return strings.HasPrefix(l, want) && strings.HasSuffix(l, "the imported copy stays in "+ImportDir)
			}) {
				t.Errorf("Left %q does not say why %s was not given back", res.Left, sd(tc.file))
			}
			if exists(markerPath(root)) {
				t.Error("the rest of the plan was not carried out: the marker is still there")
			}
		})
	}
}
