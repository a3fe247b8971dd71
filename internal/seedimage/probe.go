package seedimage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Type is a filesystem type, named as blkid and cloud-init name it.
type Type string

// The filesystem types a seed can have.
const (
	ISO9660 Type = "iso9660"
	VFAT    Type = "vfat"
)

// Info is what the first sectors of a filesystem say about it.
type Info struct {
	Type Type
	// Variant is "iso9660", "fat12", "fat16" or "fat32".
	Variant string
	// Label is the volume label as blkid reports it (LABEL): the ISO9660
	// volume identifier without its space padding, or on FAT the label
	// entry of the root directory, falling back to the boot sector's.
	Label string
	// BootLabel is the label in the FAT boot sector (blkid's
	// LABEL_FATBOOT); empty on ISO9660.
	BootLabel string
}

// Limits that keep a corrupt or hostile image from costing much.
const (
	// MaxFileSize is the largest file ReadFile returns.
	MaxFileSize = 16 << 20
	// maxFATSize is the largest file allocation table read (one copy): 4M
	// FAT32 entries, far more than any seed needs.
	maxFATSize = 16 << 20
)

var (
	// ErrUnknownFormat means the image holds neither an ISO9660 nor a FAT
	// filesystem.
	ErrUnknownFormat = errors.New("not an iso9660 or vfat filesystem")
	// ErrCorrupt means the filesystem structures are inconsistent.
	ErrCorrupt = errors.New("corrupt filesystem")
	// ErrTooLarge means a file is larger than MaxFileSize.
	ErrTooLarge = errors.New("file too large")
)

const (
	isoSectorSize  = 2048
	isoFirstVD     = 16 * isoSectorSize
	isoMaxVDs      = 64
	vdPrimary      = 1
	vdTerminator   = 255
	fatBootSigOff  = 510
	fatDirEntSize  = 32
	fatAttrLabel   = 0x08
	fatAttrDir     = 0x10
	fatAttrLFNMask = 0x0f
)

// probe tells an ISO9660 from a FAT filesystem by their first sectors and
// reads the labels. For FAT it also returns the geometry, validated.
func probe(r io.ReaderAt, size int64) (Info, *fatGeom, error) {
	if info, ok, err := probeISO(r, size); ok || err != nil {
		return info, nil, err
	}
	return probeFAT(r, size)
}

// probeISO reads the volume descriptors from sector 16 on. ok is false when
// there is no ISO9660 signature at all.
func probeISO(r io.ReaderAt, size int64) (info Info, ok bool, err error) {
	vd := make([]byte, isoSectorSize)
	for i := int64(0); i < isoMaxVDs; i++ {
		off := isoFirstVD + i*isoSectorSize
		if off+isoSectorSize > size {
			if i == 0 {
				return Info{}, false, nil
			}
			return Info{}, true, fmt.Errorf("%w: iso9660 volume descriptors run past the end", ErrCorrupt)
		}
		if _, err := r.ReadAt(vd, off); err != nil {
			if i == 0 {
				return Info{}, false, nil
			}
			return Info{}, true, fmt.Errorf("reading volume descriptor %d: %w", i, err)
		}
		if string(vd[1:6]) != "CD001" {
			if i == 0 {
				return Info{}, false, nil
			}
			return Info{}, true, fmt.Errorf("%w: iso9660 volume descriptor %d has no CD001 signature", ErrCorrupt, i)
		}
		switch vd[0] {
		case vdPrimary:
			label := strings.TrimRight(string(vd[40:72]), " \x00")
			return Info{Type: ISO9660, Variant: "iso9660", Label: label}, true, nil
		case vdTerminator:
			return Info{}, true, fmt.Errorf("%w: iso9660 without a primary volume descriptor", ErrCorrupt)
		}
	}
	return Info{}, true, fmt.Errorf("%w: iso9660 without a primary volume descriptor in the first %d", ErrCorrupt, isoMaxVDs)
}

// fatGeom is a FAT filesystem's layout, in bytes from its start.
type fatGeom struct {
	bits         int // 12, 16 or 32
	sectorSize   int64
	clusterSize  int64
	fatOffset    int64
	fatSize      int64 // one copy
	rootOffset   int64 // FAT12/16: the fixed root directory
	rootSize     int64
	dataOffset   int64
	rootCluster  uint32 // FAT32
	clusters     uint32
	fsSize       int64
	bootLabel    string
	hasBootLabel bool
}

