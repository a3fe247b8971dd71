//go:build !unix

package journallog

import "io/fs"

// devIno: no journal on this system.
func devIno(fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
