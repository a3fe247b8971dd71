package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Access under a root: every read, stat, listing and removal of a system
// path under a root that stands for "/" (an image given with --root) goes
// through the functions of this file, and they keep one set of promises:
//
//   - no symbolic link is followed out of the root: an absolute target
//     starts again at the root and ".." at the root stays there, as in a
//     chroot (Resolve spells the same walk as a path);
//   - no mount point inside the root is crossed (ErrCrossesMount), so a
//     bind mount cannot lead a read or a removal onto the host;
//   - nothing is opened for I/O unless it is of a kind the caller asked
//     for (regular files unless it says otherwise), and what is opened is
//     opened non-blocking and without becoming a controlling terminal: a
//     FIFO or a device node in the image cannot block or be read;
//   - a removal says which kind it removes: a file is unlinked, never a
//     directory; a tree is removed only when the caller asks for one, and
//     the walk never descends into a mount or follows a link.
//
// On Linux the kernel enforces the walk (openat2 with RESOLVE_IN_ROOT,
// RESOLVE_NO_XDEV and RESOLVE_NO_MAGICLINKS, Linux 5.6 and later); where it
// cannot, the same walk is done in user space, component by component,
// which leaves a window between the walk and the open that a process
// changing the image at the same time could use.
//
// The real root ("" or "/") is the machine itself: there links are
// followed as the kernel follows them and mounts are part of the system,
// but the kind checks and the non-blocking open hold the same.

// ErrCrossesMount is returned when a path under a root leads across a mount
// point inside it (a bind mount, or another file system mounted there).
var ErrCrossesMount = errors.New("crosses a mount point inside the root")

// ErrIsDir is returned when a removal of a file finds a directory.
var ErrIsDir = errors.New("is a directory")

// Kinds is the set of file kinds an in-root open accepts, plus NoFollow.
type Kinds uint8

// The kinds.
const (
	// Regular files.
	Regular Kinds = 1 << iota
	// Directory.
	Directory
	// NoFollow refuses a symbolic link as the last component (ErrSymlink)
	// instead of following it inside the root.
	NoFollow
	// BlockDevice: a block device (a disk, a partition, a CD-ROM), opened
	// read-only and non-blocking; never a character device.
	BlockDevice
)

func (k Kinds) accepts(m fs.FileMode) bool {
	return (k&Regular != 0 && m.IsRegular()) || (k&Directory != 0 && m.IsDir()) ||
		(k&BlockDevice != 0 && m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0)
}

func (k Kinds) String() string {
	var s []string
	if k&Regular != 0 {
		s = append(s, "a regular file")
	}
	if k&Directory != 0 {
		s = append(s, "a directory")
	}
	if k&BlockDevice != 0 {
		s = append(s, "a block device")
	}
	return strings.Join(s, " or ")
}

// isRealRoot reports whether root is the machine's own root.
func isRealRoot(root string) bool { return root == "" || filepath.Clean(root) == "/" }

// hostPath is the host path of the system path p under root, lexically.
func hostPath(root, p string) string {
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, filepath.FromSlash(path.Clean("/"+p)))
}

// OpenIn opens the system path p under root for reading, confined to the
// root as described above, and refuses it (ErrNotRegular, naming the kind
// found and the kind wanted) unless it is of a kind in want. Without
// NoFollow a link as the last component is followed inside the root.
func OpenIn(root, p string, want Kinds) (*os.File, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, &fs.PathError{Op: "open", Path: p, Err: errors.New("not an absolute path")}
	}
	f, err := openIn(root, p, want)
	if err != nil {
		return nil, inRootErr("opening", p, want, err)
	}
	return f, nil
}

// ReadFileIn reads the regular file at the system path p under root (see
// OpenIn; a link as the last component is followed inside the root), of
// at most limit bytes: a larger file is an error that names p and the
// limit, never a silent truncation.
func ReadFileIn(ctx context.Context, root, p string, limit int64) ([]byte, error) {
	return readIn(ctx, root, p, Regular, limit)
}

// ReadFileInNoFollow is ReadFileIn refusing a link as the last component:
// for seedkeeper's own state, which it never reads through a link.
func ReadFileInNoFollow(ctx context.Context, root, p string, limit int64) ([]byte, error) {
	return readIn(ctx, root, p, Regular|NoFollow, limit)
}

