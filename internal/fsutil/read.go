package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Read limits for the files seedkeeper reads.
const (
	// SmallFile bounds state and configuration files seedkeeper or a
	// person writes: config.yaml, identity.json, status.json, the seed
	// marker, the receipt.
	SmallFile = 1 << 20
	// TinyFile bounds one-line kernel and firmware files (/proc/cmdline,
	// /sys/class/dmi/id/*).
	TinyFile = 64 << 10
)

// ErrNotRegular is returned when a file to read is not a regular file (a
// FIFO, a terminal, a device, a socket or a directory): reading one could
// block boot for ever or never end.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned when a file is over the read limit.
var ErrTooLarge = errors.New("over the size limit")

// ReadFile reads the regular file path, of at most limit bytes. It never
// blocks on what is not a regular file: the file is opened non-blocking
// and without becoming a controlling terminal, then refused unless fstat
// says it is regular. ctx is checked between reads, so a slow file system
// gives up when the context ends. Errors name the path and describe the
// file (kind, size), never its content.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := openRegular(path, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(ctx, f, path, limit)
}

// ReadFileNoFollow is ReadFile refusing a symbolic link as the last
// component of path: for seedkeeper's own state, which it never reads
// through a link.
func ReadFileNoFollow(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := openRegular(path, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(ctx, f, path, limit)
}

func openRegular(path string, nofollow bool) (*os.File, error) {
	flags := os.O_RDONLY
	if nofollow {
		flags |= oNoFollow
	}
	return openRegularFile("reading", path, flags, 0)
}

// openRegularFile opens path with flags (plus O_NONBLOCK and O_NOCTTY, so
// that a FIFO or a terminal cannot block or capture us) and refuses what
// is not a regular file, or a link when flags hold O_NOFOLLOW. op starts
// the error text ("reading", "opening lock").
func openRegularFile(op, path string, flags int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flags|oNonblock|oNoCTTY, perm)
	if err != nil {
		if flags&oNoFollow != 0 && isELOOP(err) {
			return nil, fmt.Errorf("%s %s: %w", op, path, ErrSymlink)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w (%s)", op, path, ErrNotRegular, Kind(fi.Mode()))
	}
	return f, nil
}

func readAll(ctx context.Context, f *os.File, path string, limit int64) ([]byte, error) {
	var out []byte
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		return nil, fmt.Errorf("reading %s: %w: %d bytes, the limit is %d", path, ErrTooLarge, fi.Size(), limit)
	} else if err == nil && fi.Size() > 0 {
		// One allocation of the size the file says it has (within the
		// limit), not a chain of growing copies; the limit still holds
		// if it grows while being read.
		out = make([]byte, 0, fi.Size())
	}
	buf := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		n, err := f.Read(buf)
		if int64(len(out))+int64(n) > limit {
			return nil, fmt.Errorf("reading %s: %w: more than %d bytes", path, ErrTooLarge, limit)
		}
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			if out == nil {
				out = []byte{}
			}
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// Kind names a file mode's type for messages: "directory", "FIFO",
// "character device" and so on.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// maxLinks is how many symbolic links Resolve follows, as Linux's
// MAXSYMLINKS.
const maxLinks = 40

// Resolve returns the path that the system path p names when root stands
// for "/", resolved the way the kernel resolves it: component by
// component, following symbolic links (an absolute target starts again at
// root), and taking ".." from the directory actually reached, never by
// cleaning the string. So "a/missing/.." fails as the kernel's lookup
// does (ENOENT), "file/.." fails (ENOTDIR) and "link/.." is the parent of
// the link's target. ".." at root stays at root, as in a chroot. The last
// component may be missing (the result names it); a symbolic link there is
// followed.
func Resolve(root, p string) (string, error) {
	if root == "" {
		root = "/"
	}
	root = filepath.Clean(root)
	if !strings.HasPrefix(p, "/") {
		return "", &fs.PathError{Op: "resolve", Path: p, Err: errors.New("not an absolute path")}
	}
	// cur is the resolved path below root ("" is root itself); rest holds
	// the components still to walk.
	var cur []string
	rest := splitPath(p)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) > 0 {
				cur = cur[:len(cur)-1]
			}
			continue
		}
		next := filepath.Join(root, filepath.Join(append(cur, c)...))
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) && !moreComponents(rest) {
			cur = append(cur, c)
			break
		}
		if err != nil {
			return "", &fs.PathError{Op: "resolve", Path: p, Err: unwrapPathErr(err)}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			links++
			if links > maxLinks {
				return "", &fs.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", &fs.PathError{Op: "resolve", Path: p, Err: unwrapPathErr(err)}
			}
			if strings.HasPrefix(target, "/") {
				cur = nil
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if !fi.IsDir() && moreComponents(rest) {
			return "", &fs.PathError{Op: "resolve", Path: p, Err: syscall.ENOTDIR}
		}
		cur = append(cur, c)
	}
	return filepath.Join(root, filepath.Join(cur...)), nil
}

func splitPath(p string) []string { return strings.Split(p, "/") }

// moreComponents reports whether rest still names something to walk into.
// A trailing "/" or "." asks for a directory, as the kernel treats it.
func moreComponents(rest []string) bool {
	for _, c := range rest {
		if c != "" {
			return true
		}
	}
	return len(rest) > 0
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func isELOOP(err error) bool { return errors.Is(err, syscall.ELOOP) }

// OpenImage opens a filesystem image or block device at path read-only,
// without blocking and without becoming a controlling terminal, and
// refuses anything else (a FIFO, a terminal, a character device).
func OpenImage(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock|oNoCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := fi.Mode(); !m.IsRegular() && (m&fs.ModeDevice == 0 || m&fs.ModeCharDevice != 0) {
		f.Close()
		return nil, fmt.Errorf("opening %s: %w (%s), want an image file or a block device", path, ErrNotRegular, Kind(m))
	}
	return f, nil
}
