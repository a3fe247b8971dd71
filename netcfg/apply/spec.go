package apply

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/bound"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// LinkSpec is what a stacked link is created with.
type LinkSpec struct {
	Kind netcfg.Kind
	Name string
	MTU  int    // 0: the kernel's default
	MAC  string // "": the kernel chooses
	// Parent and VLANID: the link a VLAN is on, by name, and its ID.
	Parent string
	VLANID int
	Bond   *BondParams   // for a bond
	Bridge *BridgeParams // for a bridge
}

// BondParams are a bond's settings in the kernel's units and numbering
// (the values of its IFLA_BOND_* attributes). -1 leaves the kernel's
// default.
type BondParams struct {
	Mode            int
	Miimon          int // ms
	UpDelay         int // ms
	DownDelay       int // ms
	ArpInterval     int // ms
	ArpIPTargets    []netip.Addr
	ArpValidate     int
	ArpAllTargets   int
	LacpRate        int
	XmitHashPolicy  int
	AdSelect        int
	FailOverMac     int
	PrimaryReselect int
	NumPeerNotif    int
	PacketsPerSlave int
	ResendIgmp      int
	LpInterval      int // s
	AllSlavesActive int
	MinLinks        int
	// Primary is the configuration ID of the member made primary.
	Primary string
}

// BridgeParams are a bridge's settings in the kernel's units (times in
// hundredths of a second, as its IFLA_BR_* attributes take them). -1
// leaves the kernel's default.
type BridgeParams struct {
	STP          int
	ForwardDelay int
	HelloTime    int
	MaxAge       int
	AgeingTime   int
	Priority     int
	// PortCost and PortPriority are per member, by configuration ID.
	PortCost     map[string]int
	PortPriority map[string]int
}

// PortParams are what a bridge port is set to when it is enslaved; -1
// leaves the kernel's default.
type PortParams struct {
	Cost     int
	Priority int
}

func newBondParams() *BondParams {
	return &BondParams{Mode: -1, Miimon: -1, UpDelay: -1, DownDelay: -1, ArpInterval: -1,
		ArpValidate: -1, ArpAllTargets: -1, LacpRate: -1, XmitHashPolicy: -1, AdSelect: -1,
		FailOverMac: -1, PrimaryReselect: -1, NumPeerNotif: -1, PacketsPerSlave: -1,
		ResendIgmp: -1, LpInterval: -1, AllSlavesActive: -1, MinLinks: -1}
}

// The kernel's names for its numbered bond settings, in number order.
var (
	bondModeNames        = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}
	xmitHashNames        = []string{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}
	lacpRateNames        = []string{"slow", "fast"}
	adSelectNames        = []string{"stable", "bandwidth", "count"}
	arpValidateNames     = []string{"none", "active", "backup", "all", "filter", "filter_active", "filter_backup"}
	arpAllTargetsNames   = []string{"any", "all"}
	failOverMacNames     = []string{"none", "active", "follow"}
	primaryReselectNames = []string{"always", "better", "failure"}
)

// enumValue reads a setting given by its kernel name or number.
func enumValue(v string, names []string) (int, error) {
	if i := slices.Index(names, strings.ToLower(v)); i >= 0 {
		return i, nil
	}
	if n, err := bound.ParseInt("value", v, 0, int64(len(names)-1)); err == nil {
		return int(n), nil
	}
	return 0, fmt.Errorf("not one of %s", strings.Join(names, ", "))
}

// intValue reads a whole number from lo to hi, with the one range check
// (internal/bound).
func intValue(v string, lo, hi int) (int, error) {
	n, err := bound.ParseInt("value", v, int64(lo), int64(hi))
	if err != nil {
		return 0, reason(err)
	}
	return int(n), nil
}

// reason states a range error of internal/bound without its name: the
// caller names the parameter.
func reason(err error) error {
	var be *bound.Error
	if errors.As(err, &be) {
		return errors.New(be.Reason())
	}
	return err
}

// durationValue reads a time given as a number of unit (what netplan and
// cloud-init mean; a decimal fraction is allowed, as networkd takes one)
// or with an "ms" or "s" suffix, checks it against 0 to hiMS milliseconds
// with the one range check, and returns it in units of out milliseconds,
// rounded down.
func durationValue(v string, unitMS, outMS, hiMS int) (int, error) {
	num, mult := v, unitMS
	switch {
	case strings.HasSuffix(v, "ms"):
		num, mult = strings.TrimSuffix(v, "ms"), 1
	case strings.HasSuffix(v, "s"):
		num, mult = strings.TrimSuffix(v, "s"), 1000
	}
	// Digits with at most one decimal point: not the exponents, hex
	// forms, infinities and NaN that ParseFloat also takes.
	plain := num != "" && strings.Count(num, ".") <= 1 && strings.Trim(num, "0123456789.") == ""
	n, err := strconv.ParseFloat(num, 64)
	d, ok := bound.Seconds(n * float64(mult) / 1000)
	if !plain || err != nil || !ok {
		return 0, fmt.Errorf("not a duration (a number, or one with ms or s)")
	}
	if err := bound.Check("value", d, 0, time.Duration(hiMS)*time.Millisecond); err != nil {
		return 0, reason(err)
	}
	return int(d / (time.Duration(outMS) * time.Millisecond)), nil
}

