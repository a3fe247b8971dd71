package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/nohang"
)

// hostile builds an image root whose paths lead, by every trick, towards
// the host file secret (outside the root).
func hostile(t *testing.T) (root, secret string) {
	t.Helper()
	outside := t.TempDir()
	secret = filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("HOST SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	for _, d := range []string{"etc", "var/lib/cloud/data", "dir", "srv/deep"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/inside", "inside")
	write("srv/meta", "srv")
	link(secret, "abs")                        // absolute, to the host file
	link("../../../../../../../"+secret, "up") // relative, climbing out
	link("/etc/inside", "absin")               // absolute, inside
	link("loop", "loop")                       // a loop
	link("b", "a")
	link("a", "b")
	link("/srv/deep", "deep")
	link(outside, "var/lib/cloud/data/hostdir") // a directory on the host
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, secret
}

// forEachWalk runs fn with the kernel's confined lookup and with the
// portable walk: both must keep the same promises.
func forEachWalk(t *testing.T, fn func(t *testing.T)) {
	for _, w := range walks {
		t.Run(w.name, func(t *testing.T) {
			w.set(t)
			fn(t)
		})
	}
}

func TestReadFileInConfined(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, _ := hostile(t)
		ctx := context.Background()
		for _, tc := range []struct {
			p    string
			want string // content; "" expects an error
			err  error
		}{
			{p: "/etc/inside", want: "inside"},
			{p: "/absin", want: "inside"},
			{p: "/deep/../meta", want: "srv"}, // ".." of the link's target
			{p: "/../../etc/inside", want: "inside"},
			{p: "/abs", err: fs.ErrNotExist}, // resolved inside: no such file there
			{p: "/up", err: fs.ErrNotExist},
			{p: "/loop", err: syscall.ELOOP},
			{p: "/a", err: syscall.ELOOP},
			{p: "/var/lib/cloud/data/hostdir/secret", err: fs.ErrNotExist},
			{p: "/fifo", err: ErrNotRegular},
			{p: "/etc", err: ErrNotRegular},
		} {
			var b []byte
			var err error
			nohang.Run(t, "ReadFileIn "+tc.p, func() { b, err = ReadFileIn(ctx, root, tc.p, SmallFile) })
			if strings.Contains(string(b), "SECRET") {
				t.Fatalf("ReadFileIn(%s) read the host file", tc.p)
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Errorf("ReadFileIn(%s) = %q, %v; want %v", tc.p, b, err, tc.err)
				}
				if err != nil && !strings.Contains(err.Error(), tc.p) {
					t.Errorf("ReadFileIn(%s): the error does not name the path: %v", tc.p, err)
				}
				continue
			}
			if err != nil || string(b) != tc.want {
				t.Errorf("ReadFileIn(%s) = %q, %v; want %q", tc.p, b, err, tc.want)
			}
		}
		if _, err := ReadFileInNoFollow(ctx, root, "/absin", SmallFile); !errors.Is(err, ErrSymlink) {
			t.Errorf("ReadFileInNoFollow through a link: %v, want ErrSymlink", err)
		}
	})
}

func TestReadFileInBound(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "big"), make([]byte, 100), 0o644)
		_, err := ReadFileIn(context.Background(), root, "/big", 99)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "/big") || !strings.Contains(err.Error(), "99") {
			t.Errorf("an over-long file: %v; want ErrTooLarge naming the path and the limit", err)
		}
		if b, err := ReadFileIn(context.Background(), root, "/big", 100); err != nil || len(b) != 100 {
			t.Errorf("a file at the limit: %d bytes, %v", len(b), err)
		}
	})
}

