package datasource_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/datasource"
)

// Reading NoCloud with a scratch root: a seed directory, and an instance
// ID on the kernel command line that beats the one in the directory.
func ExampleRead_noCloud() {
	root, err := os.MkdirTemp("", "nocloud")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	write := func(p, content string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	write("/proc/cmdline", "root=/dev/vda1 ds=nocloud;i=iid-from-cmdline\n")
	write("/var/lib/cloud/seed/nocloud/meta-data", "instance-id: iid-from-dir\nlocal-hostname: web1\n")
	write("/var/lib/cloud/seed/nocloud/user-data", "#cloud-config\n")

	md, err := datasource.Read(context.Background(), datasource.SourceNoCloud, datasource.Options{Root: root})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(md.InstanceID, md.Hostname, md.Origin.Transport)
	// Output: iid-from-cmdline web1 cmdline,dir:/var/lib/cloud/seed/nocloud
}
