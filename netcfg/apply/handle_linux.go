package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// nlHandle is the part of *netlink.Handle this package uses; tests wrap a
// real handle to inject dump interruptions.
type nlHandle interface {
	LinkList() ([]netlink.Link, error)
	LinkByIndex(index int) (netlink.Link, error)
	LinkByName(name string) (netlink.Link, error)
	LinkAdd(link netlink.Link) error
	LinkSetMasterByIndex(link netlink.Link, masterIndex int) error
	AddrList(link netlink.Link, family int) ([]netlink.Addr, error)
	RouteListFiltered(family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error)
	LinkSetName(link netlink.Link, name string) error
	LinkAddAltName(link netlink.Link, name string) error
	LinkDelAltName(link netlink.Link, name string) error
	LinkSetDown(link netlink.Link) error
	LinkSetUp(link netlink.Link) error
	LinkSetMTU(link netlink.Link, mtu int) error
	AddrAdd(link netlink.Link, addr *netlink.Addr) error
	AddrDel(link netlink.Link, addr *netlink.Addr) error
	RouteAdd(route *netlink.Route) error
	RouteDel(route *netlink.Route) error
	RuleList(family int) ([]netlink.Rule, error)
	RuleAdd(rule *netlink.Rule) error
	RuleDel(rule *netlink.Rule) error
	Delete()
}

// Handle reads and changes the links of one network namespace. Use it from
// one goroutine at a time.
type Handle struct {
	nl nlHandle
	ns netns.NsHandle // our own copy
	fd int            // AF_INET datagram socket in the namespace, for ethtool ioctls
	// here is true for a Handle on the process's own namespace: nothing
	// needs a namespace switch.
	here bool
}

// Open returns a Handle on the network namespace of the calling thread.
//
// It never switches namespaces (which would need CAP_SYS_ADMIN on top of
// CAP_NET_ADMIN): the sockets are opened where the process already is.
func Open() (*Handle, error) {
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening rtnetlink: %w", err)
	}
	h := &Handle{nl: nl, ns: netns.None(), fd: -1, here: true}
	if h.fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		h.Close()
		return nil, fmt.Errorf("opening ethtool socket: %w", err)
	}
	return h, nil
}

// OpenAt returns a Handle on the network namespace ns. The caller may close
// ns afterwards; the Handle keeps its own sockets in it.
//
// When ns is the namespace the process started in, and the calling thread
// is in it too, OpenAt is Open: it never calls setns(), so it needs no
// CAP_SYS_ADMIN. (Every thread that no namespace switch has locked away
// stays in that namespace, so a Handle made so is right on any thread.)
func OpenAt(ns netns.NsHandle) (*Handle, error) {
	if isStartNS(ns) && threadInStartNS() {
		return Open()
	}
	dup, err := unix.FcntlInt(uintptr(ns), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace: %w", err)
	}
	h := &Handle{ns: netns.NsHandle(dup), fd: -1}
	if h.nl, err = netlink.NewHandleAt(h.ns, unix.NETLINK_ROUTE); err != nil {
		h.ns.Close()
		return nil, fmt.Errorf("opening rtnetlink: %w", err)
	}
	err = h.inNS(func() (err error) {
		h.fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("opening ethtool socket: %w", err)
	}
	return h, nil
}

// startNS is the device and inode of the network namespace the process
// started in, read while the package initialises (before any goroutine
// can have switched a thread elsewhere); zero when /proc cannot say.
var startNS = func() unix.Stat_t {
	var st unix.Stat_t
	if unix.Stat("/proc/thread-self/ns/net", &st) != nil {
		return unix.Stat_t{}
	}
	return st
}()

// isStartNS reports whether ns is the network namespace the process
// started in.
func isStartNS(ns netns.NsHandle) bool {
	var st unix.Stat_t
	return unix.Fstat(int(ns), &st) == nil && sameNS(st, startNS)
}

// threadInStartNS reports whether the calling thread is in the network
// namespace the process started in.
func threadInStartNS() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/thread-self/ns/net", &st) == nil && sameNS(st, startNS)
}

