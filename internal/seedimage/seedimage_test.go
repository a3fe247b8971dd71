package seedimage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const fixtures = "../../testdata/nocloud"

// gunzip returns the content of a committed .gz fixture.
func gunzip(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeTemp writes b to a new file in a test directory and returns its path.
func writeTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func seedFile(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var seedNames = []string{"meta-data", "user-data", "vendor-data", "network-config"}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file, dir      string
		typ            Type
		variant, label string
		names          []string // sorted
	}{
		{"cloud-localds.iso.gz", "seed", ISO9660, "iso9660", "cidata", []string{"meta-data", "network-config", "user-data"}},
		{"plain.iso.gz", "seed", ISO9660, "iso9660", "cidata", []string{"META_DAT", "NETWORK_", "USER_DAT", "VENDOR_D"}},
		{"proxmox.iso.gz", "proxmox", ISO9660, "iso9660", "cidata", seedNamesSorted()},
		{"cloud-localds.vfat.gz", "seed", VFAT, "fat12", "cidata", []string{"meta-data", "user-data"}},
		{"fat16.img.gz", "seed", VFAT, "fat16", "cidata", seedNamesSorted()},
		{"fat32.img.gz", "seed", VFAT, "fat32", "CIDATA", seedNamesSorted()},
		{"fuzz-iso.img.gz", "seed", ISO9660, "iso9660", "cidata", seedNamesSorted()},
		{"fuzz-fat.img.gz", "seed", VFAT, "fat12", "cidata", []string{"meta-data", "user-data"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := writeTemp(t, "img", gunzip(t, tt.file))
			im, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			if im.Type() != tt.typ || im.Info().Variant != tt.variant || im.Label() != tt.label {
				t.Errorf("type %q variant %q label %q, want %q %q %q", im.Type(), im.Info().Variant, im.Label(), tt.typ, tt.variant, tt.label)
			}
			names := im.Names()
			slices.Sort(names)
			if !slices.Equal(names, tt.names) {
				t.Errorf("names %q, want %q", names, tt.names)
			}
			for _, n := range seedNames {
				got, err := im.ReadFile(n)
				present := len(tt.names) == 4 || n == "meta-data" || n == "user-data" || n == "network-config" && tt.typ == ISO9660
				if !present {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("ReadFile(%s) = %v, want fs.ErrNotExist", n, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("ReadFile(%s): %v", n, err)
					continue
				}
				if want := seedFile(t, tt.dir, n); !bytes.Equal(got, want) {
					t.Errorf("ReadFile(%s) = %q, want %q", n, got, want)
				}
			}
			info, err := Probe(path)
			if err != nil || info != im.Info() {
				t.Errorf("Probe = %+v, %v; want %+v", info, err, im.Info())
			}
		})
	}
}

func seedNamesSorted() []string {
	s := slices.Clone(seedNames)
	slices.Sort(s)
	return s
}

func TestLookup(t *testing.T) {
	im := &Image{name: "x.iso", entries: []entry{
		{name: "META_DAT", size: 1},
		{name: "NETWORK_CONFIG.;1", size: 2},
		{name: "User-Data", size: 3},
		{name: "vendor-data", size: 4},
		{name: "VENDOR-DATA", size: 5},
		{name: "NOTES_A.TXT;1", size: 6},
		{name: "NOTES_AB.TXT;1", size: 7},
		{name: "NOTES_AB.TXT", size: 8},
	}}
	tests := []struct {
		want string
		size int64 // 0: not found; -1: ambiguous
	}{
		{"meta-data", 1},         // 8.3, '-' → '_'
		{"network-config", 2},    // ISO level 3, version and dot dropped
		{"user-data", 3},         // case-insensitive
		{"vendor-data", 4},       // exact beats case-insensitive
		{"VENDOR-DATA", 5},       // exact
		{"notes-a.txt", 6},       // '-' → '_' with an extension
		{"notes-abcdef.txt", -1}, // 8.3 NOTES_AB.TXT: two entries have it
		{"missing", 0},
	}
	for _, tt := range tests {
		e, err := im.lookup(tt.want)
		switch tt.size {
		case 0:
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("lookup(%s) = %+v, %v; want fs.ErrNotExist", tt.want, e, err)
			}
		case -1:
			if err == nil || !strings.Contains(err.Error(), "ambiguous") {
				t.Errorf("lookup(%s) = %+v, %v; want ambiguous", tt.want, e, err)
			}
		default:
			if err != nil || e.size != tt.size {
				t.Errorf("lookup(%s) = %+v, %v; want size %d", tt.want, e, err, tt.size)
			}
		}
	}
}

