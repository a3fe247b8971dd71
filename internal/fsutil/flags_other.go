//go:build !unix

package fsutil

// Elsewhere opening does not block on special files and links are not
// refused at open: the regular-file check after open still applies.
const (
	oNoCTTY   = 0
	oNoFollow = 0
	oNonblock = 0
)