func TestStatReadDirReadlinkIn(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, _ := hostile(t)
		if fi, err := StatIn(root, "/abs", false); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("StatIn(/abs, nofollow) = %v, %v; want the link", fi, err)
		}
		if _, err := StatIn(root, "/abs", true); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("StatIn(/abs, follow) = %v; want not found inside the root", err)
		}
		var fi fs.FileInfo
		var err error
		nohang.Run(t, "StatIn /fifo", func() { fi, err = StatIn(root, "/fifo", true) })
		if err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("StatIn(/fifo) = %v, %v", fi, err)
		}
		if _, err := ReadDirIn(root, "/var/lib/cloud/data/hostdir"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadDirIn through a link to a host directory: %v", err)
		}
		if _, err := ReadDirIn(root, "/fifo"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadDirIn(/fifo) = %v; want refused", err)
		}
		ents, err := ReadDirIn(root, "/deep/..")
		if err != nil || len(ents) != 2 || ents[0].Name() != "deep" || ents[1].Name() != "meta" {
			t.Errorf("ReadDirIn(/deep/..) = %v, %v; want /srv's entries", ents, err)
		}
		if tg, err := ReadlinkIn(root, "/absin"); err != nil || tg != "/etc/inside" {
			t.Errorf("ReadlinkIn(/absin) = %q, %v", tg, err)
		}
		if _, err := ReadlinkIn(root, "/etc/inside"); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("ReadlinkIn of a file: %v", err)
		}
	})
}

func TestRemoveInStatesTheKind(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, secret := hostile(t)
		// A file removal never removes a directory.
		if err := RemoveIn(root, "/etc", false); !errors.Is(err, ErrIsDir) {
			t.Errorf("RemoveIn(/etc, file) = %v; want ErrIsDir", err)
		}
		if _, err := os.Stat(filepath.Join(root, "etc/inside")); err != nil {
			t.Errorf("the directory lost its file: %v", err)
		}
		// A link is removed, never its target; the host file stays.
		if err := RemoveIn(root, "/abs", false); err != nil {
			t.Errorf("RemoveIn(/abs) = %v", err)
		}
		if _, err := os.Lstat(filepath.Join(root, "abs")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the link is still there: %v", err)
		}
		// A FIFO is unlinked without being opened.
		nohang.Run(t, "RemoveIn /fifo", func() { err := RemoveIn(root, "/fifo", false); _ = err })
		if _, err := os.Lstat(filepath.Join(root, "fifo")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the FIFO is still there: %v", err)
		}
		// A tree removal wants a directory, and never follows a link.
		if err := RemoveIn(root, "/deep", true); err == nil {
			t.Errorf("RemoveIn(/deep, tree) through a link succeeded")
		}
		if err := RemoveIn(root, "/deep/x", false); !errors.Is(err, ErrSymlink) {
			t.Errorf("RemoveIn with a link on the way = %v; want ErrSymlink", err)
		}
		if err := RemoveIn(root, "/var/lib/cloud", true); err != nil {
			t.Errorf("RemoveIn(/var/lib/cloud, tree) = %v", err)
		}
		if _, err := os.Stat(secret); err != nil {
			t.Errorf("the host file is gone: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(root, "var/lib/cloud")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the tree is still there: %v", err)
		}
		for _, p := range []string{"/", "relative", "/.."} {
			if err := RemoveIn(root, p, true); err == nil {
				t.Errorf("RemoveIn(%q) succeeded", p)
			}
		}
		if err := RemoveIn(root, "/missing", false); err != nil {
			t.Errorf("RemoveIn of a missing file = %v", err)
		}
	})
}

func TestTruncateIn(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, secret := hostile(t)
		os.WriteFile(filepath.Join(root, "etc/machine-id"), []byte("0123\n"), 0o444)
		if err := TruncateIn(root, "/etc/machine-id"); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(root, "etc/machine-id")); fi.Size() != 0 {
			t.Errorf("not emptied: %d bytes", fi.Size())
		}
		if err := TruncateIn(root, "/abs"); err == nil {
			t.Errorf("TruncateIn through a link succeeded")
		}
		nohang.Run(t, "TruncateIn /fifo", func() {
			if err := TruncateIn(root, "/fifo"); !errors.Is(err, ErrNotRegular) {
				t.Errorf("TruncateIn(/fifo) = %v; want ErrNotRegular", err)
			}
		})
		if b, _ := os.ReadFile(secret); string(b) != "HOST SECRET" {
			t.Errorf("the host file changed: %q", b)
		}
	})
}