// fatRootEntries returns the offsets of the short-name file entries in the
// root directory of a FAT12/16 image.
func fatRootEntries(t *testing.T, img []byte) (*fatGeom, []int64) {
	t.Helper()
	_, g, err := probe(bytes.NewReader(img), int64(len(img)))
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for o := g.rootOffset; o < g.rootOffset+g.rootSize; o += fatDirEntSize {
		e := img[o : o+fatDirEntSize]
		if e[0] == 0 {
			break
		}
		if e[0] == 0xe5 || e[11]&fatAttrLFNMask == fatAttrLFNMask || e[11]&fatAttrLabel != 0 {
			continue
		}
		offs = append(offs, o)
	}
	if len(offs) == 0 {
		t.Fatal("no files in the fixture's root directory")
	}
	return g, offs
}

// setFAT12 sets entry n in both FAT copies.
func setFAT12(img []byte, g *fatGeom, n, v uint32) {
	for copyOff := g.fatOffset; copyOff < g.rootOffset; copyOff += g.fatSize {
		o := copyOff + int64(n*3/2)
		w := binary.LittleEndian.Uint16(img[o:])
		if n%2 == 0 {
			w = w&0xf000 | uint16(v&0xfff)
		} else {
			w = w&0x000f | uint16(v&0xfff)<<4
		}
		binary.LittleEndian.PutUint16(img[o:], w)
	}
}