func readIn(ctx context.Context, root, p string, want Kinds, limit int64) ([]byte, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, &fs.PathError{Op: "reading", Path: p, Err: errors.New("not an absolute path")}
	}
	f, err := openIn(root, p, want)
	if err != nil {
		return nil, inRootErr("reading", p, want, err)
	}
	defer f.Close()
	return readAll(ctx, f, p, limit)
}

// StatIn returns what the system path p under root is, without opening it
// for I/O (a FIFO or a device is described, never opened). With follow, a
// link as the last component is followed inside the root; without it the
// link itself is described, as Lstat does.
func StatIn(root, p string, follow bool) (fs.FileInfo, error) {
	fi, err := statIn(root, p, follow)
	if err != nil {
		return nil, inRootErr("checking", p, 0, err)
	}
	return fi, nil
}

// ErrTooManyEntries is returned when a directory holds more entries than
// a listing takes.
var ErrTooManyEntries = errors.New("over the directory entry limit")

// maxDirEntries bounds a listing (ReadDirIn): a directory of an image may
// hold millions of entries, and a listing is held whole. A variable so
// that a test can lower it.
var maxDirEntries = 65536

// dirChunk is how many entries a directory is read at a time, by a listing
// and by a tree removal, which holds one chunk of names per level.
var dirChunk = 1024

// ReadDirIn lists the directory at the system path p under root (links
// followed inside the root), sorted by name. A directory of more than
// maxDirEntries entries is an error (ErrTooManyEntries) that names p and
// the bound; it is read a chunk at a time, so it costs no more than the
// bound and a chunk before it fails.
func ReadDirIn(root, p string) ([]fs.DirEntry, error) {
	return ReadDirInMax(root, p, maxDirEntries)
}

// ReadDirInMax is ReadDirIn with a bound of max entries, lower than
// maxDirEntries (an aggregate budget's remainder, when a command lists
// several directories): more is ErrTooManyEntries, after reading no
// more than max and a chunk.
func ReadDirInMax(root, p string, max int) ([]fs.DirEntry, error) {
	max = min(max, maxDirEntries)
	f, err := OpenIn(root, p, Directory)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ents []fs.DirEntry
	for {
		chunk, err := f.ReadDir(dirChunk)
		ents = append(ents, chunk...)
		if len(ents) > max {
			return nil, fmt.Errorf("listing %s: %w: more than %d entries", p, ErrTooManyEntries, max)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", p, err)
		}
	}
	sortEntries(ents)
	return ents, nil
}

// NotLinkedIn checks that the directory at the system path p under root,
// when it exists, is a directory and not a symbolic link (ErrSymlink):
// seedkeeper never follows a link to a directory of its own. A link on
// the way to p is followed inside the root, never out of it.
func NotLinkedIn(root, p string) error {
	fi, err := StatIn(root, p, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link; seedkeeper does not follow links to its own directories (remove the link): %w", p, ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("%s: not a directory (a %s)", p, Kind(fi.Mode()))
	}
	return nil
}

// ReadlinkIn returns the target of the symbolic link at the system path p
// under root (fs.ErrInvalid when p is not a link).
func ReadlinkIn(root, p string) (string, error) {
	t, err := readlinkIn(root, p)
	if err != nil {
		return "", inRootErr("reading the link", p, 0, err)
	}
	return t, nil
}

// RemoveIn removes the system path p under root, which must already be
// resolved (no link on the way: one that appeared is refused; on the real
// root the machine's own links on the way are followed). With tree
// false p must not be a directory (ErrIsDir): a file, a link (removed, not
// followed), or a special file is unlinked. With tree true p must be a
// directory, removed with all it holds; links inside are removed, never
// followed, and a mount point inside it is neither crossed nor removed
// (ErrCrossesMount, after the rest is gone). A p that is itself a mount
// point is refused. A missing p is not an error.
func RemoveIn(root, p string, tree bool) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) == "/" {
		return fmt.Errorf("removing %s: not a path below the root", p)
	}
	if err := removeIn(root, path.Clean(p), tree); err != nil {
		return inRootErr("removing", p, 0, err)
	}
	return nil
}