func sameNS(a, b unix.Stat_t) bool { return b.Ino != 0 && a.Dev == b.Dev && a.Ino == b.Ino }

// inNS runs f on a thread inside the Handle's namespace. The thread goes
// back to its own namespace afterwards, or, if it cannot, stays locked and
// ends with its goroutine.
func (h *Handle) inNS(f func() error) error {
	if h.here {
		return f()
	}
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(h.ns); err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		err = f()
		if rerr := netns.Set(orig); rerr != nil {
			ch <- errors.Join(err, fmt.Errorf("returning to own namespace: %w", rerr))
			return
		}
		runtime.UnlockOSThread()
		ch <- err
	}()
	return <-ch
}

// Close releases the Handle's sockets.
func (h *Handle) Close() error {
	h.nl.Delete()
	if h.ns.IsOpen() {
		h.ns.Close()
	}
	if h.fd < 0 {
		return nil
	}
	return unix.Close(h.fd)
}

// promoteSecondaries makes the kernel keep the other IPv4 addresses of a
// subnet when its primary address is removed; by default
// (net.ipv4.conf.*.promote_secondaries=0) it deletes them all, which would
// take a person's own addresses with ours.
func (h *Handle) promoteSecondaries(index int) error {
	l, err := h.nl.LinkByIndex(index)
	if err != nil {
		return err
	}
	path := "/proc/sys/net/ipv4/conf/" + l.Attrs().Name + "/promote_secondaries"
	return h.inNS(func() error {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == "1" {
			return nil
		}
		// A /proc/sys file exists or the link is gone: never create one.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return fmt.Errorf("setting promote_secondaries: %w", err)
		}
		defer f.Close()
		if _, err := f.Write([]byte("1\n")); err != nil {
			return fmt.Errorf("setting promote_secondaries: %w", err)
		}
		return nil
	})
}

// Driver returns the kernel driver of the named link (ETHTOOL_GDRVINFO),
// such as "virtio_net", "veth" or "bridge".
func (h *Handle) Driver(name string) (string, error) {
	info, err := unix.IoctlGetEthtoolDrvinfo(h.fd, name)
	if err != nil {
		return "", fmt.Errorf("reading driver of %s: %w", name, err)
	}
	return unix.ByteSliceToString(info.Driver[:]), nil
}

// Links lists the links of the namespace, starting an interrupted dump
// again (see retryDump).
func (h *Handle) Links(ctx context.Context) ([]netlink.Link, error) {
	return retryDump(ctx, "links", h.nl.LinkList)
}

// LinkByIndex returns the link with the given index.
func (h *Handle) LinkByIndex(index int) (netlink.Link, error) { return h.nl.LinkByIndex(index) }

// Namespace returns the Handle's network namespace, or netns.None() for a
// Handle on the calling thread's own (from Open). It stays the Handle's:
// valid until Close.
func (h *Handle) Namespace() netns.NsHandle { return h.ns }

// dumpTries bounds how often an interrupted dump is started again.
const dumpTries = 5

// retryDump runs f until it returns something other than
// netlink.ErrDumpInterrupted (the kernel's table changed during the dump,
// so the answer may be incomplete), at most dumpTries times.
func retryDump[T any](ctx context.Context, what string, f func() (T, error)) (T, error) {
	var zero T
	var err error
	for range dumpTries {
		if cerr := ctx.Err(); cerr != nil {
			return zero, fmt.Errorf("listing %s: %w", what, cerr)
		}
		var v T
		v, err = f()
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return zero, fmt.Errorf("listing %s: %w", what, err)
		}
	}
	return zero, fmt.Errorf("listing %s: interrupted %d times in a row: %w", what, dumpTries, err)
}

