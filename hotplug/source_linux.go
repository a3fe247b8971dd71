package hotplug

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// subscribeBuffer is the receive buffer asked for the event socket: room
// for thousands of link messages, so a veth storm seldom overflows it. When
// it does (ENOBUFS) the watcher subscribes and lists again. Tests shrink it.
var subscribeBuffer = 4 << 20

// nlSource reads links and their events over rtnetlink in one namespace,
// and drivers through ETHTOOL_GDRVINFO, through the same namespace handle
// netcfg/apply uses.
type nlSource struct {
	h       *apply.Handle
	lastErr atomic.Pointer[error]
	log     *slog.Logger
}

func newSource(ns int, log *slog.Logger) (linkSource, error) {
	var h *apply.Handle
	var err error
	if ns > 0 {
		h, err = apply.OpenAt(netns.NsHandle(ns))
	} else {
		h, err = apply.Open()
	}
	if err != nil {
		return nil, fmt.Errorf("hotplug: %w", err)
	}
	return &nlSource{h: h, log: log}, nil
}

func (s *nlSource) close() { s.h.Close() }

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
	ns := s.h.Namespace()
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
		// The NIC's own address, as the apply knows it: a bond member
		// carries the bond's, and would look like another NIC.
		li.MAC = apply.LinkMAC(a)
	}
	li.Ether = a.EncapType == "ether" && len(hw) == 6 && !bytes.Equal(hw, make(net.HardwareAddr, 6))
	return li
}

// list dumps the links (apply.Handle.Links starts an interrupted dump
// again), and again after a pause while that fails, until ctx is done.
func (s *nlSource) list(ctx context.Context) ([]linkInfo, error) {
	wait := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		links, err := s.h.Links(ctx)
		if err == nil {
			out := make([]linkInfo, len(links))
			for i, l := range links {
				out[i] = linkInfoOf(l)
			}
			return out, nil
		}
		if attempt == 1 {
			s.log.Warn("hotplug: listing links failed; retrying", "err", err)
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
	d, err := s.h.Driver(li.Name)
	if errors.Is(err, unix.ENODEV) {
		l, lerr := s.h.LinkByIndex(li.Index)
		if lerr != nil {
			return "", fmt.Errorf("link %d is gone: %w", li.Index, lerr)
		}
		d, err = s.h.Driver(l.Attrs().Name)
	}
	return d, err
}
