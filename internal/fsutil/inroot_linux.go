//go:build linux

package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 is found missing (Linux before 5.6, or a
// seccomp filter that refuses it): the portable walk is used from then on.
var noOpenat2 atomic.Bool

// probed is set once openat2 answered.
var probed atomic.Bool

// resolveFlags are the openat2 lookup rules for root: confined to it and
// on its own mount for an image, only no magic links (/proc/self/fd/...)
// on the machine itself.
func resolveFlags(root string) uint64 {
	if isRealRoot(root) {
		return unix.RESOLVE_NO_MAGICLINKS
	}
	return unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS
}

// beneath are the lookup rules for a name inside a directory already
// opened: no link, no mount, nothing above it.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openat2(dirfd int, p string, flags, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolve}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, p, &how)
		// EAGAIN: a rename raced with a confined lookup; try again.
		if err == unix.EINTR || (err == unix.EAGAIN && i < 16) {
			continue
		}
		return fd, mapErrno(err)
	}
}

func mapErrno(err error) error {
	switch err {
	case nil:
		return nil
	case unix.EXDEV:
		return ErrCrossesMount
	}
	return err
}

// rel turns a system path into a name relative to the root's descriptor.
func rel(p string) string {
	if r := strings.TrimLeft(p, "/"); r != "" {
		return r
	}
	return "."
}

// withRoot opens root as a descriptor for the walk and calls fn with it.
// ok is false when openat2 is not available.
func withRoot(root string, fn func(rfd int) error) (ok bool, err error) {
	if noOpenat2.Load() {
		return false, nil
	}
	if root == "" {
		root = "/"
	}
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rfd)
	// Probe once: ENOSYS (or EPERM from a seccomp filter) means no openat2.
	if !probed.Load() {
		fd, err := openat2(rfd, ".", unix.O_PATH, 0)
		if err == unix.ENOSYS || err == unix.EPERM {
			noOpenat2.Store(true)
			return false, nil
		}
		if err == nil {
			unix.Close(fd)
			probed.Store(true)
		}
	}
	return true, fn(rfd)
}

// pathFD opens p under rfd with O_PATH (never opened for I/O) and returns
// it with what it is.
func pathFD(rfd int, root, p string, follow bool) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	flags := uint64(unix.O_PATH)
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := openat2(rfd, rel(p), flags, resolveFlags(root))
	if err != nil {
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	return fd, st, nil
}

func openIn(root, p string, want Kinds) (*os.File, error) {
	var f *os.File
	ok, err := withRoot(root, func(rfd int) error {
		pfd, st, err := pathFD(rfd, root, p, want&NoFollow == 0)
		if err != nil {
			return err
		}
		unix.Close(pfd)
		m := modeOf(st.Mode)
		if m&fs.ModeSymlink != 0 {
			return ErrSymlink
		}
		if !want.accepts(m) {
			return &kindError{m}
		}
		flags := uint64(unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY)
		if want&NoFollow != 0 {
			flags |= unix.O_NOFOLLOW
		}
		if m.IsDir() {
			flags |= unix.O_DIRECTORY
		}
		fd, err := openat2(rfd, rel(p), flags, resolveFlags(root))
		if err != nil {
			return err
		}
		var got unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
			unix.Close(fd)
			return errors.New("changed while it was being opened")
		}
		f = os.NewFile(uintptr(fd), p)
		return nil
	})
	if !ok {
		return portableOpen(root, p, want)
	}
	return f, err
}

func statIn(root, p string, follow bool) (fs.FileInfo, error) {
	var fi fs.FileInfo
	ok, err := withRoot(root, func(rfd int) error {
		fd, _, err := pathFD(rfd, root, p, follow)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), p)
		defer f.Close()
		fi, err = f.Stat()
		return err
	})
	if !ok {
		fi, _, err = portableStat(root, p, follow)
	}
	return fi, err
}

func readlinkIn(root, p string) (string, error) {
	var target string
	ok, err := withRoot(root, func(rfd int) error {
		fd, st, err := pathFD(rfd, root, p, false)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if modeOf(st.Mode)&fs.ModeSymlink == 0 {
			return fs.ErrInvalid
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return err
		}
		target = string(buf[:n])
		return nil
	})
	if !ok {
		return portableReadlink(root, p)
	}
	return target, err
}

