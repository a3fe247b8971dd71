package seedimage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/diskfs/go-diskfs/backend"
)

// Per-operation budget: one Open, ReadDir or ReadFile may make at most
// this many reads of at most this many bytes in all. A valid seed needs a
// tiny fraction (the worst legitimate case is a 16 MiB file on a FAT with
// 512-byte clusters: 32768 reads); a Rock Ridge continuation entry that
// points at itself would otherwise make go-diskfs read forever.
const (
	maxReads     = 1 << 17
	maxReadBytes = 8 * MaxFileSize
)

var errBudget = errors.New("read budget exhausted")

// storage is the read-only go-diskfs backend over an io.ReaderAt. It never
// reads past size and counts what the current operation read.
type storage struct {
	r     io.ReaderAt
	size  int64
	name  string
	pos   int64
	reads int
	bytes int64
	// over is set when the budget ran out, short when a read went past
	// the end of the image; go-diskfs ignores some read errors, so the
	// caller checks both after each operation.
	over, short bool
	// alias, when alen > 0, makes the alen bytes at ato read as those at
	// afrom: the second FAT copy reads as the first, which is the copy
	// the kernel's vfat uses. go-diskfs refuses a FAT32 whose two copies
	// differ, even by a byte nothing refers to.
	afrom, ato, alen int64
}

var _ backend.Storage = (*storage)(nil)

// reset starts a new operation's budget.
func (s *storage) reset() { s.reads, s.bytes, s.over, s.short = 0, 0, false, false }

// check reports what went wrong during the operation, if anything.
func (s *storage) check() error {
	if s.over {
		return fmt.Errorf("%w: more than %d reads or %d bytes for one operation (a loop in the filesystem structures?)", ErrCorrupt, maxReads, maxReadBytes)
	}
	if s.short {
		return fmt.Errorf("%w: data lies past the end of the %d byte image", ErrCorrupt, s.size)
	}
	return nil
}

func (s *storage) ReadAt(p []byte, off int64) (int, error) {
	s.reads++
	s.bytes += int64(len(p))
	if s.reads > maxReads || s.bytes > maxReadBytes {
		s.over = true
		return 0, errBudget
	}
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	if off >= s.size {
		if len(p) > 0 {
			s.short = true
		}
		return 0, io.EOF
	}
	want := len(p)
	if rest := s.size - off; int64(want) > rest {
		p = p[:rest]
	}
	n, err := s.readAliased(p, off)
	if n == len(p) && n < want {
		s.short = true
		return n, io.EOF
	}
	if err == io.EOF && n == want {
		err = nil
	}
	return n, err
}

func (s *storage) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.pos)
	s.pos += int64(n)
	return n, err
}

func (s *storage) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.pos
	case io.SeekEnd:
		offset += s.size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek: negative position %d", offset)
	}
	s.pos = offset
	return offset, nil
}

func (s *storage) Stat() (fs.FileInfo, error) { return storageInfo{s}, nil }
func (s *storage) Close() error               { return nil }
func (s *storage) Sys() (*os.File, error)     { return nil, backend.ErrNotSuitable }
func (s *storage) Path() string               { return s.name }
func (s *storage) Writable() (backend.WritableFile, error) {
	return nil, backend.ErrIncorrectOpenMode
}

type storageInfo struct{ s *storage }

func (i storageInfo) Name() string       { return i.s.name }
func (i storageInfo) Size() int64        { return i.s.size }
func (i storageInfo) Mode() fs.FileMode  { return 0o400 }
func (i storageInfo) ModTime() time.Time { return time.Time{} }
func (i storageInfo) IsDir() bool        { return false }
func (i storageInfo) Sys() any           { return nil }

// readAliased reads p at off from the image, taking the aliased window
// from its source.
func (s *storage) readAliased(p []byte, off int64) (int, error) {
	if s.alen <= 0 || off+int64(len(p)) <= s.ato || off >= s.ato+s.alen {
		return s.r.ReadAt(p, off)
	}
	done := 0
	for done < len(p) {
		at := off + int64(done)
		chunk := p[done:]
		src := at
		switch {
		case at < s.ato:
			chunk = chunk[:min(int64(len(chunk)), s.ato-at)]
		case at < s.ato+s.alen:
			chunk = chunk[:min(int64(len(chunk)), s.ato+s.alen-at)]
			src = s.afrom + (at - s.ato)
		}
		n, err := s.r.ReadAt(chunk, src)
		done += n
		if err != nil && !(err == io.EOF && n == len(chunk)) {
			return done, err
		}
		if n < len(chunk) {
			return done, io.ErrUnexpectedEOF
		}
	}
	return done, nil
}