func boolValue(v string) (int, error) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return 1, nil
	case "false", "no", "off", "0":
		return 0, nil
	}
	return 0, fmt.Errorf("not a boolean")
}

// maxTimeMS bounds the times a configuration may give (an hour).
const maxTimeMS = 3600 * 1000

// bondParams turns a bond's configuration parameters into BondParams. It
// returns the names of parameters it does not apply live, and an error
// naming the first parameter whose value it cannot use.
func bondParams(params map[string]string) (*BondParams, []string, error) {
	b := newBondParams()
	var skipped []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		var err error
		switch k {
		case "mode":
			b.Mode, err = enumValue(v, bondModeNames)
		case "mii-monitor-interval":
			b.Miimon, err = durationValue(v, 1, 1, maxTimeMS)
		case "up-delay":
			b.UpDelay, err = durationValue(v, 1, 1, maxTimeMS)
		case "down-delay":
			b.DownDelay, err = durationValue(v, 1, 1, maxTimeMS)
		case "arp-interval":
			b.ArpInterval, err = durationValue(v, 1, 1, maxTimeMS)
		case "learn-packet-interval":
			b.LpInterval, err = durationValue(v, 1000, 1000, maxTimeMS)
		case "arp-ip-target":
			b.ArpIPTargets, err = arpTargets(v)
		case "arp-validate":
			b.ArpValidate, err = enumValue(v, arpValidateNames)
		case "arp-all-targets":
			b.ArpAllTargets, err = enumValue(v, arpAllTargetsNames)
		case "lacp-rate":
			b.LacpRate, err = enumValue(v, lacpRateNames)
		case "transmit-hash-policy":
			b.XmitHashPolicy, err = enumValue(v, xmitHashNames)
		case "ad-select":
			b.AdSelect, err = enumValue(v, adSelectNames)
		case "fail-over-mac-policy":
			b.FailOverMac, err = enumValue(v, failOverMacNames)
		case "primary-reselect-policy":
			b.PrimaryReselect, err = enumValue(v, primaryReselectNames)
		case "gratuitous-arp":
			b.NumPeerNotif, err = intValue(v, 0, 255)
		case "packets-per-slave":
			b.PacketsPerSlave, err = intValue(v, 0, 65535)
		case "resend-igmp":
			b.ResendIgmp, err = intValue(v, 0, 255)
		case "min-links":
			b.MinLinks, err = intValue(v, 0, 1<<16)
		case "all-slaves-active":
			b.AllSlavesActive, err = boolValue(v)
		case "primary":
			b.Primary = v
		default:
			skipped = append(skipped, k)
		}
		if err != nil {
			return nil, skipped, fmt.Errorf("parameter %s: %w", k, err)
		}
	}
	return b, skipped, nil
}

// arpTargets reads the space-separated IPv4 addresses of arp-ip-target
// (the kernel takes at most 16).
func arpTargets(v string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, f := range strings.Fields(v) {
		a, err := netip.ParseAddr(f)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("not a list of IPv4 addresses")
		}
		out = append(out, a)
	}
	if len(out) > 16 {
		return nil, fmt.Errorf("more than 16 addresses")
	}
	return out, nil
}

// bridgeParams turns a bridge's configuration parameters into
// BridgeParams, like bondParams.
func bridgeParams(params map[string]string) (*BridgeParams, []string, error) {
	b := &BridgeParams{STP: -1, ForwardDelay: -1, HelloTime: -1, MaxAge: -1, AgeingTime: -1, Priority: -1}
	var skipped []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		var err error
		switch k {
		case "stp":
			b.STP, err = boolValue(v)
		case "forward-delay":
			b.ForwardDelay, err = durationValue(v, 1000, 10, maxTimeMS)
		case "hello-time":
			b.HelloTime, err = durationValue(v, 1000, 10, maxTimeMS)
		case "max-age":
			b.MaxAge, err = durationValue(v, 1000, 10, maxTimeMS)
		case "ageing-time":
			b.AgeingTime, err = durationValue(v, 1000, 10, 1000*maxTimeMS)
		case "priority":
			b.Priority, err = intValue(v, 0, 65535)
		case "path-cost":
			b.PortCost, err = portValues(v, 1, 65535)
		case "port-priority":
			b.PortPriority, err = portValues(v, 0, 63)
		default:
			skipped = append(skipped, k)
		}
		if err != nil {
			return nil, skipped, fmt.Errorf("parameter %s: %w", k, err)
		}
	}
	return b, skipped, nil
}

// portValues reads "port=value" pairs, space-separated.
func portValues(v string, lo, hi int) (map[string]int, error) {
	out := map[string]int{}
	for i, f := range strings.Fields(v) {
		port, val, ok := strings.Cut(f, "=")
		if !ok || port == "" {
			return nil, fmt.Errorf("not a list of port=value pairs")
		}
		n, err := intValue(val, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("pair %d: %w", i+1, err)
		}
		out[port] = n
	}
	return out, nil
}
