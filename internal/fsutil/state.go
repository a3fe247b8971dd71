package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
)

// StateIn says what the system path p under root is, without following
// a link at its end: "absent", "unreadable", or its kind with its size
// and modification time. A plan records it for each path it acts on, so
// that a file written, grown or replaced between a dry run and the real
// run changes the plan's digest.
func StateIn(root, p string) string {
	fi, err := StatIn(root, p, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "absent"
	case err != nil:
		return "unreadable"
	}
	kind := "other"
	switch m := fi.Mode(); {
	case m.IsRegular():
		kind = "file"
	case m.IsDir():
		kind = "dir"
	case m&fs.ModeSymlink != 0:
		kind = "link"
	}
	return fmt.Sprintf("%s size=%d mtime=%d", kind, fi.Size(), fi.ModTime().UnixNano())
}