// RemoveEmptyDirIn removes the directory at the system path p under root,
// which must already be resolved (no link on the way), only when it is
// empty: it reports whether it removed it. A directory that holds
// anything is left (false, nil), as is a missing one; what is not a
// directory is an error naming its kind.
func RemoveEmptyDirIn(root, p string) (bool, error) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) == "/" {
		return false, fmt.Errorf("removing %s: not a path below the root", p)
	}
	gone, err := removeEmptyDirIn(root, path.Clean(p))
	if err != nil {
		return false, inRootErr("removing", p, 0, err)
	}
	return gone, nil
}

// portableRemoveEmptyDir is removeEmptyDirIn done in user space.
func portableRemoveEmptyDir(root, p string) (bool, error) {
	if err := NoLinkOnTheWayIn(root, p); err != nil {
		return false, err
	}
	fi, host, err := portableStat(root, p, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, &kindError{fi.Mode()}
	}
	if err := os.Remove(host); err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotEmpty(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// MkdirIn makes sure the system path p under root is a directory: when
// it is absent it is made with exactly perm (past the umask; missing
// directories above it are made 0755), and an existing one is brought to
// perm only with setPerm. It reports whether it made p. Every directory on
// the way is opened one component at a time and a link is refused
// (ErrSymlink), also on the real root for p itself: seedkeeper's own
// directories are never followed through a link.
func MkdirIn(root, p string, perm fs.FileMode, setPerm bool) (bool, error) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) == "/" {
		return false, fmt.Errorf("making %s: not a path below the root", p)
	}
	made, err := mkdirIn(root, path.Clean(p), perm, setPerm)
	if err != nil {
		return false, inRootErr("making", p, 0, err)
	}
	return made, nil
}

// portableMkdir is mkdirIn done in user space.
func portableMkdir(root, p string, perm fs.FileMode, setPerm bool) (bool, error) {
	if err := NoLinkOnTheWayIn(root, p); err != nil {
		return false, err
	}
	proot, err := portableRoot(root)
	if err != nil {
		return false, err
	}
	host := hostPath(proot, p)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return false, err
	}
	made := false
	if err := os.Mkdir(host, perm.Perm()); err == nil {
		made = true
	} else if !errors.Is(err, fs.ErrExist) {
		return false, err
	}
	fi, err := os.Lstat(host)
	switch {
	case err != nil:
		return false, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return false, ErrSymlink
	case !fi.IsDir():
		return false, &kindError{fi.Mode()}
	}
	if made || setPerm {
		return made, os.Chmod(host, perm.Perm())
	}
	return made, nil
}

// RenameIn renames the system path from to the name to in the same
// directory under root (already resolved: a link on the way is refused),
// replacing what is there as rename(2) does (a directory only when it is
// empty: otherwise an error that is fs.ErrExist), and syncs the directory.
func RenameIn(root, from, to string) error {
	from, to = path.Clean(from), path.Clean(to)
	if !strings.HasPrefix(from, "/") || from == "/" || path.Dir(from) != path.Dir(to) {
		return fmt.Errorf("renaming %s to %s: not two names in one directory below the root", from, to)
	}
	if err := renameIn(root, from, to); err != nil {
		return inRootErr("renaming", from, 0, err)
	}
	return nil
}

// portableRename is renameIn done in user space.
func portableRename(root, from, to string) error {
	if err := NoLinkOnTheWayIn(root, path.Dir(from)); err != nil {
		return err
	}
	proot, err := portableRoot(root)
	if err != nil {
		return err
	}
	if err := os.Rename(hostPath(proot, from), hostPath(proot, to)); err != nil {
		return err
	}
	return SyncDir(hostPath(proot, path.Dir(from)))
}

// SyncDirIn syncs the directory at the system path p under root, so that
// a removal or a rename in it lasts.
func SyncDirIn(root, p string) error {
	f, err := OpenIn(root, p, Directory)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", p, err)
	}
	return nil
}

// TruncateIn empties the regular file at the system path p under root,
// which must already be resolved (no link on the way), and syncs it.
func TruncateIn(root, p string) error {
	if err := truncateIn(root, p); err != nil {
		return inRootErr("emptying", p, 0, err)
	}
	return nil
}

