package netcfg_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// An image where NetworkManager was masked but its .wants link was left
// behind, and systemd-networkd is enabled: systemd starts networkd only,
// and so seedkeeper renders for networkd.
func ExampleDetectImageStack() {
	root, _ := os.MkdirTemp("", "image")
	defer os.RemoveAll(root)
	file := func(p, body string) {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(body), 0o644)
	}
	link := func(target, p string) {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.Symlink(target, filepath.Join(root, p))
	}
	for _, u := range []string{"NetworkManager.service", "systemd-networkd.service"} {
		file("/lib/systemd/system/"+u, "[Install]\nWantedBy=multi-user.target\n")
		link("/lib/systemd/system/"+u, "/etc/systemd/system/multi-user.target.wants/"+u)
	}
	file("/usr/sbin/NetworkManager", "")
	link("/dev/null", "/etc/systemd/system/NetworkManager.service")

	d, err := netcfg.DetectImageStack(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Stack.Title, "-", d.Reason)
	for _, n := range d.Notes {
		fmt.Println("note:", n)
	}
	// Output:
	// systemd-networkd - systemd-networkd.service is enabled: multi-user.target wants it (/etc/systemd/system/multi-user.target.wants/systemd-networkd.service)
	// note: NetworkManager.service is masked by /etc/systemd/system/NetworkManager.service: NetworkManager does not start, whatever links want it
}
