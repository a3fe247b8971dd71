//go:build !unix

package fsutil

import "os"

// Elsewhere opening does not block on special files and links are not
// refused at open: the regular-file check after open still applies.
const (
	oNoCTTY   = 0
	oNoFollow = 0
	oNonblock = 0
)

// devOf reports no device where the system does not say.
func devOf(os.FileInfo) (uint64, bool) { return 0, false }

// unlinkFile removes the file p, refusing a directory (the check and the
// removal are two steps here).
func unlinkFile(p string) error {
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return &os.PathError{Op: "remove", Path: p, Err: ErrIsDir}
	}
	return os.Remove(p)
}