// WriteFileIn makes the system path p under root hold exactly data with
// mode perm, atomically (a temporary file in the same directory, synced,
// renamed over p, the directory synced). Missing directories on the way
// are made 0755. The directories are checked as they are opened, one
// component at a time: a link on the way is refused (ErrSymlink), and
// under an image root so is a mount (ErrCrossesMount), so a directory
// swapped for a link after a plan was made cannot lead the write out of
// the root. A link, a directory or a special file at p itself is refused.
// On the real root this is WriteFile: the system's own links on the way
// are followed, and only the last directory and p must not be links.
func WriteFileIn(root, p string, data []byte, perm fs.FileMode) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) == "/" {
		return fmt.Errorf("writing %s: not a path below the root", p)
	}
	if isRealRoot(root) {
		_, err := WriteFile(path.Clean(p), data, perm)
		return err
	}
	if err := writeIn(root, path.Clean(p), data, perm, false); err != nil {
		return inRootErr("writing", p, 0, err)
	}
	return nil
}

// CreateFileIn is WriteFileIn for a file that must not be there yet: when
// anything is at p (a file, a link, a directory) it writes nothing and
// returns an error wrapping fs.ErrExist. The kernel makes the test as the
// new file is put in place (a hard link, which never replaces, where
// WriteFileIn renames), so a file made at p after a plan was read is
// never overwritten, however late it came.
func CreateFileIn(root, p string, data []byte, perm fs.FileMode) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) == "/" {
		return fmt.Errorf("writing %s: not a path below the root", p)
	}
	if isRealRoot(root) {
		_, err := writeFileAs(path.Clean(p), data, perm, -1, -1, true)
		return err
	}
	if err := writeIn(root, path.Clean(p), data, perm, true); err != nil {
		return inRootErr("writing", p, 0, err)
	}
	return nil
}

// WriteFileInAs is WriteFileIn for a file that belongs to a user (an
// authorized_keys file in a home): the temporary file is made owned by
// uid:gid before anything is written to it, so no path ever names the
// new content owned by anyone else, and a missing last directory is made
// with dirPerm and owned by uid:gid (those above it are made 0755, as
// WriteFileIn makes them). Unlike WriteFileIn it confines the walk even
// on the real root: root is then the directory the user may change (the
// home), and a link on the way inside it is refused, never followed.
func WriteFileInAs(root, p string, data []byte, perm, dirPerm fs.FileMode, uid, gid int) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) == "/" {
		return fmt.Errorf("writing %s: not a path below the root", p)
	}
	if isRealRoot(root) {
		return fmt.Errorf("writing %s: a file of a user's is written under the user's directory as the root, not under /", p)
	}
	if err := writeInAs(root, path.Clean(p), data, perm, dirPerm, uid, gid); err != nil {
		return inRootErr("writing", p, 0, err)
	}
	return nil
}

// portableWriteAs is writeInAs done in user space: the last directory is
// made and owned first, then the file written as portableWrite writes it,
// the temporary file given to the user by its descriptor before the
// rename; nothing is changed by path after it.
func portableWriteAs(root, p string, data []byte, perm, dirPerm fs.FileMode, uid, gid int) error {
	proot, err := portableRoot(root)
	if err != nil {
		return err
	}
	if dir := path.Dir(p); dir != "/" {
		if err := NoLinkOnTheWayIn(root, path.Dir(dir)); err != nil {
			return err
		}
		host := hostPath(proot, dir)
		fi, err := os.Lstat(host)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err = os.Mkdir(host, dirPerm.Perm()); err == nil {
				if err = os.Lchown(host, uid, gid); err == nil {
					err = os.Chmod(host, dirPerm.Perm())
				}
			}
			if err != nil {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w", dir, ErrSymlink)
		}
	}
	return portableWriteOwned(root, p, data, perm, uid, gid, false)
}

// NoLinkOnTheWayIn checks, for code that writes under root by plain
// paths, that the directory dir and every directory above it is, inside
// root, no symbolic link (ErrSymlink) and no mount point (ErrCrossesMount);
// missing ones are fine (they are made as directories). On the real root
// it checks nothing: the system's own links are followed there.
func NoLinkOnTheWayIn(root, dir string) error {
	if isRealRoot(root) {
		return nil
	}
	for d := path.Clean("/" + dir); d != "/"; d = path.Dir(d) {
		fi, err := StatIn(root, d, false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w (a link on the way under the root; it is not followed)", d, ErrSymlink)
		}
	}
	return nil
}