func TestCorruptImages(t *testing.T) {
	iso := gunzip(t, "cloud-localds.iso.gz")
	fat := gunzip(t, "cloud-localds.vfat.gz")

	mutate := func(src []byte, f func(b []byte) []byte) []byte { return f(bytes.Clone(src)) }
	tests := []struct {
		name    string
		img     []byte
		openErr error  // from Open
		readErr error  // from ReadFile("meta-data") when Open succeeds
		msg     string // in the error text
	}{
		{"empty", nil, ErrUnknownFormat, nil, "not an iso9660 or vfat"},
		{"zeros", make([]byte, 1<<16), ErrUnknownFormat, nil, "not an iso9660"},
		{"iso without primary descriptor", mutate(iso, func(b []byte) []byte {
			b[isoFirstVD] = 2 // PVD → SVD; the Joliet SVD and terminator follow
			return b
		}), ErrCorrupt, nil, "primary volume descriptor"},
		{"iso cut after the descriptors", iso[:isoFirstVD+4*isoSectorSize], ErrCorrupt, nil, "path table at block 20 runs past the end"},
		{"iso root directory of 4 GiB", mutate(iso, func(b []byte) []byte {
			// Found by FuzzOpen: go-diskfs allocated the size as given.
			binary.LittleEndian.PutUint32(b[isoFirstVD+156+10:], 0xff000000)
			return b
		}), ErrCorrupt, nil, "root directory of 4278190080 bytes is over the 1048576 byte limit"},
		{"iso rock ridge continuation loop", mutate(iso, func(b []byte) []byte {
			// A CE entry pointing at itself, in the root directory.
			root := int(binary.LittleEndian.Uint32(b[isoFirstVD+156+2:])) * isoSectorSize
			ce := []byte{'C', 'E', 28, 1}
			ce = binary.LittleEndian.AppendUint32(ce, uint32(root/isoSectorSize))
			ce = binary.BigEndian.AppendUint32(ce, uint32(root/isoSectorSize))
			ce = binary.LittleEndian.AppendUint32(ce, 1000)
			ce = binary.BigEndian.AppendUint32(ce, 1000)
			ce = binary.LittleEndian.AppendUint32(ce, 28)
			ce = binary.BigEndian.AppendUint32(ce, 28)
			copy(b[root+1000:], ce)
			return b
		}), ErrCorrupt, nil, "too deeply chained rock ridge continuation"},
		{"iso cut before the files", mutate(iso, func(b []byte) []byte {
			return b[:firstFileOffset(t, b)]
		}), nil, ErrCorrupt, "past the end"},
		{"iso file over the limit", mutate(iso, func(b []byte) []byte {
			setISOFileSize(t, b, "meta-data", MaxFileSize+1)
			return b
		}), nil, ErrTooLarge, "over the 16777216 byte limit"},
		{"fat boot sector signature", mutate(fat, func(b []byte) []byte {
			b[510] = 0
			return b
		}), ErrUnknownFormat, nil, "not an iso9660 or vfat"},
		{"fat larger than the image", fat[:len(fat)/2], ErrCorrupt, nil, "does not fit"},
		{"fat cluster loop", mutate(fat, func(b []byte) []byte {
			g, offs := fatRootEntries(t, b)
			c := uint32(binary.LittleEndian.Uint16(b[offs[0]+26:]))
			setFAT12(b, g, c, c)
			return b
		}), ErrCorrupt, nil, "loops at cluster"},
		{"fat chain shorter than the file", mutate(fat, func(b []byte) []byte {
			g, offs := fatRootEntries(t, b)
			for _, o := range offs {
				binary.LittleEndian.PutUint32(b[o+28:], uint32(3*g.clusterSize))
			}
			return b
		}), nil, ErrCorrupt, "of 6144 bytes"},
		{"fat file over the limit", mutate(fat, func(b []byte) []byte {
			_, offs := fatRootEntries(t, b)
			for _, o := range offs {
				binary.LittleEndian.PutUint32(b[o+28:], MaxFileSize+1)
			}
			return b
		}), nil, ErrTooLarge, "over the 16777216 byte limit"},
		{"fat with a huge allocation table", mutate(fat, func(b []byte) []byte {
			binary.LittleEndian.PutUint16(b[22:], 0xffff) // sectors per FAT
			return b
		}), ErrCorrupt, nil, "no data area"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "bad.img", tt.img)
			im, err := Open(path)
			if tt.openErr != nil {
				if !errors.Is(err, tt.openErr) || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Open = %v; want %v mentioning %q and the path", err, tt.openErr, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer im.Close()
			_, err = im.ReadFile("meta-data")
			if !errors.Is(err, tt.readErr) || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), path) {
				t.Fatalf("ReadFile = %v; want %v mentioning %q and the path", err, tt.readErr, tt.msg)
			}
		})
	}
}

// isoRootRecords calls f with the offset of each record in the Rock Ridge
// image's root directory and its identifier bytes.
func isoRootRecords(t *testing.T, b []byte, f func(off int, id []byte)) {
	t.Helper()
	root := b[isoFirstVD+156:]
	loc := int(binary.LittleEndian.Uint32(root[2:]))
	size := int(binary.LittleEndian.Uint32(root[10:]))
	dir := b[loc*isoSectorSize : loc*isoSectorSize+size]
	for i := 0; i < len(dir) && dir[i] != 0; i += int(dir[i]) {
		idLen := int(dir[i+32])
		f(loc*isoSectorSize+i, dir[i+33:i+33+idLen])
	}
}

