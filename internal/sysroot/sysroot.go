// Package sysroot resolves system paths under an optional alternative root
// directory, so that every part of seedkeeper can run against a scratch
// folder (--root DIR) instead of the real machine.
package sysroot

import (
	"path/filepath"
	"strings"
)

// Root is a directory that stands for "/". The zero value is the real root.
type Root string

// Path returns the absolute system path p as seen under r, lexically: it
// names a file for messages and for writing seedkeeper's own state. To
// read, list or remove what an image root holds (links that may point at
// the host, FIFOs, mounts), use fsutil's in-root functions (ReadFileIn,
// StatIn, ReadDirIn, RemoveIn), which confine the walk to r.
func (r Root) Path(p string) string {
	if r == "" || r == "/" {
		return filepath.Clean("/" + p)
	}
	return filepath.Join(string(r), filepath.Clean("/"+p))
}

// IsReal reports whether r is the machine's own root.
func (r Root) IsReal() bool { return r == "" || r == "/" }

// Rel turns a path under r back into the system path it stands for; paths
// outside r are returned unchanged.
func (r Root) Rel(p string) string {
	if r.IsReal() {
		return p
	}
	rest, ok := strings.CutPrefix(filepath.Clean(p), filepath.Clean(string(r)))
	if !ok || (rest != "" && rest[0] != '/') {
		return p
	}
	if rest == "" {
		return "/"
	}
	return rest
}