// probeFAT reads and checks a FAT boot sector the way blkid and the kernel
// judge one, and reads the labels.
func probeFAT(r io.ReaderAt, size int64) (Info, *fatGeom, error) {
	bs := make([]byte, 512)
	if size < int64(len(bs)) {
		return Info{}, nil, ErrUnknownFormat
	}
	if _, err := r.ReadAt(bs, 0); err != nil {
		return Info{}, nil, fmt.Errorf("reading boot sector: %w", err)
	}
	if bs[fatBootSigOff] != 0x55 || bs[fatBootSigOff+1] != 0xaa || (bs[0] != 0xeb && bs[0] != 0xe9) {
		return Info{}, nil, ErrUnknownFormat
	}
	le16 := func(o int) int64 { return int64(binary.LittleEndian.Uint16(bs[o:])) }
	le32 := func(o int) int64 { return int64(binary.LittleEndian.Uint32(bs[o:])) }
	g := &fatGeom{sectorSize: le16(11)}
	spc := int64(bs[13])
	reserved := le16(14)
	nFATs := int64(bs[16])
	rootEntries := le16(17)
	media := bs[21]
	total := le16(19)
	if total == 0 {
		total = le32(32)
	}
	spf := le16(22)
	fat32 := spf == 0
	if fat32 {
		spf = le32(36)
	}
	switch {
	case g.sectorSize != 512 && g.sectorSize != 1024 && g.sectorSize != 2048 && g.sectorSize != 4096,
		spc == 0 || spc&(spc-1) != 0,
		media != 0xf0 && media < 0xf8:
		// Not a BPB at all (an MBR, another filesystem).
		return Info{}, nil, ErrUnknownFormat
	case reserved == 0 || nFATs == 0 || spf == 0 || total == 0:
		return Info{}, nil, fmt.Errorf("%w: fat boot sector has zero reserved sectors, FATs, FAT size or total size", ErrCorrupt)
	case nFATs != 2:
		// go-diskfs places the root directory and data after exactly two.
		return Info{}, nil, fmt.Errorf("%w: fat with %d allocation tables (only 2 are supported)", ErrCorrupt, nFATs)
	case fat32 && rootEntries != 0:
		return Info{}, nil, fmt.Errorf("%w: fat32 boot sector with %d fixed root entries", ErrCorrupt, rootEntries)
	case !fat32 && rootEntries == 0:
		return Info{}, nil, fmt.Errorf("%w: fat12/16 boot sector with no root directory entries", ErrCorrupt)
	}
	g.clusterSize = spc * g.sectorSize
	g.fatOffset = reserved * g.sectorSize
	g.fatSize = spf * g.sectorSize
	g.rootOffset = g.fatOffset + nFATs*g.fatSize
	g.rootSize = rootEntries * fatDirEntSize
	rootSectors := (g.rootSize + g.sectorSize - 1) / g.sectorSize
	g.dataOffset = g.rootOffset + rootSectors*g.sectorSize
	g.fsSize = total * g.sectorSize
	if g.fsSize > size {
		return Info{}, nil, fmt.Errorf("%w: fat filesystem of %d bytes does not fit in the %d byte image", ErrCorrupt, g.fsSize, size)
	}
	if g.dataOffset >= g.fsSize {
		return Info{}, nil, fmt.Errorf("%w: fat filesystem has no data area", ErrCorrupt)
	}
	g.clusters = uint32((total - g.dataOffset/g.sectorSize) / spc)
	switch {
	case fat32:
		g.bits = 32
		g.rootCluster = uint32(le32(44))
	case g.clusters < 4085:
		g.bits = 12
	case g.clusters < 65525:
		g.bits = 16
	default:
		return Info{}, nil, fmt.Errorf("%w: fat12/16 boot sector with %d clusters", ErrCorrupt, g.clusters)
	}
	sigOff, labelOff := 38, 43
	if fat32 {
		sigOff, labelOff = 66, 71
	}
	if bs[sigOff] == 0x29 {
		g.bootLabel = fatLabel(bs[labelOff : labelOff+11])
	}
	info := Info{Type: VFAT, Variant: fmt.Sprintf("fat%d", g.bits), BootLabel: g.bootLabel}
	root, err := g.readRootStart(r)
	if err != nil {
		return Info{}, nil, err
	}
	info.Label = rootLabel(root)
	if info.Label == "" {
		info.Label = info.BootLabel
	}
	return info, g, nil
}

// readRootStart reads the fixed FAT12/16 root directory, or the first
// cluster of the FAT32 root directory (where the label entry lives).
func (g *fatGeom) readRootStart(r io.ReaderAt) ([]byte, error) {
	off, n := g.rootOffset, g.rootSize
	if g.bits == 32 {
		if g.rootCluster < 2 || g.rootCluster-2 >= g.clusters {
			return nil, fmt.Errorf("%w: fat32 root directory cluster %d is out of range", ErrCorrupt, g.rootCluster)
		}
		off, n = g.dataOffset+int64(g.rootCluster-2)*g.clusterSize, g.clusterSize
	}
	if off+n > g.fsSize {
		return nil, fmt.Errorf("%w: fat root directory runs past the end", ErrCorrupt)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("reading fat root directory: %w", err)
	}
	return b, nil
}

