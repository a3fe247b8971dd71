package apply

import (
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// OpenAt on the namespace the process is already in must not call setns():
// that would need CAP_SYS_ADMIN, which the units do not grant. The handle
// is opened on a thread whose effective set lacks CAP_SYS_ADMIN (the
// capability sets are per thread, and the thread ends with the test, as
// its goroutine exits locked), where setns() fails with EPERM for root
// and others alike.
func TestOpenAtOwnNamespaceNeedsNoSysAdmin(t *testing.T) {
	type result struct {
		links int
		err   error
		fatal string
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			ch <- result{fatal: "capget: " + err.Error()}
			return
		}
		data[unix.CAP_SYS_ADMIN/32].Effective &^= 1 << (unix.CAP_SYS_ADMIN % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			ch <- result{fatal: "capset: " + err.Error()}
			return
		}
		ns, err := netns.Get()
		if err != nil {
			ch <- result{fatal: "netns.Get: " + err.Error()}
			return
		}
		defer ns.Close()
		h, err := OpenAt(ns)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer h.Close()
		links, err := h.nl.LinkList()
		ch <- result{links: len(links), err: err}
	}()
	r := <-ch
	if r.fatal != "" {
		t.Fatal(r.fatal)
	}
	if r.err != nil {
		t.Fatalf("OpenAt(own namespace) without CAP_SYS_ADMIN: %v (it must not switch namespaces)", r.err)
	}
	if r.links == 0 {
		t.Error("the handle lists no links; want at least lo")
	}
}