// read returns the links of the namespace, with the driver of each link
// cfg selects and the addresses and routes of each link it owns.
func (h *Handle) read(ctx context.Context, cfg *netcfg.Config, allow Allowlist) ([]Link, error) {
	nls, err := h.Links(ctx)
	if err != nil {
		return nil, err
	}
	live := make([]Link, 0, len(nls))
	for _, nl := range nls {
		a := nl.Attrs()
		l := Link{
			Index:    a.Index,
			Name:     a.Name,
			AltNames: slices.Clone(a.AltNames),
			MAC:      LinkMAC(a),
			Stacked:  stackedTypes[nl.Type()],
			Kind:     nl.Type(),
			Master:   a.MasterIndex,
			Parent:   a.ParentIndex,
			BondMode: -1,
			MTU:      a.MTU,
			Up:       a.Flags&net.FlagUp != 0,
			OperUp:   a.OperState == netlink.OperUp,
		}
		switch v := nl.(type) {
		case *netlink.Vlan:
			l.VLANID = v.VlanId
		case *netlink.Bond:
			if v.Mode >= 0 && int(v.Mode) < len(bondModeNames) {
				l.BondMode = int(v.Mode)
			}
		}
		live = append(live, l)
	}
	byIndex := map[int]*Link{}
	// The stacked links of the configured names: the planner owns those
	// of the configured kind.
	stackedNames := map[string]bool{}
	for i := range cfg.Interfaces {
		if ifc := &cfg.Interfaces[i]; isStacked(ifc) {
			stackedNames[ifc.LinkName()] = true
		}
	}
	for i := range live {
		if l := &live[i]; l.Stacked && stackedNames[l.Name] {
			byIndex[l.Index] = l
		}
	}
	for _, i := range candidates(cfg, live) {
		l := &live[i]
		l.Driver, _ = h.Driver(l.Name) // unknown driver: not allowed
		if allow.Allows(l.Driver) {
			byIndex[l.Index] = l
		}
	}
	if len(byIndex) == 0 {
		return live, nil
	}

	addrs, err := retryDump(ctx, "addresses", func() ([]netlink.Addr, error) {
		return h.nl.AddrList(nil, netlink.FAMILY_ALL)
	})
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		l := byIndex[a.LinkIndex]
		if l == nil || a.IPNet == nil {
			continue
		}
		if p, ok := prefixOf(a.IPNet); ok {
			l.Addresses = append(l.Addresses, p)
		}
	}

	routes, err := retryDump(ctx, "routes", func() ([]netlink.Route, error) {
		// Table unspecified with the table filter: every table.
		return h.nl.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, err
	}
	for _, r := range routes {
		l := byIndex[r.LinkIndex]
		if l == nil || r.Table == unix.RT_TABLE_LOCAL || r.Type != unix.RTN_UNICAST || len(r.MultiPath) > 0 {
			continue
		}
		rt := netcfg.Route{Metric: r.Priority, Table: r.Table, OnLink: r.Flags&int(netlink.FLAG_ONLINK) != 0 && r.Gw != nil}
		if r.Dst != nil {
			p, ok := prefixOf(r.Dst)
			if !ok {
				continue
			}
			rt.To = p
		} else if r.Family == unix.AF_INET6 {
			rt.To = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		} else {
			rt.To = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		}
		if r.Gw != nil {
			gw, ok := netip.AddrFromSlice(r.Gw)
			if !ok {
				continue
			}
			rt.Via = gw.Unmap()
		}
		l.Routes = append(l.Routes, normRoute(rt))
	}

	if !configHasRules(cfg) {
		return live, nil
	}
	nrs, err := retryDump(ctx, "rules", func() ([]netlink.Rule, error) {
		return h.nl.RuleList(netlink.FAMILY_ALL)
	})
	if err != nil {
		return nil, err
	}
	var rules []netcfg.Rule
	for _, nr := range nrs {
		if r, ok := ruleOf(nr); ok {
			rules = append(rules, r)
		}
	}
	for _, l := range byIndex {
		l.Rules = rules
	}
	return live, nil
}

