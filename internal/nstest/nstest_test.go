//go:build linux

package nstest

import (
	"os"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

func TestIntegrationNewAndEnter(t *testing.T) {
	testenv.Integration(t)
	own, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	var name string
	t.Run("inside", func(t *testing.T) {
		n := New(t, "sknstest")
		name = n.Name
		if _, err := os.Stat("/run/netns/" + name); err != nil {
			t.Errorf("namespace %s not named: %v", name, err)
		}
		if links, err := n.Netlink.LinkList(); err != nil || len(links) != 1 || links[0].Attrs().Name != "lo" {
			t.Errorf("a new namespace has only lo; got %d links (%v)", len(links), err)
		}
		n.Enter(t)
		cur, err := netns.Get()
		if err != nil {
			t.Fatal(err)
		}
		defer cur.Close()
		if !cur.Equal(n.NS) {
			t.Error("Enter did not move the thread into the namespace")
		}
	})
	if _, err := os.Stat("/run/netns/" + name); name != "" && !os.IsNotExist(err) {
		t.Errorf("namespace %s left behind: %v", name, err)
	}
}
