package linkaddr

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// readAddrs reads the links named (in the namespace ns; 0 or less is
// this process's own) and the main table's default routes: only the
// owned links are looked at.
func readAddrs(ns int, names []string) (sourceduty.Addrs, error) {
	var st sourceduty.Addrs
	var h *netlink.Handle
	var err error
	if ns > 0 {
		h, err = netlink.NewHandleAt(netns.NsHandle(ns))
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return st, fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	byIndex := map[int]string{}
	for _, name := range names {
		l, err := h.LinkByName(name)
		if err != nil {
			return st, fmt.Errorf("link %s: %w", name, err)
		}
		byIndex[l.Attrs().Index] = name
		ol := sourceduty.Link{Name: name}
		addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return st, fmt.Errorf("addresses of %s: %w", name, err)
		}
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			if a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
				ol.Tentative = ol.Tentative || ip.Is6()
				continue
			}
			// IFA_F_TEMPORARY is IFA_F_SECONDARY's bit: only an IPv6
			// privacy address is left out for it.
			if !usableAddr(ip) || (ip.Is6() && a.Flags&unix.IFA_F_TEMPORARY != 0) {
				continue
			}
			if ip.Is4() {
				ol.V4 = append(ol.V4, ip)
			} else {
				ol.V6 = append(ol.V6, ip)
			}
		}
		st.Links = append(st.Links, ol)
	}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := h.RouteList(nil, fam)
		if err != nil {
			return st, fmt.Errorf("routes: %w", err)
		}
		best, bestPrio := "", 0
		for _, r := range routes {
			if !isDefault(r.Dst) {
				continue
			}
			idx := r.LinkIndex
			if idx == 0 && len(r.MultiPath) > 0 {
				idx = r.MultiPath[0].LinkIndex
			}
			name, ok := byIndex[idx]
			if !ok {
				continue
			}
			if best == "" || r.Priority < bestPrio {
				best, bestPrio = name, r.Priority
			}
		}
		if fam == netlink.FAMILY_V4 {
			st.Def4 = best
		} else {
			st.Def6 = best
		}
	}
	return st, nil
}

// isDefault reports whether dst is a default route's destination.
func isDefault(dst *net.IPNet) bool {
	if dst == nil {
		return true
	}
	ones, _ := dst.Mask.Size()
	return ones == 0 && dst.IP.IsUnspecified()
}

// usableAddr is cloud-init's is_valid_ip_addr: not loopback, link-local
// or unspecified.
func usableAddr(ip netip.Addr) bool {
	return !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsUnspecified()
}

// subscribeAddrRoute sends on the channel it returns after every address
// or route change in the namespace ns (0 or less: this process's own),
// until ctx ends; the channel is closed when either subscription ends.
func subscribeAddrRoute(ctx context.Context, ns int) (<-chan struct{}, error) {
	h := netns.None()
	if ns > 0 {
		h = netns.NsHandle(ns)
	}
	done := make(chan struct{})
	addrs := make(chan netlink.AddrUpdate, 64)
	routes := make(chan netlink.RouteUpdate, 64)
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: &h}); err != nil {
		close(done)
		return nil, fmt.Errorf("subscribing to address events: %w", err)
	}
	if err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{Namespace: &h}); err != nil {
		close(done)
		return nil, fmt.Errorf("subscribing to route events: %w", err)
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-addrs:
				if !ok {
					return
				}
			case _, ok := <-routes:
				if !ok {
					return
				}
			}
			select {
			case out <- struct{}{}:
			default: // one pending reconcile covers every change so far
			}
		}
	}()
	return out, nil
}

// fallbackNIC picks the NIC of cloud-init's fallback network config among
// the links of the namespace ns (0 or less: this process's) that are
// Ethernet devices or veths, have a MAC and a driver allows: one with a
// carrier first, then any, each in name order ("eth2" before "eth10").
// "" when there is none.
func fallbackNIC(ctx context.Context, ns int, allows func(driver string) bool) (name, mac string, err error) {
	var h *apply.Handle
	if ns > 0 {
		h, err = apply.OpenAt(netns.NsHandle(ns))
	} else {
		h, err = apply.Open()
	}
	if err != nil {
		return "", "", err
	}
	defer h.Close()
	links, err := h.Links(ctx)
	if err != nil {
		return "", "", err
	}
	type cand struct {
		name, mac string
		carrier   bool
	}
	var cands []cand
	for _, l := range links {
		a := l.Attrs()
		if (l.Type() != "device" && l.Type() != "veth") || a.Flags&net.FlagLoopback != 0 || len(a.HardwareAddr) != 6 {
			continue
		}
		drv, err := h.Driver(a.Name)
		if err != nil || !allows(drv) {
			continue
		}
		cands = append(cands, cand{a.Name, apply.LinkMAC(a), a.RawFlags&unix.IFF_LOWER_UP != 0})
	}
	slices.SortFunc(cands, func(x, y cand) int {
		if x.carrier != y.carrier {
			if x.carrier {
				return -1
			}
			return 1
		}
		return naturalCompare(x.name, y.name)
	})
	if len(cands) == 0 {
		return "", "", nil
	}
	return cands[0].name, cands[0].mac, nil
}

// naturalCompare orders names with the numbers in them compared as
// numbers.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da != "" && db != "" {
			na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitsPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
