package packaging

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// TestIntegrationReproducible builds the packages a second time, as
// "make package" does, into another directory, and compares them with
// the first build byte for byte: every date in them is the last commit's
// (SOURCE_DATE_EPOCH), every name and mode is fixed, and the binary is
// built with -trimpath.
func TestIntegrationReproducible(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	first := packages(t)
	bin := filepath.Join(shared, "again")
	cmd := exec.Command("make", "--no-print-directory", "package", "BIN="+bin, "VERSION="+testVersion)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make package: %v\n%s", err, out)
	}
	for _, pattern := range []string{"*.deb", "*.rpm"} {
		a, err := os.ReadFile(onePackage(t, first, pattern))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(onePackage(t, filepath.Join(bin, "pkg"), pattern))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("two builds of %s differ: sha256 %x and %x", pattern, sha256.Sum256(a), sha256.Sum256(b))
		} else {
			t.Logf("%s: sha256 %s, twice", pattern, fmt.Sprintf("%x", sha256.Sum256(a)))
		}
	}
}
