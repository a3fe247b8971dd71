package vm

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strings"
)

// Mode bits of cpio entries (the st_mode type bits).
const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

// initramfs writes a gzip-compressed cpio archive in the "newc" format
// (magic 070701), the one the kernel unpacks into its rootfs. Archives can
// be concatenated: the kernel unpacks one after the other, later entries
// overwriting earlier ones.
type initramfs struct {
	gz   *gzip.Writer
	bw   *bufio.Writer
	ino  uint32
	dirs map[string]bool
	err  error
}

// newInitramfs returns an archive writing to w; Close finishes it.
func newInitramfs(w io.Writer) *initramfs {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	return &initramfs{gz: gz, bw: bufio.NewWriterSize(gz, 64<<10), ino: 300, dirs: map[string]bool{}}
}

// header writes one entry's header, its name and the name's padding.
func (a *initramfs) header(name string, mode, size, major, minor uint32) {
	if a.err != nil {
		return
	}
	if size > 0 && mode&0o170000 != modeFile && mode&0o170000 != modeSymlink {
		a.err = fmt.Errorf("initramfs: %s: only files and symlinks have data", name)
		return
	}
	a.ino++
	nlink := uint32(1)
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	// ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
	// rdevmajor, rdevminor, namesize (with the NUL), check.
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		a.ino, mode, 0, 0, nlink, 0, size, 0, 0, major, minor, len(name)+1, 0)
	a.write([]byte(h))
	a.write([]byte(name + "\x00"))
	a.pad(len(h) + len(name) + 1)
}

func (a *initramfs) write(b []byte) {
	if a.err == nil {
		_, a.err = a.bw.Write(b)
	}
}

// pad writes the NULs that align n written bytes to 4.
func (a *initramfs) pad(n int) {
	if r := n % 4; r != 0 {
		a.write(make([]byte, 4-r))
	}
}

// clean turns a path into the archive's form: relative, no "./".
func clean(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// parents adds the directories above name that are not in the archive yet.
func (a *initramfs) parents(name string) {
	dir := path.Dir(name)
	if dir == "." || a.dirs[dir] {
		return
	}
	a.Dir(dir, 0o755)
}

// Dir adds a directory, and its parents.
func (a *initramfs) Dir(name string, perm uint32) {
	name = clean(name)
	if name == "" || a.dirs[name] {
		return
	}
	a.parents(name)
	a.dirs[name] = true
	a.header(name, modeDir|perm, 0, 0, 0)
}

// File adds a regular file, and the directories above it.
func (a *initramfs) File(name string, perm uint32, data []byte) {
	name = clean(name)
	a.parents(name)
	a.header(name, modeFile|perm, uint32(len(data)), 0, 0)
	a.write(data)
	a.pad(len(data))
}

// Symlink adds a symbolic link to target.
func (a *initramfs) Symlink(name, target string) {
	name = clean(name)
	a.parents(name)
	a.header(name, modeSymlink|0o777, uint32(len(target)), 0, 0)
	a.write([]byte(target))
	a.pad(len(target))
}

// CharDev adds a character device node.
func (a *initramfs) CharDev(name string, perm, major, minor uint32) {
	name = clean(name)
	a.parents(name)
	a.header(name, modeCharDev|perm, 0, major, minor)
}

// Close writes the trailer and finishes the gzip stream. It returns the
// first error met while writing.
func (a *initramfs) Close() error {
	a.header("TRAILER!!!", 0, 0, 0, 0)
	if a.err == nil {
		a.err = a.bw.Flush()
	}
	if err := a.gz.Close(); a.err == nil {
		a.err = err
	}
	return a.err
}
