package image_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/image"
)

// An image whose installer left a later cloud.cfg.d file: check names the
// file that wins.
func ExampleCheck() {
	dir, _ := os.MkdirTemp("", "image")
	defer os.RemoveAll(dir)
	write := func(p, data string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644)
	}
	write(image.DropIn, "datasource_list: [NoCloud, None]\ndatasource: {NoCloud: {fs_label: null}}\nnetwork: {config: disabled}\n")
	write("/etc/cloud/cloud.cfg.d/99-installer.cfg", "datasource_list: [ConfigDrive, None]\n")

	rep, err := image.Check(dir, "drop-in")
	if err != nil {
		fmt.Println(err)
		return
	}
	it := rep.Items[0]
	fmt.Println(it.Verdict)
	fmt.Println(it.Paths)
	// Output:
	// finding
	// [/etc/cloud/cloud.cfg.d/95-seedkeeper.cfg /etc/cloud/cloud.cfg.d/99-installer.cfg]
}

// Sealing is one plan: print it (the dry run), then apply exactly it.
func ExamplePlanSeal() {
	dir, _ := os.MkdirTemp("", "image")
	defer os.RemoveAll(dir)
	write := func(p, data string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644)
	}
	write("/var/lib/cloud/data/instance-id", "i-template\n")
	write("/etc/machine-id", "5f1c8a2e3b4d4e6f8a9b0c1d2e3f4a5b\n")
	write("/etc/ssh/ssh_host_ed25519_key", "key\n")

	plan, err := image.PlanSeal(dir, image.SealOptions{KeepSSHHostKeys: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range plan.Actions {
		fmt.Println(a.Op, a.Path)
	}
	if err := plan.Apply(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// remove-tree /var/lib/cloud/data
	// empty /etc/machine-id
	// keep /etc/ssh/ssh_host_ed25519_key
	// write /var/lib/seedkeeper/sealed
}
