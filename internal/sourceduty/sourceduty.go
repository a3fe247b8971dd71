// Package sourceduty is how the boot and watch flows run what a metadata
// source does beyond its read: its duties (after the read, after the
// seed, after the network, at the end of a boot, beside the watch), which
// live with the source in package datasource, on its entry of the table.
// A flow asks this package for the duties of the metadata it read, hands
// them a Host and calls them; it never asks which source it has.
//
// The duties are defined in datasource and reached from here through
// functions datasource sets when it is initialized, so that datasource's
// stable API does not carry seedkeeper's own plumbing.
package sourceduty

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Host is what the duties get of the flow that runs them.
type Host struct {
	// Root resolves every system path; the duties reach files only
	// confined to it.
	Root sysroot.Root
	// Log receives one line per decision; never nil.
	Log *slog.Logger
	// Live says whether the flow changes this machine (not a plan, not
	// an image root).
	Live bool
	// Unit is the systemd unit the flow runs as, where its log is read
	// ("seedkeeper-boot", "seedkeeper-watch").
	Unit string
	// Netns is the network namespace of the links (0: the process's own).
	Netns int
	// Waiting sends a progress line of a wait to the service manager.
	Waiting func(msg string)
	// Allowlist is the hotplug driver allowlist in force for the
	// metadata read: whether it allows a driver, and how it reads.
	Allowlist func() (allows func(driver string) bool, desc string)
	// Links reads the links the duties look at.
	Links Links

	// What only the watch gives its watchers (nil in a boot): apply
	// what a source hands over while the machine runs.
	//
	// ApplyNetwork applies cfg to its NICs that are present and whose
	// driver the watch's allowlist admits, through the watch's own
	// apply (as a hot-added NIC's), and renders the owned network's
	// files; it returns the names of the owned links after it (nil
	// when an operation failed: the error says which, and wraps
	// apply.ErrPartial when the others were made).
	ApplyNetwork func(ctx context.Context, cfg *netcfg.Config) (owned []string, err error)

	// What the configuration says that the duties read.
	NetworkByCloudInit bool          // network.owner is cloud-init
	NetworkEvents      []string      // events.network
	NetworkWait        time.Duration // vmware.network_wait
	Redact             bool          // vmware.redact
}

// Links reads the links of a namespace.
type Links interface {
	// Addrs reads the links named and the default routes.
	Addrs(names []string) (Addrs, error)
	// Subscribe sends a value on every address or route change until
	// ctx ends.
	Subscribe(ctx context.Context) (<-chan struct{}, error)
	// FallbackNIC is the first NIC whose driver allows admits, those
	// with a carrier first, in name order ("" when none).
	FallbackNIC(ctx context.Context, allows func(driver string) bool) (name, mac string, err error)
}

// Link is what a link has: its usable addresses of each family (not
// loopback, link-local or unspecified, and past duplicate address
// detection), in the order the kernel lists them.
type Link struct {
	Name      string
	V4, V6    []netip.Addr
	Tentative bool // an IPv6 address is still in duplicate address detection
}

// Addrs is the live state of some links: each link, and the links
// holding the default route of each family ("" when none of them does).
type Addrs struct {
	Links      []Link
	Def4, Def6 string
}

// Net is what the network step of a boot did.
type Net struct {
	// Action and Reason are the step's (NetResult's): "applied",
	// "planned", "skipped", and why; Action is "" when the network was
	// not handled at all.
	Action, Reason string
	// Links are the names of the owned links, Owned the IDs of the
	// configuration's owned interfaces.
	Links, Owned []string
}

// Extra are the status fields the duties of the sources fill, part of the
// boot's status file.
type Extra struct {
	// Provision is what was done to a SmartOS zone's provisioning state.
	Provision string `json:"provision,omitempty"`
	// VMware is what boot did on VMware beyond the seed and the network.
	VMware *VMwareStatus `json:"vmware,omitempty"`
	// Duties says what the duties of a source without fields of its own
	// did, one line each.
	Duties []string `json:"duties,omitempty"`
}

// VMwareStatus is what boot did on VMware beyond the seed and the network.
type VMwareStatus struct {
	// Wait says what the metadata's wait-on-network asked for, what was
	// waited for, how long, and how it ended; "" when it asked nothing.
	Wait string `json:"wait,omitempty"`
	// Published are the guestinfo keys set, as "guestinfo.KEY VALUE".
	Published []string `json:"published,omitempty"`
	// Notes say why an address was not published, or what failed.
	Notes []string `json:"notes,omitempty"`
	// Customization is what was found of VMware Tools' guest
	// customization; empty when nothing.
	Customization []string `json:"customization,omitempty"`
	// Fallback says what was done for a VMware guest whose metadata has
	// no network configuration (cloud-init's DHCP fallback); "" when it
	// has one.
	Fallback string `json:"fallback,omitempty"`
	// Spec identifies the customization spec the boot read from where
	// VMware Tools leaves it (a SHA-256 over what of it is kept), so that
	// seedkeeper watch does not apply again a spec the boot applied or
	// failed on; "" when the boot read none there.
	Spec string `json:"spec,omitempty"`
}

