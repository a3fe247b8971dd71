package datasource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const hostileCorpus = "../testdata/hostile"

// The hostile-input corpus (testdata/hostile) through the readers
// themselves: each NoCloud seed through readNoCloud, each guestinfo
// metadata document through the VMware parser. Every read ends before its
// context does, and no error quotes a secret.
func TestHostileCorpusReaders(t *testing.T) {
	seeds, err := os.ReadDir(filepath.Join(hostileCorpus, "nocloud"))
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no NoCloud corpus: %v", err)
	}
	for _, e := range seeds {
		t.Run("nocloud/"+e.Name(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			o := Options{NoCloud: NoCloudOptions{SeedPath: filepath.Join(hostileCorpus, "nocloud", e.Name()), SeedfromTries: 1}, Logger: discardLog()}
			_, err := readNoCloud(ctx, o)
			if ctx.Err() != nil {
				t.Fatalf("the read ran into its deadline")
			}
			if err != nil && strings.Contains(err.Error(), "SECRETMARKER") {
				t.Errorf("error quotes a secret: %v", err)
			}
		})
	}
	docs, err := os.ReadDir(filepath.Join(hostileCorpus, "guestinfo"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no guestinfo corpus: %v", err)
	}
	for _, e := range docs {
		t.Run("guestinfo/"+e.Name(), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(hostileCorpus, "guestinfo", e.Name(), "metadata"))
			if err != nil {
				t.Fatal(err)
			}
			// An encoded document reads here as a string, refused; the
			// command test decodes it.
			err = applyVMwareMetaData(&Metadata{}, b, discardLog())
			if err != nil && strings.Contains(err.Error(), "SECRETMARKER") {
				t.Errorf("error quotes a secret: %v", err)
			}
		})
	}
}
