package apply

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// stackedLink finds the stacked link an operation names, and refuses one
// of another kind: a link that took the name since the plan was made.
func (h *Handle) stackedLink(name string, kind netcfg.Kind) (netlink.Link, error) {
	l, err := h.nl.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("finding link %s: %w", name, err)
	}
	if l.Type() != string(kind) {
		return nil, fmt.Errorf("%s is now a %s link: %w", name, l.Type(), errLinkChanged)
	}
	return l, nil
}

// create makes the link of spec with its parameters in one request, so
// that it exists with them or not at all.
func (h *Handle) create(spec *LinkSpec) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU = spec.Name, spec.MTU
	if spec.MAC != "" {
		hw, err := net.ParseMAC(spec.MAC)
		if err != nil {
			return fmt.Errorf("MAC address: %w", err)
		}
		attrs.HardwareAddr = hw
	}
	var err error
	switch spec.Kind {
	case netcfg.VLAN:
		parent, perr := h.nl.LinkByName(spec.Parent)
		if perr != nil {
			return fmt.Errorf("finding its link %s: %w", spec.Parent, perr)
		}
		attrs.ParentIndex = parent.Attrs().Index
		err = h.nl.LinkAdd(&netlink.Vlan{LinkAttrs: attrs, VlanId: spec.VLANID})
	case netcfg.Bond:
		err = h.nl.LinkAdd(nlBond(attrs, spec.Bond))
	case netcfg.Bridge:
		err = h.addBridge(attrs, spec.Bridge)
	default:
		return fmt.Errorf("cannot create a %s link", spec.Kind)
	}
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("name %s is taken by another link: %w", spec.Name, err)
	}
	if errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("the kernel has no %s links (module not available?): %w", spec.Kind, err)
	}
	return err
}

func nlBond(attrs netlink.LinkAttrs, p *BondParams) *netlink.Bond {
	b := netlink.NewLinkBond(attrs)
	if p == nil {
		return b
	}
	b.Mode = netlink.BondMode(p.Mode)
	b.Miimon, b.UpDelay, b.DownDelay, b.ArpInterval = p.Miimon, p.UpDelay, p.DownDelay, p.ArpInterval
	for _, a := range p.ArpIPTargets {
		b.ArpIpTargets = append(b.ArpIpTargets, a.AsSlice())
	}
	b.ArpValidate = netlink.BondArpValidate(p.ArpValidate)
	b.ArpAllTargets = netlink.BondArpAllTargets(p.ArpAllTargets)
	b.LacpRate = netlink.BondLacpRate(p.LacpRate)
	b.XmitHashPolicy = netlink.BondXmitHashPolicy(p.XmitHashPolicy)
	b.AdSelect = netlink.BondAdSelect(p.AdSelect)
	b.FailOverMac = netlink.BondFailOverMac(p.FailOverMac)
	b.PrimaryReselect = netlink.BondPrimaryReselect(p.PrimaryReselect)
	b.NumPeerNotif, b.PacketsPerSlave, b.ResendIgmp = p.NumPeerNotif, p.PacketsPerSlave, p.ResendIgmp
	b.LpInterval, b.AllSlavesActive, b.MinLinks = p.LpInterval, p.AllSlavesActive, p.MinLinks
	return b
}

// addBridge creates a bridge with its IFLA_BR_* settings in one
// RTM_NEWLINK (the netlink package sets only some of them).
func (h *Handle) addBridge(attrs netlink.LinkAttrs, p *BridgeParams) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(attrs.Name)))
	if attrs.MTU > 0 {
		req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(attrs.MTU))))
	}
	if len(attrs.HardwareAddr) > 0 {
		req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, attrs.HardwareAddr))
	}
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bridge"))
	if p != nil {
		data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
		for _, a := range []struct {
			typ int
			v   int
		}{
			{unix.IFLA_BR_STP_STATE, p.STP},
			{unix.IFLA_BR_FORWARD_DELAY, p.ForwardDelay},
			{unix.IFLA_BR_HELLO_TIME, p.HelloTime},
			{unix.IFLA_BR_MAX_AGE, p.MaxAge},
			{unix.IFLA_BR_AGEING_TIME, p.AgeingTime},
		} {
			if a.v >= 0 {
				data.AddRtAttr(a.typ, nl.Uint32Attr(uint32(a.v)))
			}
		}
		if p.Priority >= 0 {
			data.AddRtAttr(unix.IFLA_BR_PRIORITY, nl.Uint16Attr(uint16(p.Priority)))
		}
	}
	req.AddData(info)
	return h.execute(req)
}

// execute sends a request the netlink package has no call for, on a
// socket in the Handle's namespace.
func (h *Handle) execute(req *nl.NetlinkRequest) error {
	return h.inNS(func() error {
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
}

// enslave makes l a port of op's bond or bridge. A bond takes only ports
// that are down, and brings them up itself.
func (h *Handle) enslave(l netlink.Link, op Op) error {
	m, err := h.stackedLink(op.Master, op.MasterKind)
	if err != nil {
		return err
	}
	if l.Attrs().MasterIndex == m.Attrs().Index {
		return nil
	}
	wasUp := l.Attrs().Flags&net.FlagUp != 0
	if op.MasterKind == netcfg.Bond && wasUp {
		if err := h.nl.LinkSetDown(l); err != nil {
			return fmt.Errorf("taking the link down to enslave it: %w", err)
		}
	}
	if err := h.nl.LinkSetMasterByIndex(l, m.Attrs().Index); err != nil {
		if op.MasterKind == netcfg.Bond && wasUp {
			// Not left down: it may be the NIC the machine is reached by.
			err = errors.Join(err, h.nl.LinkSetUp(l))
		}
		return err
	}
	if op.Primary {
		if err := h.setBondPrimary(m.Attrs().Index, l.Attrs().Index); err != nil {
			return fmt.Errorf("making it the primary of %s: %w", op.Master, err)
		}
	}
	if p := op.Port; p != nil && (p.Cost >= 0 || p.Priority >= 0) {
		if err := h.setPort(l.Attrs().Index, p); err != nil {
			return fmt.Errorf("setting its port parameters on %s: %w", op.Master, err)
		}
	}
	return nil
}

func (h *Handle) setBondPrimary(bond, port int) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(bond)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bond"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_BOND_PRIMARY, nl.Uint32Attr(uint32(port)))
	req.AddData(info)
	return h.execute(req)
}

// setPort sets a bridge port's path cost and priority (IFLA_BRPORT_*).
func (h *Handle) setPort(index int, p *PortParams) error {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_BRIDGE)
	msg.Index = int32(index)
	req.AddData(msg)
	br := nl.NewRtAttr(unix.IFLA_PROTINFO|unix.NLA_F_NESTED, nil)
	if p.Cost >= 0 {
		br.AddRtAttr(unix.IFLA_BRPORT_COST, nl.Uint32Attr(uint32(p.Cost)))
	}
	if p.Priority >= 0 {
		br.AddRtAttr(unix.IFLA_BRPORT_PRIORITY, nl.Uint16Attr(uint16(p.Priority)))
	}
	req.AddData(br)
	return h.execute(req)
}
