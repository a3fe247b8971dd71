package seedimage

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// A damaged second FAT copy (one that nothing reads, or that a crash left
// behind) does not make the seed unreadable: the kernel's vfat reads the
// first copy, and so do we. go-diskfs alone refuses a FAT32 whose copies
// differ by a single byte.
func TestSecondFATCopyIsNotConsulted(t *testing.T) {
	for _, name := range []string{"fat32.img.gz", "fat16.img.gz", "cloud-localds.vfat.gz"} {
		t.Run(name, func(t *testing.T) {
			img := gunzip(t, name)
			bps := int64(binary.LittleEndian.Uint16(img[11:]))
			reserved := int64(binary.LittleEndian.Uint16(img[14:]))
			spf := int64(binary.LittleEndian.Uint16(img[22:]))
			if spf == 0 {
				spf = int64(binary.LittleEndian.Uint32(img[36:]))
			}
			if img[16] != 2 {
				t.Fatalf("fixture has %d FATs, want 2", img[16])
			}
			fat2 := (reserved + spf) * bps
			want := readAll(t, img)
			// Damage the second copy at its start and in its middle.
			for _, off := range []int64{fat2 + 8, fat2 + spf*bps/2} {
				img[off] ^= 0xa5
			}
			if got := readAll(t, img); !equalFiles(got, want) {
				t.Errorf("files read differ once the second FAT copy is damaged")
			}
		})
	}
}

func readAll(t *testing.T, img []byte) map[string][]byte {
	t.Helper()
	im, err := OpenReader(bytes.NewReader(img), int64(len(img)), "img")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	out := map[string][]byte{}
	for _, n := range im.Names() {
		b, err := im.ReadFile(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[n] = b
	}
	if len(out) == 0 {
		t.Fatal("no files")
	}
	return out
}

func equalFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