func configHasRules(cfg *netcfg.Config) bool {
	return slices.ContainsFunc(cfg.Interfaces, func(i netcfg.Interface) bool { return len(i.RoutingPolicy) > 0 })
}

// ruleOf reads a kernel rule in the model's terms; ok is false for one
// the configuration cannot have made (a goto, an interface match, a port
// range, an inverted one, a masked mark, ...).
func ruleOf(nr netlink.Rule) (netcfg.Rule, bool) {
	if nr.Invert || nr.Goto > 0 || nr.IifName != "" || nr.OifName != "" || nr.Dport != nil || nr.Sport != nil ||
		nr.UIDRange != nil || nr.IPProto > 0 || nr.TunID != 0 || nr.Flow > 0 ||
		(nr.Mask != nil && *nr.Mask != 0xffffffff) || nr.Table <= 0 || nr.Mark > math.MaxInt32 {
		return netcfg.Rule{}, false
	}
	r := netcfg.Rule{Table: nr.Table, Priority: nr.Priority, Mark: int(nr.Mark), TOS: int(nr.Tos)}
	var ok bool
	if nr.Src != nil {
		if r.From, ok = prefixOf(nr.Src); !ok {
			return r, false
		}
	}
	if nr.Dst != nil {
		if r.To, ok = prefixOf(nr.Dst); !ok {
			return r, false
		}
	}
	return r, r.From.IsValid() || r.To.IsValid()
}

// nlRule is the kernel's form of a configured rule.
func nlRule(r netcfg.Rule) *netlink.Rule {
	nr := netlink.NewRule()
	nr.Family = unix.AF_INET6
	if ruleIs4(r) {
		nr.Family = unix.AF_INET
	}
	nr.Table = r.Table
	if r.Priority != 0 {
		nr.Priority = r.Priority
	}
	nr.Mark = uint32(r.Mark)
	nr.Tos = uint(r.TOS)
	if r.From.IsValid() {
		nr.Src = ipNet(r.From)
	}
	if r.To.IsValid() {
		nr.Dst = ipNet(r.To)
	}
	return nr
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	if bits == 0 {
		return netip.Prefix{}, false
	}
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ones), true
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// Plan reads the live state of the links cfg selects and plans what brings
// the owned ones to cfg (see Diff). rc is the receipt of earlier applies.
// A nil cfg reads nothing and gives an empty plan.
func (h *Handle) Plan(ctx context.Context, cfg *netcfg.Config, allow Allowlist, rc *Receipt) (*Plan, error) {
	if cfg == nil {
		return Diff(nil, nil, allow, rc), nil
	}
	live, err := h.read(ctx, cfg, allow)
	if err != nil {
		return nil, fmt.Errorf("reading live network: %w", err)
	}
	return Diff(cfg, live, allow, rc), nil
}

// keepOldName gives a renamed link its old name as an alternative name
// (see Op.keepName). A kernel without alternative names (before 5.5), or
// an old name another link already holds as one, leaves the link with its
// new name only: the rename is done, and that is not a failure.
func keepOldName(nl nlHandle, l netlink.Link, old string) error {
	err := nl.LinkAddAltName(l, old)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keeping %s as an alternative name: %w", old, err)
	}
	return nil
}

// errLinkChanged is returned for an operation whose link no longer has the
// MAC it had when planned.
var errLinkChanged = errors.New("link changed since the plan was made")

