package seed_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/seed"
)

// Write the seed for metadata a source read, with the instance ID the
// identity decision chose, into a scratch root.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "seed-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	md := &datasource.Metadata{
		Source:     datasource.SourceNoCloud,
		Hostname:   "web1",
		PublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx web@admin"},
		UserData:   []byte("#cloud-config\npackage_upgrade: false\n"),
	}
	s := seed.FromMetadata(md, "i-0123abcd")
	// Only when cloud-init owns the network; wrapped input is unwrapped.
	s.NetworkConfig = []byte("network:\n  version: 1\n  config: []\n")

	res, err := seed.Write(dir, s)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range res.Written {
		fmt.Println("wrote", p)
	}
	for _, name := range []string{seed.MetaDataFile, seed.NetworkConfigFile} {
		b, _ := os.ReadFile(filepath.Join(dir, seed.Dir, name))
		fmt.Printf("--- %s\n%s", name, b)
	}
	again, _ := seed.Write(dir, s)
	fmt.Println("changed on the second write:", again.Changed())
	src, _ := seed.SourceDir(dir)
	fmt.Printf("NoCloud reader reads: %q\n", src)
	// Output:
	// wrote /var/lib/cloud/seed/nocloud/meta-data
	// wrote /var/lib/cloud/seed/nocloud/user-data
	// wrote /var/lib/cloud/seed/nocloud/vendor-data
	// wrote /var/lib/cloud/seed/nocloud/network-config
	// --- meta-data
	// instance-id: "i-0123abcd"
	// local-hostname: "web1"
	// public-keys:
	//   - "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx web@admin"
	// --- network-config
	// version: 1
	// config: []
	// changed on the second write: false
	// NoCloud reader reads: ""
}
