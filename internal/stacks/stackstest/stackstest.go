// Package stackstest is a network stack that only tests register: what
// adding a stack takes is this one value (its render, keys, detection,
// places, reload and image check's wording) and its entry in
// netcfg.Stacks. The agent's render, status and uninstall and image
// check and seal take it through the table, as they take the stacks
// seedkeeper ships, and never by its name.
package stackstest

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// The test stack, as an image sets it up: its unit enabled, its program
// installed, and its configuration file naming the directory of its
// files (the image decides it, as ifupdown's interfaces file does).
const (
	Name    = "teststack"
	Title   = "Test Stack"
	Unit    = "teststack.service"
	Program = "/usr/sbin/teststackd"
	// Config is the image's file that names its directory: "dir DIR".
	Config = "/etc/teststack.conf"
	// Running exists while it runs: then its reload is a command.
	Running = "/run/teststack.pid"
)

// FileName is the name of the file the stack renders for the
// interface called id.
func FileName(id string) string { return "seedkeeper-" + id + ".test" }

var spec = stacks.Spec{
	Name: Name, Title: Title, Unit: Unit, Programs: []string{Program},
	Noted: []string{"v2 link: optional"},
	Dir:   dir,
	Render: func(dir string, c any, owned func(any) bool) (string, map[string][]byte, error) {
		if dir == "" {
			return "", nil, nil
		}
		cfg := c.(*netcfg.Config)
		files := map[string][]byte{}
		for i := range cfg.Interfaces {
			ifc := &cfg.Interfaces[i]
			if !owned(ifc) || ifc.Kind != netcfg.Physical {
				continue
			}
			var b strings.Builder
			b.WriteString(netcfg.Header + "\nmac " + ifc.MAC + "\n")
			for _, a := range ifc.Addresses {
				b.WriteString("address " + a.String() + "\n")
			}
			if ifc.DHCP4 {
				b.WriteString("dhcp4\n")
			}
			files[FileName(ifc.ID)] = []byte(b.String())
		}
		return dir, files, nil
	},
	Duties: stacks.Duties{
		Places: func(root string) ([]stacks.Place, error) {
			d, err := dir(root)
			if err != nil || d == "" {
				return nil, err
			}
			return []stacks.Place{{Dir: d, Match: func(n string) bool {
				return strings.HasPrefix(n, "seedkeeper-") && strings.HasSuffix(n, ".test")
			}}}, nil
		},
		Reload: func(root string, files map[string][]byte) stacks.Reload {
			if _, err := fsutil.StatIn(root, Running, false); err != nil {
				return stacks.Reload{Note: Title + " is not running; it reads the files when it starts"}
			}
			return stacks.Reload{Steps: []stacks.ReloadStep{{Command: []string{"teststack-reload", "--files", strings.Join(sortedKeys(files), ",")}}}}
		},
		Dir: stacks.DirWording{
			Config: Config,
			Found:  "test stack files go in %s",
			None:   Config + " names no directory",
			Clone:  "seedkeeper applies owned NICs live, but has nowhere to write test stack files",
			Fix:    "add \"dir /etc/teststack.d\" to " + Config,
		},
	},
}

func sortedKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// dir reads the directory the image's Config names ("" when there is no
// such file or line).
func dir(root string) (string, error) {
	b, err := fsutil.ReadFileIn(context.Background(), root, Config, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(l, "dir "); ok && path.IsAbs(d) {
			return path.Clean(d), nil
		}
	}
	return "", nil
}

// Register adds the test stack at the end of netcfg.Stacks for the rest
// of the test and returns it.
func Register(t testing.TB) *netcfg.Stack {
	t.Helper()
	s := stacks.NewStack(spec).(*netcfg.Stack)
	saved := netcfg.Stacks
	netcfg.Stacks = append(slices.Clone(saved), s)
	t.Cleanup(func() { netcfg.Stacks = saved })
	return s
}
