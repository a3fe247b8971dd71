package seed

import (
	"bytes"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// BenchmarkWriteUnchanged measures the every-boot case: the seed is
// already there and nothing is written.
func BenchmarkWriteUnchanged(b *testing.B) {
	root := sysroot.Root(b.TempDir())
	s := testSeed()
	s.UserData = bytes.Repeat([]byte("#cloud-config\n"), 4096) // ~57 KB
	s.NetworkConfig = []byte("version: 1\nconfig: []\n")
	if _, err := Write(string(root), s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Write(string(root), s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteChanged measures a boot whose instance ID changed: the
// marker twice and meta-data are written, each with fsyncs.
func BenchmarkWriteChanged(b *testing.B) {
	root := sysroot.Root(b.TempDir())
	s := testSeed()
	i := 0
	for b.Loop() {
		i++
		s.InstanceID = "i-" + string(rune('a'+i%26))
		if _, err := Write(string(root), s); err != nil {
			b.Fatal(err)
		}
	}
}
