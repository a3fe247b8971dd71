//go:build !linux

package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// Where the kernel has no confined lookup, the walk is done in user space.

func openIn(root, p string, want Kinds) (*os.File, error) { return portableOpen(root, p, want) }

func statIn(root, p string, follow bool) (fs.FileInfo, error) {
	fi, _, err := portableStat(root, p, follow)
	return fi, err
}

func readlinkIn(root, p string) (string, error) { return portableReadlink(root, p) }

func removeIn(root, p string, tree bool) error { return portableRemove(root, p, tree) }

func removeEmptyDirIn(root, p string) (bool, error) { return portableRemoveEmptyDir(root, p) }

func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

func mkdirIn(root, p string, perm fs.FileMode, setPerm bool) (bool, error) {
	return portableMkdir(root, p, perm, setPerm)
}

func renameIn(root, from, to string) error { return portableRename(root, from, to) }

func truncateIn(root, p string) error { return portableTruncate(root, p) }

func writeIn(root, p string, data []byte, perm fs.FileMode, excl bool) error {
	return portableWrite(root, p, data, perm, excl)
}

func writeInAs(root, p string, data []byte, perm, dirPerm fs.FileMode, uid, gid int) error {
	return portableWriteAs(root, p, data, perm, dirPerm, uid, gid)
}

// mountPoints is not known here: the device comparison alone applies.
func mountPoints() (map[string]bool, error) { return nil, nil }