func firstFileOffset(t *testing.T, b []byte) int {
	first := len(b)
	isoRootRecords(t, b, func(off int, id []byte) {
		if len(id) > 1 {
			first = min(first, int(binary.LittleEndian.Uint32(b[off+2:]))*isoSectorSize)
		}
	})
	return first
}

// setISOFileSize patches the size of the file whose Rock Ridge name record
// (NM) carries name.
func setISOFileSize(t *testing.T, b []byte, name string, size uint32) {
	found := false
	isoRootRecords(t, b, func(off int, _ []byte) {
		rec := b[off : off+int(b[off])]
		if bytes.Contains(rec, []byte(name)) {
			binary.LittleEndian.PutUint32(b[off+10:], size)
			binary.BigEndian.PutUint32(b[off+14:], size)
			found = true
		}
	})
	if !found {
		t.Fatalf("no root record for %s", name)
	}
}

// FuzzOpen corrupts real seed images: the input picks a base image (an
// ISO or a FAT one, or none for raw bytes) and overwrites it with patch at
// off. Fuzzing small patches over valid images reaches far deeper into the
// filesystem structures than mutating whole images, and keeps the inputs
// small (the fuzzer is slow with 70 KB inputs).
func FuzzOpen(f *testing.F) {
	bases := [][]byte{gunzip(f, "fuzz-iso.img.gz"), gunzip(f, "fuzz-fat.img.gz")}
	// Seeds aim at the structures: ISO volume descriptor, root record,
	// path table and directory; FAT boot sector, FAT and root directory.
	f.Add(uint8(0), uint32(isoFirstVD+156), []byte{0x22, 0, 0xff, 0xff})
	f.Add(uint8(0), uint32(isoFirstVD+132), []byte{0xff, 0xff, 0xff, 0x7f})
	f.Add(uint8(0), uint32(20*isoSectorSize), []byte{0x30, 0, 1, 2, 3, 4})
	f.Add(uint8(0), uint32(23*isoSectorSize+100), []byte{'C', 'E', 28, 1, 23, 0, 0, 0, 0, 0, 0, 23})
	f.Add(uint8(1), uint32(11), []byte{0, 2, 1, 1, 0, 2, 0x10, 0})
	f.Add(uint8(1), uint32(512+3), []byte{0x30, 0x00, 0x03})
	f.Add(uint8(1), uint32(3*512+26), []byte{0xff, 0x0f, 0xff, 0xff, 0xff, 0x7f})
	f.Add(uint8(2), uint32(0), []byte{0xeb, 0x3c, 0x90, 'm', 'k', 'f', 's', '.', 'f', 'a', 't', 0, 2, 1, 1, 0, 2})
	// Crashers and hangs found by earlier runs live in testdata/fuzz.
	f.Fuzz(func(t *testing.T, base uint8, off uint32, patch []byte) {
		var img []byte
		if int(base) < len(bases) {
			img = bytes.Clone(bases[base])
			o := int(off % uint32(len(img)))
			copy(img[o:], patch)
		} else {
			img = patch
		}
		im, err := OpenReader(bytes.NewReader(img), int64(len(img)), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error does not name the image: %v", err)
			}
			return
		}
		_ = im.Label()
		for _, n := range append(im.Names(), seedNames...) {
			b, err := im.ReadFile(n)
			if err == nil && len(b) > MaxFileSize {
				t.Fatalf("ReadFile(%s) returned %d bytes", n, len(b))
			}
		}
	})
}

func BenchmarkOpenRead(b *testing.B) {
	for _, n := range []string{"cloud-localds.iso.gz", "cloud-localds.vfat.gz", "fat32.img.gz"} {
		path := writeTemp(b, "img", gunzip(b, n))
		b.Run(strings.TrimSuffix(n, ".gz"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				im, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				for _, f := range []string{"meta-data", "user-data"} {
					if _, err := im.ReadFile(f); err != nil {
						b.Fatal(err)
					}
				}
				im.Close()
			}
		})
	}
}
