// Package fsutil writes and reads files the way seedkeeper must: it writes
// atomically, only when the content changes, never through a symbolic link
// or into a linked directory; it reads only regular files, bounded in size,
// honouring the context, with paths resolved as the kernel resolves them.
// Every file seedkeeper reads from disk goes through ReadFile (or
// ReadFileIn, ReadFileNoFollow, OpenImage).
package fsutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrSymlink is returned when the file to write is a symbolic link.
var ErrSymlink = errors.New("refusing to write through a symbolic link")

// WriteFile makes path hold exactly data with mode perm. It writes a
// temporary file in the same directory, syncs it, renames it over path and
// syncs the directory, so a crash leaves either the old or the new file. It
// does nothing when the file already has that content and mode, and reports
// whether it changed anything. Missing parent directories are created 0755;
// a parent directory that is a symbolic link is refused (MkdirNoFollow).
func WriteFile(path string, data []byte, perm fs.FileMode) (changed bool, err error) {
	return writeFileAs(path, data, perm, -1, -1, false)
}

// beforeRename, when set (by a test), is called with the temporary file's
// name just before it is renamed into place.
var beforeRename func(tmp string)

// writeFileAs is WriteFile with the temporary file given to uid:gid, by
// its descriptor, before anything is written to it (-1 keeps the
// writer's): nothing is changed by path after the rename, where the
// directory's owner could have put another file (a hard link) in its
// place. With excl nothing may be at path: the new file is linked there,
// which the kernel refuses when anything is, and an error wrapping
// fs.ErrExist says so.
func writeFileAs(path string, data []byte, perm fs.FileMode, uid, gid int, excl bool) (changed bool, err error) {
	dir := filepath.Dir(path)
	if err := MkdirNoFollow(dir, 0o755); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	switch {
	case err == nil && excl:
		return false, fmt.Errorf("writing %s: %w", path, fs.ErrExist)
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return false, fmt.Errorf("writing %s: %w", path, ErrSymlink)
	case err == nil && !fi.Mode().IsRegular():
		return false, fmt.Errorf("writing %s: not a regular file", path)
	case err == nil && fi.Mode().Perm() == perm.Perm():
		// A file longer than data differs: read no more than that.
		old, rerr := ReadFileNoFollow(context.Background(), path, int64(len(data)))
		if rerr == nil && bytes.Equal(old, data) {
			return false, nil
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("writing %s: %w", path, err)
	}

	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if uid >= 0 || gid >= 0 {
		if err = tmp.Chown(uid, gid); err != nil {
			return false, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err = tmp.Chmod(perm.Perm()); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if beforeRename != nil {
		beforeRename(tmp.Name())
	}
	if excl {
		// A hard link fails with EEXIST when anything is at path (a
		// link pointing nowhere too): unlike a rename it never replaces.
		if err = os.Link(tmp.Name(), path); err == nil {
			os.Remove(tmp.Name())
		}
	} else {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = SyncDir(dir); err != nil {
		return true, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}

// SyncDir flushes a directory's entries to disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
