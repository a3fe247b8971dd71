package seedimage_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/internal/seedimage"
)

// A plain ISO9660 seed (genisoimage without -R or -J) lists META_DAT.;1;
// ReadFile finds it as meta-data.
func ExampleOpen() {
	img := unpack("../../testdata/nocloud/plain.iso.gz")
	defer os.RemoveAll(filepath.Dir(img))

	im, err := seedimage.Open(img)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	fmt.Println(im.Type(), im.Label(), im.Names())
	meta, err := im.ReadFile("meta-data")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", meta)
	// Output:
	// iso9660 cidata [META_DAT NETWORK_ USER_DAT VENDOR_D]
	// instance-id: iid-fixture-01
	// local-hostname: fixture-host
	// public-keys:
	//   - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFixtureKeyOne fixture@one
}

// unpack writes a gzipped fixture to a temporary file.
func unpack(gz string) string {
	f, err := os.Open(gz)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "seedimage")
	if err != nil {
		log.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "seed.img"))
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, zr); err != nil {
		log.Fatal(err)
	}
	return out.Name()
}