func TestResolveIn(t *testing.T) {
	root, _ := hostile(t)
	for in, want := range map[string]string{
		"/absin":          "/etc/inside",
		"/deep/../meta":   "/srv/meta",
		"/../../etc/none": "/etc/none",
	} {
		if got, err := ResolveIn(root, in, true); err != nil || got != want {
			t.Errorf("ResolveIn(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := ResolveIn(root, "/deep/../absin", false); err != nil || got != "/srv/absin" {
		t.Errorf("ResolveIn(last not followed) = %q, %v", got, err)
	}
	for _, p := range []string{"/", "//", "/.", "/.."} {
		if got, err := ResolveIn(root, p, false); err != nil || got != "/" {
			t.Errorf("ResolveIn(%q, last not followed) = %q, %v; want /", p, got, err)
		}
	}
	if got, err := ResolveIn(root, "/deep/..", false); err != nil || got != "/srv" {
		t.Errorf("ResolveIn(/deep/.., last not followed) = %q, %v; want /srv", got, err)
	}
}

// FuzzOpenIn: whatever the path, the kernel's confined lookup and the
// portable walk find the same file, and neither leaves the root.
func FuzzOpenIn(f *testing.F) {
	root := f.TempDir()
	os.MkdirAll(filepath.Join(root, "a/b"), 0o755)
	os.WriteFile(filepath.Join(root, "a/b/f"), []byte("f"), 0o644)
	os.WriteFile(filepath.Join(root, "top"), []byte("t"), 0o644)
	os.Symlink("../../..", filepath.Join(root, "a/b/up"))
	os.Symlink("/a", filepath.Join(root, "a/abs"))
	os.Symlink("/top", filepath.Join(root, "a/b/t"))
	for _, s := range []string{"a/b/up/top", "../../top", "a/abs/b/../b/f", "//a//./b/f", "a/b/up/../../../../a/b/t", "a/b/f/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if strings.ContainsRune(p, 0) {
			return
		}
		for _, follow := range []bool{false, true} {
			if sys, err := ResolveIn(root, "/"+p, follow); err == nil && !strings.HasPrefix(sys, "/") {
				t.Fatalf("ResolveIn(%q, %v) = %q, not a system path", p, follow, sys)
			}
		}
		var ids []string
		for _, w := range walks {
			w.set(t)
			fh, err := OpenIn(root, "/"+p, Regular|Directory)
			if err != nil {
				ids = append(ids, "error")
				continue
			}
			fi, _ := fh.Stat()
			fh.Close()
			host, rerr := Resolve(root, "/"+p)
			if rerr != nil || (host != root && !strings.HasPrefix(host, root+"/")) {
				t.Fatalf("%s: OpenIn(%q) opened, but Resolve says %q, %v", w.name, p, host, rerr)
			}
			want, _ := os.Stat(host)
			if !os.SameFile(fi, want) {
				t.Fatalf("%s: OpenIn(%q) opened another file than Resolve names (%s)", w.name, p, host)
			}
			ids = append(ids, host)
		}
		for _, id := range ids[1:] {
			if id != ids[0] {
				t.Fatalf("OpenIn(%q): the walks disagree: %q", p, ids)
			}
		}
	})
}

func TestWriteFileInConfined(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, _ := hostile(t)
		outside, err := os.Readlink(filepath.Join(root, "var/lib/cloud/data/hostdir"))
		if err != nil {
			t.Fatal(err)
		}
		// Made, missing directories and all, inside the root.
		if err := WriteFileIn(root, "/var/lib/seedkeeper/sealed.json", []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "var/lib/seedkeeper/sealed.json")); err != nil || string(b) != "x\n" {
			t.Errorf("written: %q, %v", b, err)
		}
		// A link on the way, absolute or climbing out, is refused.
		for _, p := range []string{"/var/lib/cloud/data/hostdir/f", "/deep/f", "/abs", "/fifo", "/etc"} {
			if err := WriteFileIn(root, p, []byte("x"), 0o644); err == nil {
				t.Errorf("WriteFileIn %s succeeded", p)
			}
		}
		if _, err := os.Lstat(filepath.Join(outside, "f")); err == nil {
			t.Errorf("written outside the root")
		}
		if b, _ := os.ReadFile(filepath.Join(root, "srv/deep/f")); b != nil {
			t.Errorf("written through a link inside the root")
		}
	})
}