// parentFD opens the directory of the resolved path p under rfd, refusing
// a link on the way under an image root (it would mean the path changed
// since it was resolved); on the real root the machine's own links on the
// way are followed, as the kernel follows them.
func parentFD(rfd int, root, p string) (int, string, error) {
	dir, base := path.Dir(p), path.Base(p)
	flags := resolveFlags(root)
	if !isRealRoot(root) {
		flags |= unix.RESOLVE_NO_SYMLINKS
	}
	fd, err := openat2(rfd, rel(dir), unix.O_RDONLY|unix.O_DIRECTORY, flags)
	if err == unix.ELOOP {
		err = fmt.Errorf("a symbolic link on the way to it: %w", ErrSymlink)
	}
	return fd, base, err
}

// entryAt opens the directory of the system path p and describes its last
// component without following it. A dfd of -1 with a nil error means p is
// not there; otherwise the caller closes dfd.
func entryAt(rfd int, root, p string) (int, string, unix.Stat_t, error) {
	var st unix.Stat_t
	dfd, base, err := parentFD(rfd, root, p)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, "", st, nil
	}
	if err != nil {
		return -1, "", st, err
	}
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err {
	case nil:
		return dfd, base, st, nil
	case unix.ENOENT:
		unix.Close(dfd)
		return -1, "", st, nil
	default:
		unix.Close(dfd)
		return -1, "", st, err
	}
}

func removeIn(root, p string, tree bool) error {
	ok, err := withRoot(root, func(rfd int) error {
		dfd, base, st, err := entryAt(rfd, root, p)
		if dfd < 0 || err != nil {
			return err // nil: p is not there
		}
		defer unix.Close(dfd)
		// A mount point (a bind-mounted file or directory) is refused
		// whatever its kind: the lookup of it alone crosses the mount.
		fd, err := openat2(dfd, base, unix.O_PATH|unix.O_NOFOLLOW, beneath)
		if err != nil {
			return err
		}
		unix.Close(fd)
		isDir := modeOf(st.Mode).IsDir()
		switch {
		case isDir && !tree:
			return ErrIsDir
		case !isDir && tree:
			return errors.New("not a directory")
		case !tree:
			return unix.Unlinkat(dfd, base, 0)
		}
		return removeTreeAt(dfd, base)
	})
	if !ok {
		return portableRemove(root, p, tree)
	}
	return err
}

func removeEmptyDirIn(root, p string) (bool, error) {
	var gone bool
	ok, err := withRoot(root, func(rfd int) error {
		dfd, base, st, err := entryAt(rfd, root, p)
		if dfd < 0 || err != nil {
			return err // nil: p is not there
		}
		defer unix.Close(dfd)
		if m := modeOf(st.Mode); !m.IsDir() {
			return &kindError{m}
		}
		fd, err := openat2(dfd, base, unix.O_PATH|unix.O_NOFOLLOW, beneath)
		if err != nil {
			return err
		}
		unix.Close(fd)
		switch err := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); err {
		case nil:
			gone = true
		case unix.ENOTEMPTY, unix.EEXIST, unix.ENOENT:
		default:
			return err
		}
		return nil
	})
	if !ok {
		return portableRemoveEmptyDir(root, p)
	}
	return gone, err
}

func mkdirIn(root, p string, perm fs.FileMode, setPerm bool) (bool, error) {
	if isRealRoot(root) {
		// The machine's own links on the way are followed.
		return portableMkdir(root, p, perm, setPerm)
	}
	made := false
	ok, err := withRoot(root, func(rfd int) error {
		dfd, err := mkdirsAt(rfd, root, path.Dir(p))
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		base := path.Base(p)
		switch err := unix.Mkdirat(dfd, base, uint32(perm.Perm())); err {
		case nil:
			made = true
		case unix.EEXIST:
		default:
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		switch m := modeOf(st.Mode); {
		case m&fs.ModeSymlink != 0:
			return ErrSymlink
		case !m.IsDir():
			return &kindError{m}
		}
		fd, err := openat2(dfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, beneath)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if made || setPerm {
			return unix.Fchmod(fd, uint32(perm.Perm()))
		}
		return nil
	})
	if !ok {
		return portableMkdir(root, p, perm, setPerm)
	}
	return made, err
}

func renameIn(root, from, to string) error {
	ok, err := withRoot(root, func(rfd int) error {
		dfd, base, err := parentFD(rfd, root, from)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		if err := unix.Renameat(dfd, base, dfd, path.Base(to)); err != nil {
			return err
		}
		return unix.Fsync(dfd)
	})
	if !ok {
		return portableRename(root, from, to)
	}
	return err
}

func isNotEmpty(err error) bool {
	return errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST)
}