// Duties are what one source does in one boot beyond its read, bound to
// the metadata read and the Host. A nil function has nothing to do.
type Duties struct {
	// AfterRead runs once the metadata is read, before anything is
	// decided from it; it may change the metadata (a fallback network, a
	// password not to be set again).
	AfterRead func(ctx context.Context, x *Extra)
	// AfterSeed runs once the seed for cloud-init is written.
	AfterSeed func(ctx context.Context, x *Extra)
	// AfterNetwork runs after the network step (net is nil when the
	// network was not handled).
	AfterNetwork func(ctx context.Context, net *Net, x *Extra)
	// End runs when the boot is over, with its outcome.
	End func(ctx context.Context, outcome string, x *Extra)
	// Redacted says that the metadata is redacted on the platform once
	// read: what the admin sees there is not what was read.
	Redacted bool
}

// Boot is what a watch knows of the boot it follows.
type Boot struct {
	Source, Transport string
	// ReportedID is the instance ID the source reported to that boot
	// (the decision's ReportedID); "" when it decided none.
	ReportedID string
	Extra      Extra
	Net        Net
}

// Recorder records what a watcher does to the machine.
type Recorder interface {
	Published(key, value string)
	SetFailed(key, value string, err error, retry time.Time)
	RetryEnded(key string)
	// Customized records a customization handed over while the machine
	// runs (VMware's spec): what was done with it, one line each, in
	// seedkeeper's own words (never a secret), and why it was not
	// applied as a whole: "" when it was, else the first reason, which
	// lines say too.
	Customized(lines []string, why string)
}

// Watcher runs beside the hotplug watch.
type Watcher interface {
	// Run runs until ctx ends.
	Run(ctx context.Context)
	// SetLinks takes the owned links of a new plan.
	SetLinks(names []string)
}

// The functions datasource sets.
var (
	duties  func(md any, h *Host) Duties
	watcher func(h *Host, b Boot, rec Recorder) Watcher
	add     func(Spec) (remove func())
)

// Set is called by datasource once: d binds the duties of a metadata
// value's source (a *datasource.Metadata) to it and h, w makes the watcher
// of the source of the boot b, a adds a Spec to the table.
func Set(d func(md any, h *Host) Duties, w func(h *Host, b Boot, rec Recorder) Watcher, a func(Spec) (remove func())) {
	duties, watcher, add = d, w, a
}

// A Spec is a source defined outside package datasource, with the fields
// of a datasource.Source: only tests add one (internal/testsource), to
// drive the flows through every duty a source can have.
type Spec struct {
	Name                         string
	Platforms, Drivers           []string
	DriversKey                   string
	RawNetwork, DerivedID, Seeds bool
	// Detect makes the source's checks under root.
	Detect func(ctx context.Context, root string) (found bool, reason string, err error)
	// Read reads it: a *datasource.Metadata.
	Read func(ctx context.Context, root string) (md any, err error)
	// Duties binds its duties to md (a *datasource.Metadata) and h.
	Duties func(md any, h *Host) Duties
	// Watcher makes what runs beside the watch that follows the boot b.
	Watcher func(h *Host, b Boot, rec Recorder) Watcher
}

// Add adds s at the end of the source table until remove is called.
func Add(s Spec) (remove func()) { return add(s) }

// For returns the duties of md, a *datasource.Metadata, bound to it and h.
func For(md any, h *Host) Duties { return duties(md, h) }

// WatcherFor returns what runs beside the watch that follows the boot b,
// nil when nothing does. rec may be nil.
func WatcherFor(h *Host, b Boot, rec Recorder) Watcher { return watcher(h, b, rec) }

// SpecPoll is how often, in nanoseconds, a watcher looks for a
// customization handed over while the machine runs (datasource sets it);
// an atomic so that a test can shorten it.
var SpecPoll atomic.Int64

// ToolBudget bounds every tool run of a boot's duties together, in
// nanoseconds (datasource sets it to vmtools.DefaultTimeout). An atomic
// so that a test can shorten it.
var ToolBudget atomic.Int64

// Guestinfo keys the guest's addresses are published in, as cloud-init
// names them: VMware's watcher keeps them current, and the watch record
// holds what it did to them.
const (
	GuestinfoLocalIPv4 = "local-ipv4"
	GuestinfoLocalIPv6 = "local-ipv6"
)

// Guestinfo keys cloud-init's VMware datasource advertises the network
// events in, so that the platform (vSphere's VM Service) knows whether a
// changed network or a hot-added NIC is picked up.
const (
	GuestinfoUpdatesSupported = "cloudinit.updates.supported"
	GuestinfoUpdatesEnabled   = "cloudinit.updates.enabled"
)