// Apply runs the plan's operations in order. A failed operation is recorded
// in the Result and the others still run; the returned error is then
// Result.Err (wrapping ErrPartial). The Result's Receipt is what the caller
// persists.
func (h *Handle) Apply(ctx context.Context, p *Plan) (*Result, error) {
	res := &Result{Receipt: p.receipt.clone()}
	links := map[int]netlink.Link{}
	for _, op := range p.Ops {
		err := ctx.Err()
		if err == nil {
			err = h.do(op, links)
		}
		if op.ifMissing && errors.Is(err, unix.EEXIST) {
			continue // still there: nothing was done
		}
		res.Ops = append(res.Ops, OpResult{Op: op, Err: err})
		if op.Kind == CreateLink && err == nil {
			// The receipt holds which link seedkeeper made.
			if l, lerr := h.nl.LinkByName(op.Spec.Name); lerr == nil {
				op.Index = l.Attrs().Index
			}
		}
		res.Receipt.record(op, err)
		h.recordAltNames(res.Receipt, op, err)
	}
	return res, res.Err()
}

// recordAltNames keeps the receipt's alternative names of a NIC true to
// what op did: a rename gives up the name it takes and may have kept the
// old one (which the kernel may have refused: the link says), and a
// DelAltName gave its name up.
func (h *Handle) recordAltNames(rc *Receipt, op Op, err error) {
	switch {
	case err != nil:
	case op.Kind == DelAltName:
		rc.recordAltName(op.MAC, op.NewName, false)
	case op.Kind == Rename:
		rc.recordAltName(op.MAC, op.NewName, false)
		if op.keepName {
			if l, lerr := h.nl.LinkByIndex(op.Index); lerr == nil && slices.Contains(l.Attrs().AltNames, op.Name) {
				rc.recordAltName(op.MAC, op.Name, true)
			}
		}
	}
}

func (h *Handle) do(op Op, links map[int]netlink.Link) error {
	switch op.Kind {
	case CreateLink:
		if op.Spec == nil {
			return errors.New("nothing to create")
		}
		return h.create(op.Spec)
	case AddRule:
		// A rule belongs to no link: nothing to find first.
		err := h.nl.RuleAdd(nlRule(op.Rule))
		if errors.Is(err, unix.EEXIST) {
			return nil // made since the plan was read
		}
		return err
	case RemoveRule:
		err := h.nl.RuleDel(nlRule(op.Rule))
		if errors.Is(err, unix.ENOENT) {
			return nil // already gone
		}
		return err
	}
	var l netlink.Link
	var ok bool
	if op.LinkKind != "" {
		// Found by name each time: it may have been created by this plan.
		var err error
		if l, err = h.stackedLink(op.Name, op.LinkKind); err != nil {
			return err
		}
	} else if l, ok = links[op.Index]; !ok {
		var err error
		l, err = h.nl.LinkByIndex(op.Index)
		if err != nil {
			return fmt.Errorf("finding link %d: %w", op.Index, err)
		}
		if !strings.EqualFold(LinkMAC(l.Attrs()), op.MAC) {
			return errLinkChanged
		}
		links[op.Index] = l
	}
	switch op.Kind {
	case DelAltName:
		err := h.nl.LinkDelAltName(l, op.NewName)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
			return nil // given up already
		}
		return err
	case Rename:
		if op.wasUp {
			if err := h.nl.LinkSetDown(l); err != nil {
				return err
			}
		}
		// A name the link already holds as an alternative name (kept
		// by an earlier rename) must be given up before it becomes the
		// link's name: the kernel counts it as taken.
		if slices.Contains(l.Attrs().AltNames, op.NewName) {
			if err := h.nl.LinkDelAltName(l, op.NewName); err != nil {
				return fmt.Errorf("giving up alternative name %s: %w", op.NewName, err)
			}
		}
		err := h.nl.LinkSetName(l, op.NewName)
		if errors.Is(err, unix.EEXIST) {
			err = fmt.Errorf("name %s is taken by another link: %w", op.NewName, err)
		}
		if err == nil && op.keepName {
			err = keepOldName(h.nl, l, op.Name)
		}
		if op.wasUp {
			err = errors.Join(err, h.nl.LinkSetUp(l))
		}
		return err
	case SetMTU:
		return h.nl.LinkSetMTU(l, op.MTU)
	case LinkUp:
		return h.nl.LinkSetUp(l)
	case SetMaster:
		return h.enslave(l, op)
	case AddAddress:
		return h.nl.AddrAdd(l, &netlink.Addr{IPNet: ipNet(op.Address)})
	case RemoveAddress:
		if op.Address.Addr().Is4() {
			if err := h.promoteSecondaries(l.Attrs().Index); err != nil {
				return err
			}
		}
		err := h.nl.AddrDel(l, &netlink.Addr{IPNet: ipNet(op.Address)})
		if errors.Is(err, unix.EADDRNOTAVAIL) {
			return nil // already gone
		}
		return err
	case AddRoute:
		// The link's index as found now: a stacked link made by this
		// plan had none when it was planned.
		nr := nlRoute(l.Attrs().Index, op.Route)
		// Installed by an administrator, as the stacks' own static
		// routes are: a networkd that keeps a link's static
		// configuration (KeepConfiguration=static in seedkeeper's files)
		// keeps this route when it takes the link, where it would
		// remove a "boot" route and add it again. Removal matches any
		// protocol, so a route added before this still goes.
		nr.Protocol = unix.RTPROT_STATIC
		return h.nl.RouteAdd(nr)
	case RemoveRoute:
		err := h.nl.RouteDel(nlRoute(l.Attrs().Index, op.Route))
		if errors.Is(err, unix.ESRCH) {
			return nil // already gone
		}
		return err
	}
	return fmt.Errorf("unknown operation %d", op.Kind)
}

