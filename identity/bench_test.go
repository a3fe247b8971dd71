package identity

import (
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// BenchmarkDecide measures an ordinary boot: a pin exists and is kept
// (load, classify with SHA-1 over the seed, save unchanged but for the
// confirmation time).
func BenchmarkDecide(b *testing.B) {
	root := sysroot.Root(b.TempDir())
	in := proxmoxInput(uuidA, web1, hostA)
	in.Root, in.Now = string(root), t0
	if _, err := Decide(in); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Decide(in); err != nil {
			b.Fatal(err)
		}
	}
}
