package seed

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// snapshot describes every entry under root by system path: the file
// itself (os.SameFile tells a replaced one), its mode and its mtime.
func snapshot(t *testing.T, root sysroot.Root) map[string]fs.FileInfo {
	t.Helper()
	got := map[string]fs.FileInfo{}
	err := filepath.WalkDir(string(root), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		got[root.Rel(p)] = fi
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// changes returns the entries of after that are new or not the same file,
// mode and mtime as in before, and the entries of before that are gone.
func changes(before, after map[string]fs.FileInfo) (changed, gone []string) {
	for p, a := range after {
		b, ok := before[p]
		if !ok || !os.SameFile(a, b) || a.Mode() != b.Mode() || !a.ModTime().Equal(b.ModTime()) {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			gone = append(gone, p)
		}
	}
	slices.Sort(changed)
	slices.Sort(gone)
	return changed, gone
}

func mustPlan(t *testing.T, root sysroot.Root, s Seed) *Plan {
	t.Helper()
	p, err := PlanWrite(string(root), s)
	if err != nil {
		t.Fatalf("PlanWrite: %v", err)
	}
	return p
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// The plan of a seed that is already on disk is empty, and applying it
// touches no file, not even the marker.
func TestPlanOfUnchangedSeedIsEmpty(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	s := smartOSSeed()
	s.NetworkConfig = []byte("version: 2\nethernets: {}\n")
	mustWrite(t, root, s)
	before := snapshot(t, root)
	p := mustPlan(t, root, s)
	if !p.Empty() || len(p.Writes) != 0 || len(p.Removes) != 0 || p.Import {
		t.Fatalf("plan of an unchanged seed = %+v, want empty", p)
	}
	res, err := p.Apply()
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() {
		t.Errorf("Apply of an empty plan changed %+v", res)
	}
	if changed, gone := changes(before, snapshot(t, root)); len(changed) != 0 || len(gone) != 0 {
		t.Errorf("Apply of an empty plan changed %q, removed %q", changed, gone)
	}
}

// PlanWrite changes nothing on disk, and the plan names exactly the files
// Apply then writes and removes, with the warnings Apply reports.
func TestPlanNamesWhatApplyWrites(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	first := smartOSSeed()
	first.NetworkConfig = []byte("version: 2\nethernets: {}\n")
	second := testSeed()
	second.UserData = []byte("#cloud-config\nusers: []\n")
	second.SmartOS = first.SmartOS

	for i, s := range []Seed{first, second} {
		before := snapshot(t, root)
		p := mustPlan(t, root, s)
		if changed, gone := changes(before, snapshot(t, root)); len(changed) != 0 || len(gone) != 0 {
			t.Fatalf("run %d: PlanWrite changed %q, removed %q", i, changed, gone)
		}
		if i == 1 && (!slices.Equal(p.Writes, []string{sd(UserDataFile)}) || !slices.Equal(p.Removes, []string{sd(NetworkConfigFile)})) {
			t.Fatalf("second plan writes %q, removes %q; want user-data, network-config", p.Writes, p.Removes)
		}
		res, err := p.Apply()
		if err != nil {
			t.Fatalf("run %d: Apply: %v", i, err)
		}
		changed, gone := changes(before, snapshot(t, root))
		var files []string
		for _, c := range changed {
			if fi := snapshot(t, root)[c]; fi.Mode().IsRegular() && c != sd(MarkerName) {
				files = append(files, c)
			}
		}
		if !slices.Equal(files, sorted(p.Writes)) || !slices.Equal(res.Written, p.Writes) {
			t.Errorf("run %d: plan writes %q; Apply wrote %q, the disk changed %q", i, p.Writes, res.Written, files)
		}
		if !slices.Equal(gone, sorted(p.Removes)) || !slices.Equal(res.Removed, p.Removes) {
			t.Errorf("run %d: plan removes %q; Apply removed %q, the disk lost %q", i, p.Removes, res.Removed, gone)
		}
		if !slices.Equal(res.Warnings, p.Warnings) {
			t.Errorf("run %d: plan warns %q, Apply %q", i, p.Warnings, res.Warnings)
		}
	}
	if got := mustPlan(t, root, second); !got.Empty() {
		t.Errorf("plan after Apply = %+v, want empty", got)
	}
}

// A person's seed is imported by Apply, not by PlanWrite.
func TestPlanImportsOnApply(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	os.MkdirAll(root.Path(Dir), 0o755)
	os.WriteFile(root.Path(sd(UserDataFile)), []byte("#cloud-config\n"), 0o644)
	p := mustPlan(t, root, testSeed())
	if !p.Import {
		t.Fatalf("plan = %+v, want an import", p)
	}
	for _, sp := range []string{ImportDir, sd(MarkerName)} {
		if _, err := os.Lstat(root.Path(sp)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("PlanWrite made %s: %v", sp, err)
		}
	}
	res, err := p.Apply()
	if err != nil || res.Imported != ImportDir {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	if got := read(t, root, filepath.Join(ImportDir, UserDataFile)); got != "#cloud-config\n" {
		t.Errorf("imported user-data = %q", got)
	}
}

// A link a person puts in the way after the plan was made is not
// followed by Apply: not as a file it writes, not as the seed directory,
// not as a directory above a file.
func TestApplyRefusesALinkPutInTheWayAfterThePlan(t *testing.T) {
	changed := testSeed()
	changed.UserData = []byte("#cloud-config\nusers: []\n")
	for _, tc := range []struct {
		name  string
		first Seed
		then  Seed
		link  string // the system path replaced with a link after the plan
	}{
		{"a file", testSeed(), changed, sd(UserDataFile)},
		{"the seed directory", testSeed(), changed, Dir},
		{"the per-boot directory", testSeed(), smartOSSeed(), PerBootDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := sysroot.Root(t.TempDir())
			elsewhere := t.TempDir()
			mustWrite(t, root, tc.first)
			p := mustPlan(t, root, tc.then)
			if len(p.Writes) == 0 {
				t.Fatalf("plan = %+v, want writes", p)
			}
			os.RemoveAll(root.Path(tc.link))
			os.MkdirAll(filepath.Dir(root.Path(tc.link)), 0o755)
			target := filepath.Join(elsewhere, "target")
			if tc.link != sd(UserDataFile) {
				target = elsewhere
			} else if err := os.WriteFile(target, []byte("theirs\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, root.Path(tc.link)); err != nil {
				t.Fatal(err)
			}
			before := tree(t, sysroot.Root(elsewhere))
			if _, err := p.Apply(); !errors.Is(err, fsutil.ErrSymlink) {
				t.Errorf("Apply with %s linked: %v, want %v", tc.link, err, fsutil.ErrSymlink)
			}
			if after := tree(t, sysroot.Root(elsewhere)); len(after) != len(before) || after["/target"] != before["/target"] {
				t.Errorf("Apply wrote through the link: %q, was %q", after, before)
			}
		})
	}
}
