package image

import (
	"path"
	"slices"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/stacks/stackstest"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// A stack that only the tests register (stackstest) is found, worded and
// fixed by image check, and its files planned away by seal, through the
// table alone: image names no stack, so adding one is its value and its
// entry in netcfg.Stacks.
func TestTestOnlyStackCheckAndSeal(t *testing.T) {
	stackstest.Register(t)
	m := freshImage(t)
	m.remove("/etc/systemd/system/multi-user.target.wants/systemd-networkd.service")
	m.write("/lib/systemd/system/"+stackstest.Unit, "[Install]\nWantedBy=multi-user.target\n")
	m.link("/lib/systemd/system/"+stackstest.Unit, "/etc/systemd/system/multi-user.target.wants/"+stackstest.Unit)
	m.write(stackstest.Program, "")

	// Its directory is the image's to give: none yet.
	expectItem(t, check(t, m), "network-stack", Finding, stackstest.Title+" enabled", stackstest.Config+" names no directory", "nowhere to write test stack files", "add \"dir /etc/teststack.d\" to "+stackstest.Config)

	const dir = "/etc/teststack.d"
	m.write(stackstest.Config, "dir "+dir+"\n")
	expectItem(t, check(t, m), "network-stack", OK, stackstest.Title+" enabled", "test stack files go in "+dir, "renders them for "+stackstest.Title)

	ours := path.Join(dir, stackstest.FileName("lan"))
	m.write(ours, netcfg.Header+"\nmac 52:54:00:12:34:56\n")
	m.write(path.Join(dir, stackstest.FileName("edited")), "mac 52:54:00:12:34:57\n")
	m.write(path.Join(dir, "local.conf"), netcfg.Header+"\n")
	if got := under(actionPaths(planSeal(t, m, SealOptions{}).Actions, Remove), dir); !slices.Equal(got, []string{ours}) {
		t.Errorf("planned removals under %s %q, want %q", dir, got, []string{ours})
	}
}
