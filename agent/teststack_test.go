package agent

import (
	"context"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/stacks/stackstest"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// A stack that only the tests register (stackstest) is rendered for,
// recorded in the status, reloaded, swept of its stale files and
// uninstalled through the table alone: nothing in the agent names a
// stack, so adding one is its value and its entry in netcfg.Stacks.
func TestTestOnlyStack(t *testing.T) {
	stackstest.Register(t)
	root := sysroot.Root(t.TempDir())
	// The image runs only the test stack, and names its directory.
	link(t, string(root), "etc/systemd/system/multi-user.target.wants/"+stackstest.Unit)
	writeT(t, root, stackstest.Program, "")
	const dir = "/etc/teststack.d"
	writeT(t, root, stackstest.Config, "dir "+dir+"\n")
	// A stale file of ours, a person's file of our name, another's.
	stale := path.Join(dir, stackstest.FileName("gone"))
	writeT(t, root, stale, netcfg.Header+"\nmac 52:54:00:00:00:99\n")
	mine := path.Join(dir, stackstest.FileName("mine"))
	writeT(t, root, mine, "a person's\n")
	writeT(t, root, path.Join(dir, "other.conf"), netcfg.Header+"\n")

	cfg, err := netcfg.Parse([]byte("version: 2\nethernets:\n  lan:\n    match: {macaddress: \"52:54:00:12:34:56\"}\n    addresses: [192.0.2.10/24]\n    optional: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	live := []apply.Link{{Index: 2, Name: "ens3", MAC: "52:54:00:12:34:56", Driver: "virtio_net", Up: true}}
	p := apply.Diff(cfg, live, apply.Drivers("virtio_net"), nil)
	e := &Env{Root: root}
	e.init()
	res := &NetResult{}
	if err := e.render(context.Background(), cfg, p, virtioOnly, res, false); err != nil {
		t.Fatal(err)
	}
	want := path.Join(dir, stackstest.FileName("lan"))
	b, err := os.ReadFile(root.Path(want))
	if err != nil || !strings.HasPrefix(string(b), netcfg.Header+"\nmac 52:54:00:12:34:56\naddress 192.0.2.10/24\n") {
		t.Fatalf("%s: %q, %v", want, b, err)
	}
	// The status records the stack and why, and what its keys leave out.
	if !strings.HasPrefix(res.Stack, stackstest.Name+" (") || !slices.Equal(res.Rendered, []string{stackstest.FileName("lan")}) {
		t.Errorf("status: stack %q, rendered %q", res.Stack, res.Rendered)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return n == "lan: not applied by "+stackstest.Name+": optional" }) {
		t.Errorf("notes %q do not say what the stack's files leave out", res.Notes)
	}
	// The sweep took the stale file of ours only.
	if !slices.Equal(res.Removed, []string{stackstest.FileName("gone")}) {
		t.Errorf("removed %q", res.Removed)
	}
	for _, p := range []string{mine, path.Join(dir, "other.conf")} {
		if _, err := os.Stat(root.Path(p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// Not running: no reload asked.
	if res.files == nil || res.files.Stack.Name != stackstest.Name || e.reloadStack(context.Background(), res.files) {
		t.Errorf("reload of a stack that is not running: %+v", res.files)
	}

	u, err := Uninstall(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(u.Removed, want) || slices.Contains(u.Removed, mine) {
		t.Errorf("uninstall removed %q", u.Removed)
	}
	if !slices.ContainsFunc(u.Left, func(l string) bool { return strings.HasPrefix(l, mine+": ") }) {
		t.Errorf("uninstall left %q, without %s", u.Left, mine)
	}
	if _, err := os.Stat(root.Path(want)); err == nil {
		t.Errorf("%s is still there", want)
	}
}
