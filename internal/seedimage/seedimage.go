package seedimage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/fat16"
	"github.com/diskfs/go-diskfs/filesystem/fat32"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Image is an open seed filesystem. Its methods are safe for concurrent
// use.
type Image struct {
	name   string
	info   Info
	closer io.Closer

	mu      sync.Mutex
	st      *storage
	fsys    filesystem
	entries []entry
}

// filesystem is the part of the go-diskfs filesystems Image uses.
type filesystem interface {
	Open(name string) (fs.File, error)
	ReadDir(name string) ([]fs.DirEntry, error)
}

type entry struct {
	name string
	size int64
	dir  bool
}

// Open opens the image file or block device at path read-only and reads
// its root directory.
func Open(path string) (*Image, error) {
	f, err := fsutil.OpenImage(path)
	if err != nil {
		return nil, err
	}
	return openFile(f, path)
}

// OpenIn opens the image file or block device at the system path p under
// root, confined to it (fsutil.OpenIn: no link followed out of the root,
// nothing but a regular file or a block device opened), and reads its
// root directory.
func OpenIn(root sysroot.Root, p string) (*Image, error) {
	f, err := fsutil.OpenIn(string(root), p, fsutil.Regular|fsutil.BlockDevice)
	if err != nil {
		return nil, err
	}
	return openFile(f, p)
}

// openFile reads the image in f, which it closes on error and Close
// closes.
func openFile(f *os.File, path string) (*Image, error) {
	// Stat reports 0 for a block device; its end is its size.
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: finding the size: %w", path, err)
	}
	im, err := OpenReader(f, size, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	im.closer = f
	return im, nil
}

// OpenReader reads an image of size bytes from r; name is used in errors.
// Close does not close r.
func OpenReader(r io.ReaderAt, size int64, name string) (im *Image, err error) {
	defer recoverError(&err, name, "opening")
	info, geom, err := probe(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	im = &Image{name: name, info: info, st: &storage{r: r, size: size, name: name}}
	if err := im.mount(geom); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return im, nil
}

func (im *Image) mount(g *fatGeom) error {
	st := im.st
	st.reset()
	var (
		fsys filesystem
		err  error
	)
	switch im.info.Type {
	case ISO9660:
		if err := checkISO(st, st.size); err != nil {
			return err
		}
		fsys, err = iso9660.Read(st, st.size, 0, 0)
	case VFAT:
		if g.fatSize > maxFATSize {
			return fmt.Errorf("%w: a file allocation table of %d bytes is over the %d byte limit for a seed", ErrTooLarge, g.fatSize, maxFATSize)
		}
		if err := g.checkChains(st); err != nil {
			return err
		}
		// Read the second FAT as the first, as the kernel does.
		st.afrom, st.ato, st.alen = g.fatOffset, g.fatOffset+g.fatSize, g.fatSize
		switch g.bits {
		case 12:
			fsys, err = fat12.Read(st, g.fsSize, 0, 0)
		case 16:
			fsys, err = fat16.Read(st, g.fsSize, 0, 0)
		default:
			fsys, err = fat32.Read(st, g.fsSize, 0, 0)
		}
	}
	if err == nil {
		err = st.check()
	}
	if err != nil {
		return fmt.Errorf("%w: reading %s: %v", ErrCorrupt, im.info.Variant, err)
	}
	im.fsys = fsys
	st.reset()
	des, err := fsys.ReadDir(".")
	if err == nil {
		err = st.check()
	}
	if err != nil {
		return fmt.Errorf("%w: reading the root directory: %v", ErrCorrupt, err)
	}
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			return fmt.Errorf("%w: root directory entry %q: %v", ErrCorrupt, de.Name(), err)
		}
		im.entries = append(im.entries, entry{name: de.Name(), size: fi.Size(), dir: de.IsDir()})
	}
	return nil
}

// Close releases the device or file Open opened.
func (im *Image) Close() error {
	if im.closer == nil {
		return nil
	}
	return im.closer.Close()
}

// Name returns the path or name the image was opened with.
func (im *Image) Name() string { return im.name }

// Type returns ISO9660 or VFAT.
func (im *Image) Type() Type { return im.info.Type }

// Info returns the filesystem type and labels.
func (im *Image) Info() Info { return im.info }

// Label returns the volume label as blkid reports it (see Info.Label).
func (im *Image) Label() string { return im.info.Label }

