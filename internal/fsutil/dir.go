package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MkdirNoFollow makes sure dir is a directory, creating it with mode perm
// (and missing parents 0755) when it is absent. It refuses a dir that is a
// symbolic link: seedkeeper's own directories (/var/lib/seedkeeper,
// /run/systemd/network, the seed directory) are never followed through a
// link someone planted, since what is written there would land wherever
// the link points.
func MkdirNoFollow(dir string, perm fs.FileMode) error {
	_, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		return checkDir(dir)
	case err != nil:
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	return checkDir(dir)
}

// NotLinked returns nil when dir is absent or a real directory, and the
// error MkdirNoFollow gives otherwise: for code that lists or removes in
// one of seedkeeper's own directories without writing to it first.
func NotLinked(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return checkDir(dir)
}

func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("checking %s: %w", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link; seedkeeper does not follow links to its own directories (remove the link): %w", dir, ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("%s: not a directory (a %s)", dir, Kind(fi.Mode()))
	}
	return nil
}

// OpenLock opens (creating it 0600 when absent) the lock file path for
// flock. It never creates or opens the file through a symbolic link, and
// refuses what is not a regular file; the directory is made with
// MkdirNoFollow.
func OpenLock(path string) (*os.File, error) {
	if err := MkdirNoFollow(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return openRegularFile("opening lock", path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
}