func TestNoLinkOnTheWayIn(t *testing.T) {
	forEachWalk(t, func(t *testing.T) {
		root, _ := hostile(t)
		for p, ok := range map[string]bool{
			"/srv/deep": true, "/srv/deep/missing/more": true, "/etc": true,
			"/deep": false, "/deep/x": false, "/var/lib/cloud/data/hostdir/x": false,
		} {
			if err := NoLinkOnTheWayIn(root, p); (err == nil) != ok {
				t.Errorf("NoLinkOnTheWayIn %s: %v", p, err)
			} else if !ok && !errors.Is(err, ErrSymlink) {
				t.Errorf("NoLinkOnTheWayIn %s: %v; want ErrSymlink", p, err)
			}
		}
		if err := NoLinkOnTheWayIn("", "/"); err != nil {
			t.Errorf("the real root: %v", err)
		}
	})
}

// The portable walk unlinks a file with unlinkFile: a file swapped for an
// empty directory between the check and the removal must stay.
func TestUnlinkFileNotADirectory(t *testing.T) {
	d := filepath.Join(t.TempDir(), "log")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unlinkFile(d); !errors.Is(err, ErrIsDir) {
		t.Errorf("unlinkFile of an empty directory: %v; want ErrIsDir", err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Errorf("the directory was removed: %v", err)
	}
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, nil, 0o644)
	if err := unlinkFile(f); err != nil {
		t.Errorf("unlinkFile of a file: %v", err)
	}
}

// WriteFileInAs writes a user's file owned by the user, with a missing
// last directory made the user's with its mode, and refuses a link as the
// file or as a directory on the way; both the kernel's walk and the one
// in user space.
func TestWriteFileInAs(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 4242, 4243
	}
	for _, portable := range []bool{false, true} {
		name := "openat2"
		if portable {
			name = "portable"
		}
		t.Run(name, func(t *testing.T) {
			write := WriteFileInAs
			if portable {
				write = func(root, p string, data []byte, perm, dirPerm fs.FileMode, uid, gid int) error {
					return portableWriteAs(root, p, data, perm, dirPerm, uid, gid)
				}
			}
			home := t.TempDir()
			if err := write(home, "/.ssh/authorized_keys", []byte("k\n"), 0o600, 0o700, uid, gid); err != nil {
				t.Fatal(err)
			}
			for p, mode := range map[string]fs.FileMode{".ssh": fs.ModeDir | 0o700, ".ssh/authorized_keys": 0o600} {
				fi, err := os.Lstat(filepath.Join(home, p))
				if err != nil {
					t.Fatal(err)
				}
				st := fi.Sys().(*syscall.Stat_t)
				if fi.Mode() != mode || int(st.Uid) != uid || int(st.Gid) != gid {
					t.Errorf("%s: %v %d:%d, want %v %d:%d", p, fi.Mode(), st.Uid, st.Gid, mode, uid, gid)
				}
			}
			secret := filepath.Join(t.TempDir(), "shadow")
			os.WriteFile(secret, []byte("s"), 0o600)
			os.Remove(filepath.Join(home, ".ssh/authorized_keys"))
			os.Symlink(secret, filepath.Join(home, ".ssh/authorized_keys"))
			if err := write(home, "/.ssh/authorized_keys", []byte("k\n"), 0o600, 0o700, uid, gid); !errors.Is(err, ErrSymlink) {
				t.Errorf("a link as the file: %v, want ErrSymlink", err)
			}
			other := t.TempDir()
			os.RemoveAll(filepath.Join(home, ".ssh"))
			os.Symlink(other, filepath.Join(home, ".ssh"))
			if err := write(home, "/.ssh/authorized_keys", []byte("k\n"), 0o600, 0o700, uid, gid); !errors.Is(err, ErrSymlink) {
				t.Errorf("a link as the directory: %v, want ErrSymlink", err)
			}
			if b, _ := os.ReadFile(secret); string(b) != "s" {
				t.Error("the link's target was written")
			}
			if ents, _ := os.ReadDir(other); len(ents) != 0 {
				t.Error("a file was written through the directory link")
			}
		})
	}
	if err := WriteFileInAs("/", "/tmp/x", nil, 0o600, 0o700, uid, gid); err == nil {
		t.Error("WriteFileInAs on the real root: no error")
	}
}