// ResolveIn returns the system path (inside root, not the host path) that
// p names under root, resolved as Resolve does. Without followLast the
// last component is not followed: the result names a link itself.
func ResolveIn(root, p string, followLast bool) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", &fs.PathError{Op: "resolve", Path: p, Err: errors.New("not an absolute path")}
	}
	if !followLast {
		dir, base := splitLast(p)
		if base != "" {
			d, err := ResolveIn(root, dir, true)
			if err != nil {
				return "", err
			}
			return path.Join(d, base), nil
		}
	}
	host, err := Resolve(root, p)
	if err != nil {
		return "", err
	}
	if isRealRoot(root) {
		return host, nil
	}
	rel, err := filepath.Rel(filepath.Clean(root), host)
	if err != nil {
		return "", err
	}
	return path.Clean("/" + filepath.ToSlash(rel)), nil
}

// splitLast splits p into the directory part and a last component that
// names an entry ("" when the last component is "", "." or "..", which
// name a directory whatever the links).
func splitLast(p string) (dir, base string) {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "/", ""
	}
	i := strings.LastIndex(p, "/")
	dir, base = p[:i], p[i+1:]
	if base == "." || base == ".." {
		return p, ""
	}
	if dir == "" {
		dir = "/"
	}
	return dir, base
}

