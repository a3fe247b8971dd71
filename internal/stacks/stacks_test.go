package stacks

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func put(t *testing.T, root, p, body string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedkeeperNamed is the naming rule of the places in these tests.
func seedkeeperNamed(n string) bool { return strings.HasPrefix(n, "50-seedkeeper") }

// describe renders Walk's answer as "name:ours" lines.
func describe(fs []File) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path+" ours="+map[bool]string{true: "yes", false: "no"}[f.Ours])
	}
	return out
}

// The walker lists every file of seedkeeper's names in a place and says
// which are still seedkeeper's: a regular file with the header. A file
// of its name without the header, a link (even to a file with the
// header), a directory are listed as not ours; other names are not
// listed at all.
func TestWalk(t *testing.T) {
	root := t.TempDir()
	const dir = "/etc/stack.d"
	put(t, root, dir+"/50-seedkeeper-a", Header+"\nours\n")
	put(t, root, dir+"/50-seedkeeper-b", "# a person's file of our name\n")
	put(t, root, dir+"/10-other", Header+"\nthe header, but not our name\n")
	put(t, root, "/etc/target", Header+"\n")
	if err := os.Symlink("/etc/target", filepath.Join(root, dir, "50-seedkeeper-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, dir, "50-seedkeeper-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Walk(root, Place{Dir: dir, Match: seedkeeperNamed})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		dir + "/50-seedkeeper-a ours=yes",
		dir + "/50-seedkeeper-b ours=no",
		dir + "/50-seedkeeper-dir ours=no",
		dir + "/50-seedkeeper-link ours=no",
	}
	if !slices.Equal(describe(got), want) {
		t.Errorf("Walk = %q, want %q", describe(got), want)
	}
	for _, f := range got {
		if f.Name != filepath.Base(f.Path) {
			t.Errorf("%s: name %q", f.Path, f.Name)
		}
	}

	// A missing place, or one that is not a directory, holds nothing.
	for _, d := range []string{"/etc/missing", dir + "/50-seedkeeper-a"} {
		if got, err := Walk(root, Place{Dir: d, Match: seedkeeperNamed}); err != nil || len(got) != 0 {
			t.Errorf("%s: %q, %v", d, describe(got), err)
		}
	}
	// A place without a rule names nothing.
	if got, err := Walk(root, Place{Dir: dir}); err != nil || len(got) != 0 {
		t.Errorf("no rule: %q, %v", describe(got), err)
	}
}

// A place that is a link is resolved inside the root: a link that climbs
// out of it, relative or absolute, never reaches the files outside, and
// a link to another directory of the root lists that directory's files
// by their own paths.
func TestWalkStaysInRoot(t *testing.T) {
	outside := t.TempDir()
	put(t, outside, "50-seedkeeper-host", Header+"\nthe host's\n")
	root := t.TempDir()
	put(t, root, "/srv/real/50-seedkeeper-x", Header+"\n")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(filepath.Join(root, "etc"), outside)
	if err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"abs.d": outside, "rel.d": rel} {
		if err := os.Symlink(target, filepath.Join(root, "etc", name)); err != nil {
			t.Fatal(err)
		}
		got, err := Walk(root, Place{Dir: "/etc/" + name, Match: seedkeeperNamed})
		if err != nil || len(got) != 0 {
			t.Errorf("%s: reached %q, %v", name, describe(got), err)
		}
	}
	if err := os.Symlink("/srv/real", filepath.Join(root, "etc", "in.d")); err != nil {
		t.Fatal(err)
	}
	got, err := Walk(root, Place{Dir: "/etc/in.d", Match: seedkeeperNamed})
	if want := []string{"/srv/real/50-seedkeeper-x ours=yes"}; err != nil || !slices.Equal(describe(got), want) {
		t.Errorf("a link inside the root: %q, %v; want %q", describe(got), err, want)
	}
}

// A Place another package makes without its rule claims no file,
// whatever the file's header.
func TestPlaceZeroValueClaimsNothing(t *testing.T) {
	if (Place{Dir: "/run/systemd/network"}).Ours("05-seedkeeper-eth0.network", []byte(Header+"\n")) {
		t.Error("a Place without its rule claims a file")
	}
	if !(Place{Match: seedkeeperNamed}).Ours("50-seedkeeper", []byte(Header+"\n")) {
		t.Error("a file of our name with the header is not ours")
	}
}

// Duties registered under a name are found by it; a test's own goes
// away again, and a name nobody registered has no places.
func TestRegister(t *testing.T) {
	restore := Register("teststack-reg", Duties{Places: func(string) ([]Place, error) { return []Place{{Dir: "/x"}}, nil }})
	if pl, _ := Of("teststack-reg").Places(""); len(pl) != 1 {
		t.Errorf("registered places: %v", pl)
	}
	restore()
	if pl, err := Of("teststack-reg").Places(""); len(pl) != 0 || err != nil {
		t.Errorf("after restore: %v, %v", pl, err)
	}
	if r := Of("teststack-reg").Reload("", nil); len(r.Steps) != 0 || r.Note == "" {
		t.Errorf("an unregistered stack's reload: %+v", r)
	}
}

// Remove removes a file Walk found to be seedkeeper's only while it still
// holds what Walk read: a file edited since (its header kept, so it would
// still pass for seedkeeper's), or swapped for a link, is left, and the
// error says it changed; a file already gone says so.
func TestRemoveOnlyWhatWalkRead(t *testing.T) {
	root := t.TempDir()
	pl := Place{Dir: "/etc/net", Match: seedkeeperNamed}
	for _, n := range []string{"50-seedkeeper-a", "50-seedkeeper-b", "50-seedkeeper-c", "50-seedkeeper-d"} {
		put(t, root, "/etc/net/"+n, Header+"\nName=eth0\n")
	}
	found, err := Walk(root, pl)
	if err != nil || len(found) != 4 {
		t.Fatalf("Walk = %v, %v", describe(found), err)
	}
	const edited = Header + "\nName=eth0\n# the admin's line\n"
	put(t, root, "/etc/net/50-seedkeeper-b", edited)
	os.Remove(filepath.Join(root, "etc/net/50-seedkeeper-c"))
	os.Remove(filepath.Join(root, "etc/net/50-seedkeeper-d"))
	os.Symlink("50-seedkeeper-a", filepath.Join(root, "etc/net/50-seedkeeper-d"))

	if err := Remove(root, found[0]); err != nil {
		t.Errorf("Remove of an unchanged file: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/net/50-seedkeeper-a")); err == nil {
		t.Error("the unchanged file is still there")
	}
	if err := Remove(root, found[1]); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), found[1].Path) {
		t.Errorf("Remove of an edited file: %v, want ErrChanged naming it", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/net/50-seedkeeper-b")); string(b) != edited {
		t.Errorf("the edited file now holds %q", b)
	}
	if err := Remove(root, found[2]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove of a file gone: %v, want fs.ErrNotExist", err)
	}
	if err := Remove(root, found[3]); !errors.Is(err, ErrChanged) {
		t.Errorf("Remove of a file swapped for a link: %v, want ErrChanged", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/net/50-seedkeeper-d")); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
	if err := Remove(root, File{Path: "/etc/net/50-seedkeeper-b"}); !errors.Is(err, ErrChanged) {
		t.Errorf("Remove of a file Walk did not find to be ours: %v", err)
	}
}