// rootLabel finds the volume label entry in a FAT directory.
func rootLabel(dir []byte) string {
	for i := 0; i+fatDirEntSize <= len(dir); i += fatDirEntSize {
		e := dir[i : i+fatDirEntSize]
		attr := e[11]
		switch {
		case e[0] == 0x00:
			return ""
		case e[0] == 0xe5, attr&fatAttrLFNMask == fatAttrLFNMask:
			continue
		case attr&fatAttrLabel != 0 && attr&fatAttrDir == 0:
			name := bytes.Clone(e[:11])
			if name[0] == 0x05 {
				name[0] = 0xe5
			}
			return fatLabel(name)
		}
	}
	return ""
}

// fatLabel trims a FAT label; "NO NAME" is what formatters write for none.
func fatLabel(b []byte) string {
	s := strings.TrimRight(string(b), " \x00")
	if s == "NO NAME" {
		return ""
	}
	return s
}

// checkChains reads the first FAT and fails if any cluster chain loops.
// go-diskfs follows chains until an end-of-chain mark and would spin
// forever on a loop. The entries are decoded exactly as go-diskfs decodes
// them (fat12/fat16/fat32 FromBytes), so the graphs match; a valid FAT has
// no loop at all, so checking every chain, used or not, rejects no good
// image.
func (g *fatGeom) checkChains(r io.ReaderAt) error {
	b := make([]byte, g.fatSize)
	if _, err := r.ReadAt(b, g.fatOffset); err != nil {
		return fmt.Errorf("reading file allocation table: %w", err)
	}
	var next []uint32
	eoc := func(v uint32) bool { return false }
	switch g.bits {
	case 12:
		max := uint32(len(b) * 2 / 3)
		last := max
		if n := uint32(len(b)*2/3) - 1; n < last {
			last = n
		}
		next = make([]uint32, max+1)
		for i := uint32(2); i <= last; i++ {
			o := i * 3 / 2
			if o+1 >= uint32(len(b)) {
				continue
			}
			v := uint32(binary.LittleEndian.Uint16(b[o:]))
			if i%2 == 0 {
				v &= 0x0fff
			} else {
				v >>= 4
			}
			next[i] = v
		}
		eoc = func(v uint32) bool { return v >= 0xff8 && v <= 0xfff }
	case 16:
		max := uint32(len(b) / 2)
		next = make([]uint32, max+1)
		for i := uint32(2); i < max && i*2+2 <= uint32(len(b)); i++ {
			next[i] = uint32(binary.LittleEndian.Uint16(b[i*2:]))
		}
		eoc = func(v uint32) bool { return v >= 0xfff8 && v <= 0xffff }
	case 32:
		max := uint32(len(b) / 4)
		next = make([]uint32, max+1)
		for i := uint32(2); i < max; i++ {
			next[i] = binary.LittleEndian.Uint32(b[i*4:])
		}
		eoc = func(v uint32) bool { return v&0x0ffffff8 == 0x0ffffff8 }
	}
	// Colour walk over the functional graph i -> next[i]: 0 unseen, 1 on
	// the current path, 2 known to end.
	const onPath, ends = 1, 2
	state := make([]uint8, len(next))
	link := func(i uint32) (uint32, bool) {
		v := next[i]
		if v < 2 || v >= uint32(len(next)) || eoc(v) {
			return 0, false
		}
		return v, true
	}
	var path []uint32
	for start := uint32(2); start < uint32(len(next)); start++ {
		path = path[:0]
		for i, ok := start, true; ok && state[i] == 0; i, ok = link(i) {
			state[i] = onPath
			path = append(path, i)
			if j, more := link(i); more && state[j] == onPath {
				return fmt.Errorf("%w: cluster chain loops at cluster %d", ErrCorrupt, j)
			}
		}
		for _, i := range path {
			state[i] = ends
		}
	}
	return nil
}

// Bounds on the ISO9660 structures go-diskfs allocates from sizes stored in
// the image: a corrupt size must not become a 4 GiB allocation (fatal, not
// a panic, on a small VM).
const (
	maxDirSize   = 1 << 20 // a directory or path table
	maxCESize    = 1 << 16 // one Rock Ridge continuation area
	maxCEDepth   = 8       // continuation areas chained from one entry
	maxCEs       = 1024    // continuation areas in the root directory
	vdSupplement = 2
)