// inRootErr words an error of an in-root operation: it names the system
// path and, for a refused kind, what was found and what was wanted.
func inRootErr(op, p string, want Kinds, err error) error {
	var ke *kindError
	switch {
	case errors.As(err, &ke):
		if k := want &^ NoFollow; k == 0 || k == Regular {
			return fmt.Errorf("%s %s: %w (%s)", op, p, ErrNotRegular, Kind(ke.mode))
		}
		return fmt.Errorf("%s %s: %w (%s, want %s)", op, p, ErrNotRegular, Kind(ke.mode), want&^NoFollow)
	case errors.Is(err, ErrCrossesMount), errors.Is(err, ErrSymlink), errors.Is(err, ErrIsDir):
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	return &fs.PathError{Op: op, Path: p, Err: unwrapPathErr(err)}
}

// kindError is a file of a kind the caller did not ask for.
type kindError struct{ mode fs.FileMode }

func (e *kindError) Error() string { return Kind(e.mode) }

// Portable walk: the fallback where the kernel cannot confine the lookup.

// portableStat resolves p under root in user space and describes it,
// refusing a mount crossing by comparing devices with the root's.
func portableStat(root, p string, follow bool) (fs.FileInfo, string, error) {
	root, err := portableRoot(root)
	if err != nil {
		return nil, "", err
	}
	sys, err := ResolveIn(root, p, follow)
	if err != nil {
		return nil, "", err
	}
	host := hostPath(root, sys)
	fi, err := os.Lstat(host)
	if err != nil {
		return nil, "", err
	}
	if !isRealRoot(root) {
		if err := portableSameDev(root, sys); err != nil {
			return nil, "", err
		}
	}
	return fi, host, nil
}

// portableRoot spells an image root as the mount table names mounts:
// absolute, with no link in it. A relative root, or one reached through a
// link, would otherwise match no mount point, and a bind mount within one
// file system (same device) would be crossed unseen.
func portableRoot(root string) (string, error) {
	if isRealRoot(root) {
		return root, nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// portableSameDev checks that every component from root down to sys is
// on the root's device and is no mount point the system lists (a bind
// mount within one file system keeps the device).
func portableSameDev(root, sys string) error {
	rfi, err := os.Stat(root)
	if err != nil {
		return err
	}
	rdev, _ := devOf(rfi)
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	cur := "/"
	for _, c := range strings.Split(strings.Trim(sys, "/"), "/") {
		if c == "" {
			continue
		}
		cur = path.Join(cur, c)
		host := hostPath(root, cur)
		fi, err := os.Lstat(host)
		if err != nil {
			return nil // a missing component: the open reports it
		}
		if isMountPoint(mounts, host, fi, rdev) {
			return ErrCrossesMount
		}
	}
	return nil
}

// isMountPoint reports whether the file fi at host is a mount point: on
// another device than its parent's dev, or listed by the system.
func isMountPoint(mounts map[string]bool, host string, fi fs.FileInfo, dev uint64) bool {
	if d, ok := devOf(fi); ok && d != dev {
		return true
	}
	return mounts[filepath.Clean(host)]
}

func portableOpen(root, p string, want Kinds) (*os.File, error) {
	fi, host, err := portableStat(root, p, want&NoFollow == 0)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, ErrSymlink
	}
	if !want.accepts(fi.Mode()) {
		return nil, &kindError{fi.Mode()}
	}
	f, err := os.OpenFile(host, os.O_RDONLY|oNonblock|oNoCTTY|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	got, err := f.Stat()
	if err != nil || !os.SameFile(fi, got) {
		f.Close()
		return nil, errors.New("changed while it was being opened")
	}
	return f, nil
}

func portableRemove(root, p string, tree bool) error {
	root, err := portableRoot(root)
	if err != nil {
		return err
	}
	if sys, err := ResolveIn(root, p, false); err != nil {
		return err
	} else if isRealRoot(root) {
		p = sys // the machine's own links on the way are followed
	} else if sys != p {
		return ErrSymlink
	}
	fi, host, err := portableStat(root, p, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir() && !tree:
		return ErrIsDir
	case !fi.IsDir() && tree:
		return errors.New("not a directory")
	case !tree:
		return unlinkFile(host)
	}
	dev, _ := devOf(fi)
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	return portableRemoveTree(host, dev, mounts)
}

// portableRemoveTree removes the directory dir (on device dev) and what it
// holds, never following a link and never entering another device.
// It reads the directory a chunk at a time and removes each chunk before
// the next, so that it holds one chunk of names per level.
func portableRemoveTree(dir string, dev uint64, mounts map[string]bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	var errs []error
	for {
		ents, err := f.ReadDir(dirChunk)
		if len(ents) == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				errs = append(errs, err)
			}
			break
		}
		if rerr := portableRemoveEntries(dir, ents, dev, mounts); rerr != nil {
			errs = append(errs, rerr)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				errs = append(errs, err)
			}
			break
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.Remove(dir)
}

// portableRemoveEntries removes the entries ents of the directory dir.
func portableRemoveEntries(dir string, ents []fs.DirEntry, dev uint64, mounts map[string]bool) error {
	var errs []error
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if isMountPoint(mounts, p, fi, dev) {
			errs = append(errs, fmt.Errorf("%s: %w", e.Name(), ErrCrossesMount))
			continue
		}
		if fi.IsDir() {
			if err := portableRemoveTree(p, dev, mounts); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := unlinkFile(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func portableTruncate(root, p string) error {
	root, err := portableRoot(root)
	if err != nil {
		return err
	}
	if sys, err := ResolveIn(root, p, false); err != nil {
		return err
	} else if isRealRoot(root) {
		p = sys // the machine's own links on the way are followed
	} else if sys != p {
		return ErrSymlink
	}
	f, err := portableOpen(root, p, Regular|NoFollow)
	if err != nil {
		return err
	}
	f.Close()
	w, err := os.OpenFile(hostPath(root, p), os.O_WRONLY|oNonblock|oNoCTTY|oNoFollow, 0)
	if err != nil {
		return err
	}
	if err := w.Truncate(0); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func portableWrite(root, p string, data []byte, perm fs.FileMode, excl bool) error {
	return portableWriteOwned(root, p, data, perm, -1, -1, excl)
}

// portableWriteOwned is portableWrite with the new file given to uid:gid
// before it is renamed into place (-1 keeps the writer's).
func portableWriteOwned(root, p string, data []byte, perm fs.FileMode, uid, gid int, excl bool) error {
	root, err := portableRoot(root)
	if err != nil {
		return err
	}
	cur := "/"
	for _, c := range strings.Split(strings.Trim(path.Dir(p), "/"), "/") {
		if c == "" {
			continue
		}
		cur = path.Join(cur, c)
		host := hostPath(root, cur)
		fi, err := os.Lstat(host)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(host, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			fi, err = os.Lstat(host)
		}
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w", cur, ErrSymlink)
		case !fi.IsDir():
			return &kindError{fi.Mode()}
		}
	}
	if !isRealRoot(root) {
		if err := portableSameDev(root, p); err != nil {
			return err
		}
	}
	_, err = writeFileAs(hostPath(root, p), data, perm, uid, gid, excl)
	return err
}

func portableReadlink(root, p string) (string, error) {
	fi, host, err := portableStat(root, p, false)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", fs.ErrInvalid
	}
	return os.Readlink(host)
}

func sortEntries(ents []fs.DirEntry) {
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}