// Names returns the names in the root directory, as the filesystem lists
// them (Rock Ridge, Joliet or VFAT long names when present).
func (im *Image) Names() []string {
	names := make([]string, len(im.entries))
	for i, e := range im.entries {
		names[i] = e.name
	}
	return names
}

// ReadFile returns the content of the root-directory file name, found as
// the package documentation describes. A missing file gives an error that
// matches fs.ErrNotExist; a file over MaxFileSize gives ErrTooLarge.
func (im *Image) ReadFile(name string) ([]byte, error) { return im.ReadFileMax(name, MaxFileSize) }

// ReadFileMax is ReadFile with a lower limit: a file over max (or over
// MaxFileSize) gives ErrTooLarge, from the directory entry, before
// anything is read.
func (im *Image) ReadFileMax(name string, max int64) (data []byte, err error) {
	max = min(max, MaxFileSize)
	defer recoverError(&err, im.name, "reading "+name)
	e, err := im.lookup(name)
	if err != nil {
		return nil, err
	}
	if e.dir {
		return nil, fmt.Errorf("%s: %s is a directory", im.name, name)
	}
	if e.size > max || e.size < 0 {
		return nil, fmt.Errorf("%s: %s: %w: %d bytes, over the %d byte limit", im.name, name, ErrTooLarge, e.size, max)
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	im.st.reset()
	data, err = im.read(e)
	if err == nil {
		err = im.st.check()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", im.name, name, err)
	}
	return data, nil
}

func (im *Image) read(e entry) ([]byte, error) {
	if e.size == 0 {
		// An empty FAT file has no cluster at all, and go-diskfs fails
		// to read it ("invalid start cluster: 0").
		return []byte{}, nil
	}
	f, err := im.fsys.Open(e.name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer f.Close()
	// One Read of the exact size: go-diskfs then walks the cluster chain
	// once. A short result means the chain ends before the file does.
	buf := make([]byte, e.size)
	n, err := f.Read(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if n != len(buf) {
		return nil, fmt.Errorf("%w: got %d of %d bytes", ErrCorrupt, n, len(buf))
	}
	return buf, nil
}

// lookup applies the three matching steps of the package documentation.
func (im *Image) lookup(want string) (entry, error) {
	for _, e := range im.entries {
		if e.name == want {
			return e, nil
		}
	}
	for _, e := range im.entries {
		if strings.EqualFold(e.name, want) {
			return e, nil
		}
	}
	forms := mangledForms(want)
	var found []entry
	for _, e := range im.entries {
		n := unversioned(e.name)
		for _, f := range forms {
			if n == f {
				found = append(found, e)
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return entry{}, &fs.PathError{Op: "read", Path: im.name + ":" + want, Err: fs.ErrNotExist}
	case 1:
		return found[0], nil
	default:
		return entry{}, fmt.Errorf("%s: %s is ambiguous: %q and %q both match", im.name, want, found[0].name, found[1].name)
	}
}

// unversioned upper-cases an ISO9660 or 8.3 name and drops any ";1"
// version and a trailing dot (an empty extension).
func unversioned(name string) string {
	if i := strings.LastIndexByte(name, ';'); i >= 0 {
		name = name[:i]
	}
	return strings.ToUpper(strings.TrimSuffix(name, "."))
}

// mangledForms lists the forms of want that plain ISO9660 and 8.3 tools
// produce: full length and 8.3, with '-' kept and with non-d-characters
// replaced by '_'.
func mangledForms(want string) []string {
	up := strings.ToUpper(want)
	dchars := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, up)
	var forms []string
	for _, s := range []string{up, dchars} {
		forms = append(forms, s, shortName(s))
	}
	return forms
}

// shortName cuts a name to 8.3.
func shortName(s string) string {
	base, ext := s, ""
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		base, ext = s[:i], s[i+1:]
	}
	if len(base) > 8 {
		base = base[:8]
	}
	if len(ext) > 3 {
		ext = ext[:3]
	}
	if ext == "" {
		return base
	}
	return base + "." + ext
}

// recoverError turns a panic inside go-diskfs into an error naming the
// image; a corrupt image must never crash the caller.
func recoverError(err *error, name, op string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: %w: %s panicked: %v", name, ErrCorrupt, op, r)
	}
}
