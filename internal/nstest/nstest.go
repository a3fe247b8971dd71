//go:build linux

// Package nstest gives a privileged test a network namespace of its own,
// like Tailscale's tstest helpers: named (so "ip netns exec NAME" works),
// with a netlink handle in it, removed when the test ends, and a skip with
// an actionable message when the test is not root.
package nstest

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

var seq atomic.Int64

// NS is a named network namespace made for one test.
type NS struct {
	Name    string         // the name under /run/netns
	NS      netns.NsHandle // closed when the test ends
	Netlink *netlink.Handle
}

// New creates a named network namespace for tb, called prefix-PID-N, and a
// netlink handle in it; both go away when tb ends. The calling thread is
// back in its own namespace when New returns. Without root, or without
// namespaces in the kernel, tb is skipped saying so.
func New(tb testing.TB, prefix string) *NS {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to create network namespaces: run `sudo make test`")
	}
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("reading own namespace: %v", err)
	}
	defer orig.Close()
	ns, err := netns.NewNamed(name) // also moves this thread into it
	if err != nil {
		runtime.UnlockOSThread()
		tb.Skipf("cannot create network namespace %s (%v): run as root with `sudo make test`, on a kernel with namespaces", name, err)
	}
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: it dies with this goroutine.
		tb.Fatalf("returning from %s to own namespace: %v", name, err)
	}
	runtime.UnlockOSThread()
	tb.Cleanup(func() {
		ns.Close()
		if err := netns.DeleteNamed(name); err != nil {
			tb.Errorf("removing namespace %s: %v", name, err)
		}
	})
	n := &NS{Name: name, NS: ns}
	if n.Netlink, err = netlink.NewHandleAt(ns); err != nil {
		tb.Fatalf("netlink handle in %s: %v", name, err)
	}
	tb.Cleanup(n.Netlink.Close)
	return n
}

// Enter locks the calling goroutine to its thread and moves the thread
// into n for the rest of the test (for code under test that works in the
// current namespace); it returns to its own namespace when tb ends.
func (n *NS) Enter(tb testing.TB) {
	tb.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("reading own namespace: %v", err)
	}
	if err := netns.Set(n.NS); err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		tb.Fatalf("entering %s: %v", n.Name, err)
	}
	tb.Cleanup(func() {
		if err := netns.Set(orig); err != nil {
			tb.Errorf("returning to own namespace: %v", err) // thread stays locked and dies
			return
		}
		orig.Close()
		runtime.UnlockOSThread()
	})
}

// AddVeth creates a veth whose end name, with mac, is in n and whose peer
// ("p-" + name) is in peers, so that only the one link appears in n.
func (n *NS) AddVeth(tb testing.TB, peers *NS, name, mac string) {
	tb.Helper()
	hw, err := net.ParseMAC(mac)
	if err != nil {
		tb.Fatal(err)
	}
	err = peers.Netlink.LinkAdd(&netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: hw, Namespace: netlink.NsFd(n.NS)},
		PeerName:  "p-" + name,
	})
	if err != nil {
		tb.Fatalf("adding veth %s: %v", name, err)
	}
}

// Link is the link called name in n.
func (n *NS) Link(tb testing.TB, name string) netlink.Link {
	tb.Helper()
	l, err := n.Netlink.LinkByName(name)
	if err != nil {
		tb.Fatalf("link %s: %v", name, err)
	}
	return l
}

// Addrs lists the IPv4 addresses of the link called name, as
// "a.b.c.d/len".
func (n *NS) Addrs(tb testing.TB, name string) []string {
	tb.Helper()
	as, err := n.Netlink.AddrList(n.Link(tb, name), netlink.FAMILY_V4)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, a := range as {
		out = append(out, a.IPNet.String())
	}
	return out
}

// HasAddr reports whether the link called name has the IPv4 address addr
// ("a.b.c.d/len").
func (n *NS) HasAddr(tb testing.TB, name, addr string) bool {
	tb.Helper()
	return slices.Contains(n.Addrs(tb, name), addr)
}
