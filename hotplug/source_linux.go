package hotplug

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// subscribeBuffer is the receive buffer asked for the event socket: room
// for thousands of link messages, so a veth storm seldom overflows it. When
// it does (ENOBUFS) the watcher subscribes and lists again. Tests shrink it.
var subscribeBuffer = 4 << 20

// nlSource reads links and their events over rtnetlink in one namespace,
// and drivers through ETHTOOL_GDRVINFO on a socket opened in it.
type nlSource struct {
	ns      netns.NsHandle // netns.None() for the current namespace
	h       *netlink.Handle
	ethtool int // AF_INET datagram socket in ns, for SIOCETHTOOL
	lastErr atomic.Pointer[error]
	log     *slog.Logger
}

func newSource(ns int, log *slog.Logger) (linkSource, error) {
	s := &nlSource{ns: netns.None(), log: log}
	if ns > 0 {
		s.ns = netns.NsHandle(ns)
	}
	var err error
	if s.ns.IsOpen() {
		s.h, err = netlink.NewHandleAt(s.ns, unix.NETLINK_ROUTE)
	} else {
		s.h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	if err != nil {
		return nil, fmt.Errorf("hotplug: opening rtnetlink: %w", err)
	}
	s.ethtool, err = socketIn(s.ns)
	if err != nil {
		s.h.Close()
		return nil, fmt.Errorf("hotplug: opening the ethtool socket: %w", err)
	}
	return s, nil
}

// socketIn opens a datagram socket in ns. A socket stays in the namespace
// it was made in, so only its creation needs the thread switch; that runs
// on a goroutine of its own whose thread is discarded if it cannot switch
// back.
func socketIn(ns netns.NsHandle) (int, error) {
	open := func() (int, error) {
		return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	}
	if !ns.IsOpen() {
		return open()
	}
	type result struct {
		fd  int
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{-1, err}
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			res <- result{-1, fmt.Errorf("entering the namespace: %w", err)}
			return
		}
		fd, err := open()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		} // else the thread ends with this goroutine
		res <- result{fd, err}
	}()
	r := <-res
	return r.fd, r.err
}

func (s *nlSource) close() {
	unix.Close(s.ethtool)
	s.h.Close()
}

func (s *nlSource) subscriptionErr() error {
	if p := s.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *nlSource) subscribe() (<-chan linkEvent, func(), error) {
	ch := make(chan netlink.LinkUpdate, 1024)
	done := make(chan struct{})
	var stopping atomic.Bool
	ns := s.ns
	opts := netlink.LinkSubscribeOptions{
		Namespace: &ns,
		ErrorCallback: func(err error) {
			if !stopping.Load() {
				s.lastErr.Store(&err)
			}
		},
		ReceiveBufferSize:      subscribeBuffer,
		ReceiveBufferForceSize: unix.Geteuid() == 0,
	}
	err := netlink.LinkSubscribeWithOptions(ch, done, opts)
	if err != nil && opts.ReceiveBufferForceSize {
		// Root without CAP_NET_ADMIN (a user namespace): take what
		// net.core.rmem_max allows.
		opts.ReceiveBufferForceSize = false
		err = netlink.LinkSubscribeWithOptions(ch, done, opts)
	}
	if err != nil {
		return nil, nil, err
	}
	out := make(chan linkEvent, 1024)
	go func() {
		defer close(out)
		for u := range ch {
			out <- linkEventOf(u)
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopping.Store(true)
			close(done) // closes the socket; the receiver then closes ch
			for range out {
			}
		})
	}
	return out, stop, nil
}

func linkEventOf(u netlink.LinkUpdate) linkEvent {
	return linkEvent{linkInfo: linkInfoOf(u.Link), Del: u.Header.Type == unix.RTM_DELLINK}
}

func linkInfoOf(l netlink.Link) linkInfo {
	a := l.Attrs()
	li := linkInfo{Index: a.Index, Name: a.Name}
	hw := a.HardwareAddr
	if len(hw) > 0 {
		li.MAC = hw.String()
	}
	li.Ether = a.EncapType == "ether" && len(hw) == 6 && !bytes.Equal(hw, make(net.HardwareAddr, 6))
	return li
}

// list dumps the links, again while the dump is interrupted (links
// changed meanwhile) or fails, until ctx is done.
func (s *nlSource) list(ctx context.Context) ([]linkInfo, error) {
	wait := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		links, err := s.h.LinkList()
		if err == nil {
			out := make([]linkInfo, len(links))
			for i, l := range links {
				out[i] = linkInfoOf(l)
			}
			return out, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) && attempt == 1 {
			s.log.Warn("hotplug: listing links failed; retrying", "err", err)
		}
		if attempt < 3 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// driver asks the kernel which driver runs the link. A link renamed since
// its event is found again by index.
func (s *nlSource) driver(li linkInfo) (string, error) {
	info, err := unix.IoctlGetEthtoolDrvinfo(s.ethtool, li.Name)
	if errors.Is(err, unix.ENODEV) {
		l, lerr := s.h.LinkByIndex(li.Index)
		if lerr != nil {
			return "", fmt.Errorf("link %d is gone: %w", li.Index, lerr)
		}
		info, err = unix.IoctlGetEthtoolDrvinfo(s.ethtool, l.Attrs().Name)
	}
	if err != nil {
		return "", fmt.Errorf("ETHTOOL_GDRVINFO on %s: %w", li.Name, err)
	}
	return unix.ByteSliceToString(info.Driver[:]), nil
}