// removeTreeAt removes the directory name in the directory dfd and all it
// holds, never following a link and never entering a mount. What cannot be
// removed is reported by name, and the rest still goes. The directory is
// read a chunk at a time and each chunk removed before the next, so that
// the walk holds one chunk of names per level.
func removeTreeAt(dfd int, name string) error {
	fd, err := openat2(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, beneath)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var errs []error
	for {
		ents, err := f.ReadDir(dirChunk)
		if len(ents) == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			break
		}
		if rerr := removeEntriesAt(fd, name, ents); rerr != nil {
			errs = append(errs, rerr)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			break
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// removeEntriesAt removes the entries ents of the directory fd, which is
// name in errors.
func removeEntriesAt(fd int, name string, ents []fs.DirEntry) error {
	var errs []error
	for _, e := range ents {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err != unix.ENOENT {
				errs = append(errs, fmt.Errorf("%s/%s: %w", name, e.Name(), err))
			}
			continue
		}
		if modeOf(st.Mode).IsDir() {
			if err := removeTreeAt(fd, e.Name()); err != nil {
				errs = append(errs, fmt.Errorf("%s/%w", name, err))
			}
			continue
		}
		if err := unix.Unlinkat(fd, e.Name(), 0); err != nil && err != unix.ENOENT {
			if err == unix.EBUSY {
				err = ErrCrossesMount
			}
			errs = append(errs, fmt.Errorf("%s/%s: %w", name, e.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func truncateIn(root, p string) error {
	ok, err := withRoot(root, func(rfd int) error {
		dfd, base, err := parentFD(rfd, root, p)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		pfd, err := openat2(dfd, base, unix.O_PATH|unix.O_NOFOLLOW, beneath)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		err = unix.Fstat(pfd, &st)
		unix.Close(pfd)
		if err != nil {
			return err
		}
		if m := modeOf(st.Mode); !m.IsRegular() {
			return &kindError{m}
		}
		fd, err := openat2(dfd, base, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOFOLLOW, beneath)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var got unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
			return errors.New("changed while it was being opened")
		}
		if err := unix.Ftruncate(fd, 0); err != nil {
			return err
		}
		return unix.Fsync(fd)
	})
	if !ok {
		return portableTruncate(root, p)
	}
	return err
}

// stepFlags are the lookup rules for one component below a directory
// already opened: no link, nothing above it, and under an image no mount.
func stepFlags(root string) uint64 {
	if isRealRoot(root) {
		return unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
	}
	return beneath
}

func writeIn(root, p string, data []byte, perm fs.FileMode, excl bool) error {
	ok, err := withRoot(root, func(rfd int) error {
		dfd, err := mkdirsAt(rfd, root, path.Dir(p))
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		return writeAtAs(dfd, path.Base(p), data, perm, -1, -1, excl)
	})
	if !ok {
		return portableWrite(root, p, data, perm, excl)
	}
	return err
}

func writeInAs(root, p string, data []byte, perm, dirPerm fs.FileMode, uid, gid int) error {
	ok, err := withRoot(root, func(rfd int) error {
		dir := path.Dir(p)
		pfd, err := mkdirsAt(rfd, root, path.Dir(dir))
		if err != nil {
			return err
		}
		defer unix.Close(pfd)
		dfd := pfd
		if last := path.Base(dir); dir != "/" {
			const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW
			dfd, err = openat2(pfd, last, flags, stepFlags(root))
			if err == unix.ENOENT {
				if err = unix.Mkdirat(pfd, last, uint32(dirPerm.Perm())); err == nil {
					if dfd, err = openat2(pfd, last, flags, stepFlags(root)); err == nil {
						// Made here: the user's, with exactly dirPerm.
						if err = unix.Fchown(dfd, uid, gid); err == nil {
							err = unix.Fchmod(dfd, uint32(dirPerm.Perm()))
						}
						if err != nil {
							unix.Close(dfd)
						}
					}
				}
			}
			if err == unix.ENOTDIR {
				// O_DIRECTORY may answer first for a link: say which.
				var st unix.Stat_t
				if unix.Fstatat(pfd, last, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && modeOf(st.Mode)&fs.ModeSymlink != 0 {
					err = unix.ELOOP
				}
			}
			switch {
			case err == unix.ELOOP:
				return fmt.Errorf("%s: %w", last, ErrSymlink)
			case err != nil:
				return fmt.Errorf("%s: %w", last, err)
			}
			defer unix.Close(dfd)
		}
		return writeAtAs(dfd, path.Base(p), data, perm, uid, gid, false)
	})
	if !ok {
		return portableWriteAs(root, p, data, perm, dirPerm, uid, gid)
	}
	return err
}

// mkdirsAt opens the directory dir under rfd for writing in, one component
// at a time, making the missing ones 0755: each step refuses a link and,
// under an image, a mount.
func mkdirsAt(rfd int, root, dir string) (int, error) {
	fd, err := openat2(rfd, ".", unix.O_RDONLY|unix.O_DIRECTORY, resolveFlags(root))
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW
		next, err := openat2(fd, c, flags, stepFlags(root))
		if err == unix.ENOENT {
			if err = unix.Mkdirat(fd, c, 0o755); err == nil || err == unix.EEXIST {
				next, err = openat2(fd, c, flags, stepFlags(root))
			}
		}
		if err == unix.ENOTDIR {
			// O_DIRECTORY may answer first for a link: say which.
			var st unix.Stat_t
			if unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && modeOf(st.Mode)&fs.ModeSymlink != 0 {
				err = unix.ELOOP
			}
		}
		unix.Close(fd)
		switch {
		case err == unix.ELOOP:
			return -1, fmt.Errorf("%s: %w", c, ErrSymlink)
		case err != nil:
			return -1, fmt.Errorf("%s: %w", c, err)
		}
		fd = next
	}
	return fd, nil
}

// writeAtAs writes data to name in the directory dfd through a temporary
// file renamed over it, made owned by uid:gid before anything is written
// to it (-1 keeps the writer's); a link or anything but a regular file at
// name is refused, and rename replaces a link planted after that check
// without following it. With excl nothing may be at name (EEXIST): the
// temporary file is hard-linked there instead, which never replaces.
func writeAtAs(dfd int, name string, data []byte, perm fs.FileMode, uid, gid int, excl bool) error {
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && excl:
		return unix.EEXIST
	case err == nil && modeOf(st.Mode)&fs.ModeSymlink != 0:
		return ErrSymlink
	case err == nil && !modeOf(st.Mode).IsRegular():
		return &kindError{modeOf(st.Mode)}
	case err != nil && err != unix.ENOENT:
		return err
	}
	var (
		fd  int
		tmp string
		err error
	)
	for i := 0; i < 16; i++ {
		tmp = "." + name + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
		fd, err = unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != unix.EEXIST {
			break
		}
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	if uid >= 0 || gid >= 0 {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Chmod(perm.Perm())
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err == nil && excl:
		if err = unix.Linkat(dfd, tmp, dfd, name, 0); err == nil {
			unix.Unlinkat(dfd, tmp, 0)
		}
	case err == nil:
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	return unix.Fsync(dfd)
}

// modeOf turns a stat mode into the type bits of an fs.FileMode.
func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// mountPoints lists the mount points of this process's namespace (from
// /proc/self/mountinfo), for the portable walk: a bind mount within one
// file system keeps the device, so the device alone cannot tell. A table
// that cannot be read is an error, never "no mounts".
func mountPoints() (map[string]bool, error) {
	b, err := ReadFile(context.Background(), "/proc/self/mountinfo", 16<<20)
	if err != nil {
		return nil, fmt.Errorf("cannot tell the mount points inside the root: %w", err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			out[filepath.Clean(unescapeMount(f[4]))] = true
		}
	}
	return out, nil
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