func nlRoute(index int, r netcfg.Route) *netlink.Route {
	nr := &netlink.Route{
		LinkIndex: index,
		Dst:       ipNet(r.To),
		Priority:  r.Metric,
		Table:     r.Table,
	}
	if r.Via.IsValid() {
		nr.Gw = r.Via.AsSlice()
		if r.OnLink {
			nr.Flags |= int(netlink.FLAG_ONLINK)
		}
	} else if r.To.Addr().Is4() {
		nr.Scope = netlink.SCOPE_LINK
	}
	return nr
}

// stackedTypes are the link types built on other links. A VLAN inherits its
// parent's MAC and a bond gives its own to its members, so matching them by
// MAC would make a configured NIC look claimed twice.
var stackedTypes = map[string]bool{
	"vlan": true, "bond": true, "bridge": true, "macvlan": true, "macvtap": true,
	"ipvlan": true, "ipvtap": true, "vxlan": true, "vrf": true, "team": true,
	"geneve": true, "gretap": true, "ip6gretap": true, "hsr": true,
}

// LinkMAC is the address a configuration's MAC means for a link: the
// permanent one when the kernel knows it (a bond member's current address
// is the bond's), else, for a bond member, the address the bond keeps for
// it, else the current one.
func LinkMAC(a *netlink.LinkAttrs) string {
	if realMAC(a.PermHWAddr) {
		return a.PermHWAddr.String()
	}
	if s, ok := a.Slave.(*netlink.BondSlave); ok && realMAC(s.PermHardwareAddr) {
		return s.PermHardwareAddr.String()
	}
	return a.HardwareAddr.String()
}

func realMAC(hw net.HardwareAddr) bool {
	return len(hw) == 6 && !bytes.Equal(hw, make(net.HardwareAddr, 6))
}

// LockReceipt takes an exclusive lock that serialises everyone who reads,
// applies and saves the receipt at path (boot, watch, "net apply"), so that
// none of them saves a receipt that forgets what another just added. The
// lock is a file beside the receipt; unlock releases it.
func LockReceipt(path string) (unlock func(), err error) {
	// Created without following a link, in a directory that is not one.
	f, err := fsutil.OpenLock(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("locking the receipt: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the receipt %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