// checkISO validates, before go-diskfs reads them, the sizes and places of
// every volume descriptor's path table and root directory, the directories
// the path table points at, and the Rock Ridge continuation areas (CE)
// reachable from the root directory.
func checkISO(r io.ReaderAt, size int64) error {
	vd := make([]byte, isoSectorSize)
	for i := int64(0); ; i++ {
		off := isoFirstVD + i*isoSectorSize
		if i >= isoMaxVDs || off+isoSectorSize > size {
			return fmt.Errorf("%w: no iso9660 volume descriptor terminator", ErrCorrupt)
		}
		if _, err := r.ReadAt(vd, off); err != nil {
			return fmt.Errorf("reading volume descriptor %d: %w", i, err)
		}
		if string(vd[1:6]) != "CD001" {
			return fmt.Errorf("%w: iso9660 volume descriptor %d has no CD001 signature", ErrCorrupt, i)
		}
		switch vd[0] {
		case vdTerminator:
			return nil
		case vdPrimary, vdSupplement:
			if err := checkISOTree(r, size, vd); err != nil {
				return fmt.Errorf("volume descriptor %d: %w", i, err)
			}
		}
	}
}

// isoExtent checks that n bytes at block loc (plus off) lie in the image
// and are at most max.
func isoExtent(what string, loc, off, n uint32, max, size int64) (int64, error) {
	start := int64(loc)*isoSectorSize + int64(off)
	if int64(n) > max {
		return 0, fmt.Errorf("%w: %s of %d bytes is over the %d byte limit", ErrCorrupt, what, n, max)
	}
	if start+int64(n) > size {
		return 0, fmt.Errorf("%w: %s at block %d runs past the end of the image", ErrCorrupt, what, loc)
	}
	return start, nil
}

func checkISOTree(r io.ReaderAt, size int64, vd []byte) error {
	le32 := func(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
	if bs := binary.LittleEndian.Uint16(vd[128:]); bs != isoSectorSize {
		return fmt.Errorf("%w: iso9660 logical block size %d (only %d is supported)", ErrCorrupt, bs, isoSectorSize)
	}
	// The directory go-diskfs reads at a block takes its size from the
	// first record there ("."), at offset 10.
	checkDir := func(what string, loc uint32) ([]byte, error) {
		if _, err := isoExtent(what, loc, 0, 14, 14, size); err != nil {
			return nil, err
		}
		head := make([]byte, 14)
		if _, err := r.ReadAt(head, int64(loc)*isoSectorSize); err != nil {
			return nil, fmt.Errorf("reading %s: %w", what, err)
		}
		n := le32(head[10:])
		start, err := isoExtent(what, loc, 0, n, maxDirSize, size)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		if _, err := r.ReadAt(b, start); err != nil {
			return nil, fmt.Errorf("reading %s: %w", what, err)
		}
		return b, nil
	}
	ptSize, ptLoc := le32(vd[132:]), le32(vd[140:])
	start, err := isoExtent("path table", ptLoc, 0, ptSize, maxDirSize, size)
	if err != nil {
		return err
	}
	pt := make([]byte, ptSize)
	if _, err := r.ReadAt(pt, start); err != nil {
		return fmt.Errorf("reading the path table: %w", err)
	}
	for i := 0; i+8 <= len(pt) && pt[i] != 0; i += 8 + int(pt[i]) + int(pt[i]%2) {
		if _, err := checkDir("path table directory", le32(pt[i+2:])); err != nil {
			return err
		}
	}
	rootRec := vd[156:190]
	if _, err := isoExtent("root directory", le32(rootRec[2:]), 0, le32(rootRec[10:]), maxDirSize, size); err != nil {
		return err
	}
	root, err := checkDir("root directory", le32(rootRec[2:]))
	if err != nil {
		return err
	}
	ces := 0
	return checkCEs(r, size, root, 0, &ces)
}

// checkCEs finds Rock Ridge continuation entries (CE, 28 bytes, version
// 1) in a directory or continuation area and checks the areas they point
// at, recursively. It looks at every byte, not only where go-diskfs would
// parse an entry, so it checks at least what go-diskfs will follow.
func checkCEs(r io.ReaderAt, size int64, area []byte, depth int, count *int) error {
	for i := 0; i+28 <= len(area); i++ {
		if area[i] != 'C' || area[i+1] != 'E' || area[i+2] != 28 || area[i+3] != 1 {
			continue
		}
		*count++
		if *count > maxCEs || depth >= maxCEDepth {
			return fmt.Errorf("%w: too many or too deeply chained rock ridge continuation areas", ErrCorrupt)
		}
		loc := binary.LittleEndian.Uint32(area[i+4:])
		off := binary.LittleEndian.Uint32(area[i+12:])
		n := binary.LittleEndian.Uint32(area[i+20:])
		start, err := isoExtent("rock ridge continuation area", loc, off, n, maxCESize, size)
		if err != nil {
			return err
		}
		next := make([]byte, n)
		if _, err := r.ReadAt(next, start); err != nil {
			return fmt.Errorf("reading a rock ridge continuation area: %w", err)
		}
		if err := checkCEs(r, size, next, depth+1, count); err != nil {
			return err
		}
	}
	return nil
}
