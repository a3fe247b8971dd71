package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// ErrOutsideRoot means a symbolic link in the image leads out of the root
// being checked or sealed.
var ErrOutsideRoot = errors.New("a symbolic link leads out of the root")

// maxLinks bounds the links followed for one path, as the kernel does.
const maxLinks = 40

// resolve returns the system path that sys stands for inside root,
// following symbolic links the way the image itself sees them: an absolute
// target starts again at root, never at the host's "/". Links are followed
// in every component but the last, and in the last too when followLast is
// set. Under an alternative root a ".." that climbs above it is refused
// with ErrOutsideRoot, naming the link; components that do not exist are
// kept as they are.
func resolve(root sysroot.Root, sys string, followLast bool) (string, error) {
	todo := strings.Split(sys, "/")
	cur, via, links := "/", "", 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == "/" {
				if !root.IsReal() {
					if via == "" {
						return "", fmt.Errorf("%s: the path climbs out of the root", sys)
					}
					return "", fmt.Errorf("%s: %w (%s)", sys, ErrOutsideRoot, via)
				}
				continue
			}
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		if len(todo) == 0 && !followLast {
			return next, nil
		}
		fi, err := os.Lstat(root.Path(next))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: more than %d symbolic links", sys, maxLinks)
		}
		target, err := os.Readlink(root.Path(next))
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", sys, err)
		}
		via = next
		if path.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}
