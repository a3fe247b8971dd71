package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/internal/testsource"
)

// The watch runs beside it what the source of the boot it follows has
// (its table entry's watcher), whatever the source: the test source's
// watcher is started with that boot's record, and told the owned links of
// each plan the watch applies.
func TestIntegrationWatchRunsSourceWatcher(t *testing.T) {
	testenv.Integration(t)
	testsource.Add(t)
	n, peers := newTestNetns(t), newTestNetns(t)
	const mac = "02:5e:00:00:07:01"
	root := kvmRoot(t, map[string]string{
		"testsrc/instance-id":    "iid-watcher\n",
		"testsrc/network-config": hotplugNetworkConfig(map[string]string{mac: "192.0.2.71/24"}),
	})
	if _, err := agent.Boot(context.Background(), agent.Env{Root: sysroot.Root(root)}, agent.BootOptions{Network: agent.NetworkOff}); err != nil {
		t.Fatalf("Boot: %v", err)
	}
	w := startWatch(t, n, root, "veth")
	waitFor(t, "the watcher's run", func() bool { return dutyFile(t, root, "watch-run") != "" })
	if got, want := dutyFile(t, root, "watch-run"), `following the boot of testsrc (skipped), duties ["after-read: instance iid-watcher, live false"`; !strings.HasPrefix(got, want) {
		t.Errorf("watch-run: %q, want it to begin %q", got, want)
	}
	n.AddVeth(t, peers, "eth1", mac)
	waitFor(t, "eth1's address", func() bool { return n.HasAddr(t, "eth1", "192.0.2.71/24") })
	waitFor(t, "the watcher told of eth1", func() bool { return dutyFile(t, root, "watch-links") == "eth1" })
	w.stop(t)
}