// The user-space walk gives a user's new file to the user before it is
// renamed into place, never by path after: the directory is the user's,
// who could put a hard link to another file in its place between the
// rename and a chown by path.
func TestPortableWriteAsOwnsBeforeRename(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 4242, 4243
	}
	home := t.TempDir()
	var seen []string
	beforeRename = func(tmp string) {
		fi, err := os.Lstat(tmp)
		if err != nil {
			t.Error(err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		seen = append(seen, fmt.Sprintf("%d:%d %v", st.Uid, st.Gid, fi.Mode()))
	}
	defer func() { beforeRename = nil }()
	if err := portableWriteAs(home, "/.ssh/authorized_keys", []byte("k\n"), 0o600, 0o700, uid, gid); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d:%d %v", uid, gid, fs.FileMode(0o600)); len(seen) != 1 || seen[0] != want {
		t.Errorf("the temporary file before the rename: %q, want %q", seen, want)
	}
}

// CreateFileIn writes a file that is absent, and refuses, writing
// nothing, when anything is there already: a file made after a plan read
// the path as absent is never overwritten. The real root's path (the
// machine's own, where the plan/apply of uninstall runs in production)
// keeps the same promise.
func TestCreateFileIn(t *testing.T) {
	check := func(t *testing.T, host string, create func(p string, data []byte) error) {
		t.Helper()
		if err := create("/etc/new/given", []byte("given\n")); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(host, "etc/new/given")); err != nil || string(b) != "given\n" {
			t.Errorf("written: %q, %v", b, err)
		}
		if err := os.WriteFile(filepath.Join(host, "etc/mine"), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("nowhere", filepath.Join(host, "etc/dangling")); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/etc/mine", "/etc/dangling", "/etc/new/given", "/etc/new"} {
			if err := create(p, []byte("overwritten\n")); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), p) {
				t.Errorf("CreateFileIn %s: %v, want an error naming it that is fs.ErrExist", p, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(host, "etc/mine")); string(b) != "mine\n" {
			t.Errorf("/etc/mine now holds %q", b)
		}
		if l, err := os.Readlink(filepath.Join(host, "etc/dangling")); err != nil || l != "nowhere" {
			t.Errorf("/etc/dangling now: %q, %v", l, err)
		}
		if b, _ := os.ReadFile(filepath.Join(host, "etc/new/given")); string(b) != "given\n" {
			t.Errorf("/etc/new/given now holds %q", b)
		}
		ents, _ := os.ReadDir(filepath.Join(host, "etc"))
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp-") {
				t.Errorf("a temporary file was left: %s", e.Name())
			}
		}
	}
	forEachWalk(t, func(t *testing.T) {
		root, _ := hostile(t)
		check(t, root, func(p string, data []byte) error { return CreateFileIn(root, p, data, 0o600) })
		// Confined as WriteFileIn is.
		for _, p := range []string{"/var/lib/cloud/data/hostdir/f", "/deep/f", "/abs"} {
			if err := CreateFileIn(root, p, []byte("x"), 0o600); err == nil {
				t.Errorf("CreateFileIn %s succeeded", p)
			}
		}
	})
	t.Run("real root", func(t *testing.T) {
		host := t.TempDir()
		check(t, host, func(p string, data []byte) error {
			_, err := writeFileAs(filepath.Join(host, p), data, 0o600, -1, -1, true)
			return err
		})
	})
	// A file made after the test at the start and before the new file is
	// put in place is not replaced: the kernel refuses the link.
	t.Run("made while writing", func(t *testing.T) {
		late := filepath.Join(t.TempDir(), "late")
		beforeRename = func(string) { os.WriteFile(late, []byte("late\n"), 0o644) }
		defer func() { beforeRename = nil }()
		if _, err := writeFileAs(late, []byte("given\n"), 0o600, -1, -1, true); !errors.Is(err, fs.ErrExist) {
			t.Errorf("writing over a file made meanwhile: %v, want fs.ErrExist", err)
		}
		if b, _ := os.ReadFile(late); string(b) != "late\n" {
			t.Errorf("the file made meanwhile now holds %q", b)
		}
		if ents, _ := os.ReadDir(filepath.Dir(late)); len(ents) != 1 {
			t.Errorf("left beside it: %v", ents)
		}
	})
}
