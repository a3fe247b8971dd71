package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The modules linked into the seedkeeper binary, per operating system. A
// new module is a decision (add a dependency only when a well-kept
// library does the job better than what we would write, and say why in
// the commit): when this test fails, either drop the import or add
// the module here in the same commit that says why.
var wantDeps = map[string][]string{
	"linux": {
		"github.com/coreos/go-systemd/v22",     // sd_notify
		"github.com/diskfs/go-diskfs",          // ISO9660 and FAT seeds without mounting
		"github.com/djherbis/times",            // (go-diskfs)
		"github.com/elliotwutingfeng/asciiset", // (go-diskfs)
		"github.com/godbus/dbus/v5",            // asking systemd-networkd to reload
		"github.com/mdlayher/socket",           // (vsock)
		"github.com/mdlayher/vsock",            // the mdata vsock transport
		"github.com/vishvananda/netlink",       // rtnetlink: links, addresses, routes, events
		"github.com/vishvananda/netns",         // network namespaces (netlink)
		"golang.org/x/net",                     // (vsock)
		"golang.org/x/sync",                    // (vsock)
		"golang.org/x/sys",                     // ioctls, flock, termios (the mdata serial port)
		"go.yaml.in/yaml/v3",                   // cloud-init documents
	},
	"other": { // freebsd, darwin: no netlink, D-Bus or vsock
		"github.com/coreos/go-systemd/v22",
		"github.com/diskfs/go-diskfs",
		"github.com/djherbis/times",
		"github.com/elliotwutingfeng/asciiset",
		"github.com/vishvananda/netns",
		"golang.org/x/sys",
		"go.yaml.in/yaml/v3",
	},
	"windows": { // as other, and a serial library: on Unix the port is an os.File
		"github.com/coreos/go-systemd/v22",
		"github.com/diskfs/go-diskfs",
		"github.com/djherbis/times",
		"github.com/elliotwutingfeng/asciiset",
		"github.com/vishvananda/netns",
		"go.bug.st/serial", // the mdata serial transport
		"golang.org/x/sys",
		"go.yaml.in/yaml/v3",
	},
}

// TestDeps pins the modules the binary links, as Tailscale's deps_test.go
// does, so that every addition is reviewed.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	for _, goos := range []string{"linux", "freebsd", "darwin", "windows"} {
		want, ok := wantDeps[goos]
		if !ok {
			want = wantDeps["other"]
		}
		cmd := exec.Command(goTool, "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list for %s: %v", goos, err)
		}
		var got []string
		for _, m := range strings.Fields(string(out)) {
			if !slices.Contains(got, m) {
				got = append(got, m)
			}
		}
		slices.Sort(got)
		for _, m := range got {
			if !slices.Contains(want, m) {
				t.Errorf("GOOS=%s: seedkeeper links module %s, which is not in wantDeps: say why it earns its place, then add it", goos, m)
			}
		}
		for _, m := range want {
			if !slices.Contains(got, m) {
				t.Errorf("GOOS=%s: seedkeeper no longer links %s: remove it from wantDeps (and go.mod)", goos, m)
			}
		}
	}
}
