package datasource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"slices"
	"strings"

	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// What cloud-init's VMware datasource did once the network was up, and
// seedkeeper now does because cloud-init runs NoCloud (docs/cloud-init.md,
// "What seedkeeper does for the VMware datasource"): wait for the
// families the metadata's wait-on-network names, publish the guest's
// addresses in guestinfo.local-ipv4 and guestinfo.local-ipv6, advertise
// the network events handled, and say when VMware Tools' guest
// customization is at work beside seedkeeper.

// waitPoll is how often the owned links are looked at while waiting, and
// waitProgress how often the wait says it is still waiting.
const (
	waitPoll     = 200 * time.Millisecond
	waitProgress = 5 * time.Second
)

// vmwareDuties are what boot does for VMware beyond its read, in
// Extra.VMware: what is found of VMware Tools' customization, and a spec's
// begin, after the read (found first, so that a boot failing later keeps
// it: what Tools' customization does to the network matters most then);
// the wait-on-network and the published addresses after the network
// (cloud-init's VMware datasource waited for the network and published
// the guest's addresses; with its NoCloud, boot does); a spec's report
// and marker at the end.
func vmwareDuties(md *Metadata, h *sourceduty.Host) sourceduty.Duties {
	b := &vmwareBoot{tools: newToolBudget()}
	return sourceduty.Duties{
		AfterRead: func(ctx context.Context, x *sourceduty.Extra) { x.VMware = vmwareFindings(ctx, h, b, md) },
		AfterNetwork: func(ctx context.Context, net *sourceduty.Net, x *sourceduty.Extra) {
			vmwareStep(ctx, h, b, x.VMware, md, net)
		},
		End: func(ctx context.Context, outcome string, x *sourceduty.Extra) {
			vmwareIMCEnd(ctx, h, b, outcome, x.VMware, md)
		},
		Redacted: h.Redact,
	}
}

// vmwareBoot is what the duties of one boot share: the one budget of
// its tool calls, and the customization marker kept before it, read
// once when the boot begins applying a spec.
type vmwareBoot struct {
	tools  *toolBudget
	marker string
}

// vmwareStep runs after the network step of a boot that read VMware
// guestinfo, filling vs (begun by vmwareFindings): res is that step's
// result (nil when the network was not handled); nothing is written to
// the VMX of a boot that does not change this machine (h.Live). It never
// fails the boot: what went wrong is in the status.
func vmwareStep(ctx context.Context, h *sourceduty.Host, b *vmwareBoot, vs *sourceduty.VMwareStatus, md *Metadata, res *sourceduty.Net) {
	live := h.Live
	want := md.WaitOnNetwork
	applied := live && res != nil && res.Action == "applied"
	if !applied {
		why := "the network was not applied on this machine"
		if res != nil && res.Reason != "" {
			why += " (" + res.Reason + ")"
		}
		if want.Any() {
			vs.Wait = fmt.Sprintf("wait-on-network asks for %s: not waited for: %s", want, why)
		}
		vs.Notes = append(vs.Notes, "guestinfo.local-ipv4 and guestinfo.local-ipv6 not published: "+why)
	} else if want.Any() {
		vs.Wait = waitOnNetwork(ctx, h, want, md.Network, res)
	}
	if live {
		w := newGuestinfoWriter(ctx, h, b.tools, guestinfoToolOf(md), vs)
		if applied {
			publishLocalIPs(h, w, md, res.Links, vs)
		}
		advertiseUpdates(h, w, md)
	}
	vmwareLog(h, vs)
}

// vmwareFindings starts the VMware status of a boot with what is found of
// VMware Tools' guest customization, logged, and begins applying the
// customization spec md was read from, if it was.
func vmwareFindings(ctx context.Context, h *sourceduty.Host, b *vmwareBoot, md *Metadata) *sourceduty.VMwareStatus {
	vs := &sourceduty.VMwareStatus{}
	if md.VMwareIMC == nil {
		for _, f := range vmwareCustomization(ctx, h) {
			vs.Customization = append(vs.Customization, f.text)
			if f.warn {
				h.Log.Warn("vmware: " + f.text)
			} else {
				h.Log.Info("vmware: " + f.text)
			}
		}
	}
	if md.VMwareIMC != nil {
		vmwareIMCBegin(ctx, h, b, vs, md)
	}
	vmwareFallback(ctx, h, vs, md)
	return vs
}

// sourceduty.ToolBudget bounds every tool call of one boot's duties
// together, the info-set calls and the customization reports alike (a
// tool run is bounded by vmtools.DefaultTimeout, the same): the five or so
// calls of a boot that applies a spec, each waiting out the bound on a
// tool that hangs, would hold back cloud-init by five times as long.
func init() { sourceduty.ToolBudget.Store(int64(vmtools.DefaultTimeout)) }

// toolBudget is the tool time of one boot's duties (sourceduty.ToolBudget
// when the boot begins): each call is bounded by what is left, and what
// it took is taken off. Once it is spent, or a tool cannot be started
// (it is gone), the calls left (of that tool) are not made: each would
// end the same way. The duties of a boot run one after the other, so it
// needs no lock.
type toolBudget struct {
	total, left time.Duration
	gone        map[string]bool
}

func newToolBudget() *toolBudget {
	d := time.Duration(sourceduty.ToolBudget.Load())
	return &toolBudget{total: d, left: d, gone: map[string]bool{}}
}

// skip says why a call through tool is not made; "" when it is.
func (b *toolBudget) skip(tool string) string {
	switch {
	case b.left <= 0:
		return fmt.Sprintf("the tool calls of this boot (info-set and reports to vCenter) ran out of their %s", b.total)
	case b.gone[tool]:
		return "since " + tool + " could not be run"
	}
	return ""
}

// run makes one call through tool within what is left of the budget
// and takes its time off; the caller asks skip first.
func (b *toolBudget) run(ctx context.Context, tool string, call func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, b.left)
	defer cancel()
	start := time.Now()
	err := call(cctx)
	b.left -= time.Since(start)
	var te *vmtools.ToolError
	switch {
	case err == nil:
	case cctx.Err() != nil && ctx.Err() == nil:
		b.left = 0 // the call waited out what was left
	case errors.As(err, &te) && te.Err != nil:
		b.gone[tool] = true
	}
	return err
}

// guestinfoWriter makes info-set calls through the tool that read the
// guestinfo, within the boot's toolBudget.
type guestinfoWriter struct {
	h     *sourceduty.Host
	tools *toolBudget
	tool  string
	vs    *sourceduty.VMwareStatus
	ctx   context.Context
}

func newGuestinfoWriter(ctx context.Context, h *sourceduty.Host, tools *toolBudget, tool string, vs *sourceduty.VMwareStatus) *guestinfoWriter {
	return &guestinfoWriter{h: h, tools: tools, tool: tool, vs: vs, ctx: ctx}
}

// set writes guestinfo.key and records it in the status: published, or
// a note saying why not.
func (w *guestinfoWriter) set(key, value string) bool {
	if why := w.tools.skip(w.tool); why != "" {
		w.vs.Notes = append(w.vs.Notes, fmt.Sprintf("guestinfo.%s not published: not tried, %s", key, why))
		return false
	}
	err := w.tools.run(w.ctx, w.tool, func(ctx context.Context) error { return vmtools.Set(ctx, nil, w.tool, key, value) })
	if err != nil {
		w.vs.Notes = append(w.vs.Notes, fmt.Sprintf("publishing guestinfo.%s failed: %v", key, err))
		w.h.Log.Warn("vmware: publishing guestinfo."+key+" failed", "err", err)
		return false
	}
	w.vs.Published = append(w.vs.Published, "guestinfo."+key+" "+value)
	return true
}

func vmwareLog(h *sourceduty.Host, vs *sourceduty.VMwareStatus) {
	if vs.Wait != "" {
		h.Log.Info("vmware: " + vs.Wait)
	}
	for _, p := range vs.Published {
		h.Log.Info("vmware: published " + p)
	}
	for _, n := range vs.Notes {
		h.Log.Info("vmware: " + n)
	}
}

// waitOnNetwork waits, at most vmware.network_wait, until every family
// in want has a usable address on an owned link, as cloud-init's VMware
// datasource does before it goes on (it looks for any address that is
// not loopback, link-local or unspecified; it does not look at routes).
// A family the owned links get only from DHCP or router advertisements
// is not waited for: the stack that runs those clients starts after
// seedkeeper-boot, so boot would only wait out the bound. It returns the
// status line.
func waitOnNetwork(ctx context.Context, h *sourceduty.Host, want WaitOnNetwork, cfg *netcfg.Config, res *sourceduty.Net) string {
	limit := h.NetworkWait
	head := "wait-on-network asks for " + want.String()
	var waitFor WaitOnNetwork
	var later []string
	for _, f := range []struct {
		name string
		on   bool
		v4   bool
		dst  *bool
	}{{"ipv4", want.IPv4, true, &waitFor.IPv4}, {"ipv6", want.IPv6, false, &waitFor.IPv6}} {
		if !f.on {
			continue
		}
		if staticFamily(cfg, res.Owned, f.v4) {
			*f.dst = true
		} else {
			later = append(later, f.name)
		}
	}
	var parts []string
	if len(later) > 0 {
		parts = append(parts, fmt.Sprintf("%s not waited for in boot: the owned links have no static address of that family, and their DHCP or router advertisements are handled by the network stack, which starts after seedkeeper-boot", strings.Join(later, " and ")))
	}
	if !waitFor.Any() {
		return head + ": " + strings.Join(parts, "; ")
	}
	if limit <= 0 {
		parts = append([]string{waitFor.String() + " not waited for: vmware.network_wait is 0"}, parts...)
		return head + ": " + strings.Join(parts, "; ")
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// The first miss says so at once: boot may reach the wait with little
	// of systemd's start timeout left, and only this line extends it.
	lastProgress := start.Add(-waitProgress)
	for {
		st, err := h.Links.Addrs(res.Links)
		missing := missingFamilies(st, waitFor)
		if err == nil && len(missing) == 0 {
			took := time.Since(start).Round(time.Millisecond)
			parts = append([]string{fmt.Sprintf("%s ready on the owned links after %s", waitFor, took)}, parts...)
			return head + ": " + strings.Join(parts, "; ")
		}
		if now := time.Now(); now.Sub(lastProgress) >= waitProgress {
			lastProgress = now
			msg := fmt.Sprintf("waiting for %s on the owned links (%s of at most %s)", strings.Join(missing, " and "), now.Sub(start).Round(time.Second), limit)
			h.Log.Info("vmware: " + msg)
			h.Waiting(msg)
		}
		select {
		case <-ctx.Done():
			took := time.Since(start).Round(time.Millisecond)
			why := fmt.Sprintf("no usable %s address on the owned links", strings.Join(missing, " or "))
			if err != nil {
				why = "the owned links could not be read: " + err.Error()
			}
			parts = append([]string{fmt.Sprintf("%s NOT ready after %s (the limit, vmware.network_wait, is %s): %s; going on", waitFor, took, limit, why)}, parts...)
			return head + ": " + strings.Join(parts, "; ")
		case <-time.After(waitPoll):
		}
	}
}

// staticFamily reports whether one of the owned interfaces (by ID) has a
// static address of the family in cfg.
func staticFamily(cfg *netcfg.Config, owned []string, v4 bool) bool {
	if cfg == nil {
		return false
	}
	for _, ifc := range cfg.Interfaces {
		if !slices.Contains(owned, ifc.ID) {
			continue
		}
		for _, a := range ifc.Addresses {
			if a.Addr().Is4() == v4 {
				return true
			}
		}
	}
	return false
}

func linkNamed(st sourceduty.Addrs, name string) *sourceduty.Link {
	for i := range st.Links {
		if st.Links[i].Name == name {
			return &st.Links[i]
		}
	}
	return nil
}

// missingFamilies names the families of w that no owned link has a usable
// address of.
func missingFamilies(st sourceduty.Addrs, w WaitOnNetwork) []string {
	var has4, has6 bool
	for _, l := range st.Links {
		has4 = has4 || len(l.V4) > 0
		has6 = has6 || len(l.V6) > 0
	}
	var m []string
	if w.IPv4 && !has4 {
		m = append(m, "ipv4")
	}
	if w.IPv6 && !has6 {
		m = append(m, "ipv6")
	}
	return m
}

// localIPs picks the addresses to publish the way cloud-init's VMware
// datasource does (get_default_ip_addrs): per family, the one address of
// the link holding the default route, none when that link has several;
// then, for a family still without one, the one address of that family
// on the link holding the other family's pick. Unlike cloud-init it
// counts only usable addresses (cloud-init counts the link-local IPv6
// address every link has, so it publishes no IPv6 address on a link that
// has a global one, and a link-local one with its prefix length on an
// IPv4-only link) and publishes the bare address. Only owned links count.
// The notes say why a family has none.
func localIPs(st sourceduty.Addrs) (v4, v6 netip.Addr, notes []string) {
	one := func(fam, def string, addrs func(*sourceduty.Link) []netip.Addr) netip.Addr {
		if def == "" {
			notes = append(notes, fmt.Sprintf("no owned link holds the %s default route", fam))
			return netip.Addr{}
		}
		l := linkNamed(st, def)
		if l == nil {
			return netip.Addr{}
		}
		switch a := addrs(l); len(a) {
		case 1:
			return a[0]
		case 0:
			notes = append(notes, fmt.Sprintf("%s, which holds the %s default route, has no usable %s address", def, fam, fam))
		default:
			notes = append(notes, fmt.Sprintf("%s, which holds the %s default route, has %d %s addresses (cloud-init publishes only a single one)", def, fam, len(a), fam))
		}
		return netip.Addr{}
	}
	v4s := func(l *sourceduty.Link) []netip.Addr { return l.V4 }
	v6s := func(l *sourceduty.Link) []netip.Addr { return l.V6 }
	v4 = one("IPv4", st.Def4, v4s)
	v6 = one("IPv6", st.Def6, v6s)
	holding := func(a netip.Addr, of func(*sourceduty.Link) []netip.Addr) *sourceduty.Link {
		for i := range st.Links {
			if slices.Contains(of(&st.Links[i]), a) {
				return &st.Links[i]
			}
		}
		return nil
	}
	if v4.IsValid() && !v6.IsValid() {
		if l := holding(v4, v4s); l != nil && len(l.V6) == 1 {
			v6 = l.V6[0]
			notes = nil
		}
	}
	if v6.IsValid() && !v4.IsValid() {
		if l := holding(v6, v6s); l != nil && len(l.V4) == 1 {
			v4 = l.V4[0]
			notes = nil
		}
	}
	return v4, v6, notes
}

// publishLocalIPs sets guestinfo.local-ipv4 and guestinfo.local-ipv6
// through the tool that read the guestinfo, as cloud-init does after its
// wait; a family without an address is left as it is (cloud-init sets
// only what it found).
func publishLocalIPs(h *sourceduty.Host, w *guestinfoWriter, md *Metadata, names []string, vs *sourceduty.VMwareStatus) {
	tool := guestinfoToolOf(md)
	if tool != ToolRPCTool && tool != ToolVMToolsd {
		vs.Notes = append(vs.Notes, "guestinfo.local-ipv4 and guestinfo.local-ipv6 not published: the metadata came from the environment (VMX_GUESTINFO), not through a guestinfo tool, as cloud-init does not either")
		return
	}
	if len(names) == 0 {
		vs.Notes = append(vs.Notes, "guestinfo.local-ipv4 and guestinfo.local-ipv6 not published: no link is owned")
		return
	}
	st, err := h.Links.Addrs(names)
	if err != nil {
		vs.Notes = append(vs.Notes, "guestinfo.local-ipv4 and guestinfo.local-ipv6 not published: reading the owned links: "+err.Error())
		return
	}
	v4, v6, notes := localIPs(st)
	vs.Notes = append(vs.Notes, notes...)
	for _, p := range []struct {
		key  string
		addr netip.Addr
	}{{sourceduty.GuestinfoLocalIPv4, v4}, {sourceduty.GuestinfoLocalIPv6, v6}} {
		if p.addr.IsValid() {
			w.set(p.key, p.addr.String())
		}
	}
}

// Where VMware Tools' guest customization leaves its traces: the spec it
// hands to the guest's agent, and its own log of the last package it
// deployed, rewritten for each (open-vm-tools
// services/plugins/deployPkg/deployPkgLog.c opens it with "w").
const (
	vmwareIMCDir = "/run/vmware-imc"
	vmwareIMCLog = "/var/log/vmware-imc/toolsDeployPkg.log"
)

// maxToolsDeployLog bounds the read of Tools' log (a deployment writes a
// few KiB).
const maxToolsDeployLog = 1 << 20

// A customization finding: its status line, and whether it is logged
// as a warning (something to act on) or only said.
type customizationFinding struct {
	text string
	warn bool
}

// vmwareCustomization says what is found of VMware Tools' guest
// customization under the root (docs/cloud-init.md, "VMware guest
// customization", says what each means): a spec in vmwareIMCDir or one
// directory down (cloud-init searches the whole tree; Tools extracts a
// package into a hidden directory there), and what Tools' log says of
// the last package it deployed, read within ctx (a boot that ends reads
// no more of it). Everything is looked at inside the root, no link
// followed out of it.
func vmwareCustomization(ctx context.Context, h *sourceduty.Host) []customizationFinding {
	root := string(h.Root)
	regular := func(p string) (fs.FileInfo, bool) {
		fi, err := fsutil.StatIn(root, p, false)
		return fi, err == nil && fi.Mode().IsRegular()
	}
	var out []customizationFinding
	ents, err := fsutil.ReadDirIn(root, vmwareIMCDir)
	switch {
	case err == nil:
		spec := false
		for _, d := range ents[:min(len(ents), 64)] {
			p := path.Join(vmwareIMCDir, d.Name())
			if d.Name() != "cust.cfg" {
				if !d.IsDir() {
					continue
				}
				p = path.Join(p, "cust.cfg")
			}
			if _, spec = regular(p); spec {
				break
			}
		}
		if spec {
			out = append(out, customizationFinding{"a VMware customization spec (cust.cfg) is waiting under " + vmwareIMCDir + " and is not applied: seedkeeper reads a spec only as " + iMCDir + "/" + iMCSpecFile + ", and only when guestinfo holds no metadata, user-data or vendor-data; vCenter will report the customization as not done", true})
		}
	case !errors.Is(err, fs.ErrNotExist):
		out = append(out, customizationFinding{"cannot look for a VMware customization spec: " + err.Error(), true})
	}
	if fi, ok := regular(vmwareIMCLog); ok {
		out = append(out, toolsDeployFinding(ctx, h, fi.ModTime()))
	}
	return out
}

// What Tools' log says of who applied its last package.
const (
	deployUnknown    = iota
	deployHandedOver // to the guest's agent (seedkeeper, or cloud-init)
	deployHandFailed // the hand-over, or the check before it, failed
	deployByTools    // Tools' own ("traditional") customization
)

// readToolsDeployLog reads what Tools' log says of its last package, from
// the lines libDeployPkg (linuxDeployment.c, Deploy and CloudInitSetup)
// writes, each after the "[time] [level] " prefix of deployPkgLog.c:
// "Executing cloud-init workflow" when it hands the spec over (since
// 10.2, with a trailing "." since 10.3), "Deployment for cloud-init
// failed" when that copy failed, "Deployment failed. use cloud-init work
// flow return" when it refused the cloud-init kind (the agent too old),
// "Executing traditional GOSC workflow" when it runs its own. Only those
// fixed words are looked for; nothing of the log is quoted.
func readToolsDeployLog(b []byte) int {
	got := deployUnknown
	for _, line := range strings.Split(string(b), "\n") {
		_, msg, ok := strings.Cut(line, "] ")
		if !ok {
			continue
		}
		_, msg, _ = strings.Cut(msg, "] ") // after the level
		switch {
		case strings.HasPrefix(msg, "Executing cloud-init workflow"):
			got = deployHandedOver
		case strings.HasPrefix(msg, "Deployment for cloud-init failed"),
			strings.HasPrefix(msg, "Deployment failed. use cloud-init work flow return"):
			return deployHandFailed
		case strings.HasPrefix(msg, "Executing traditional GOSC workflow"):
			return deployByTools
		}
	}
	return got
}

// toolsDeployFinding says what Tools' log, last written at mod, says:
// Tools' own customization (beside seedkeeper's network files: a
// warning), a spec handed over that seedkeeper applied since (its marker
// or kept spec written after the log: said, not warned), one handed
// over and not applied since, a hand-over that failed, or a log that
// says neither.
func toolsDeployFinding(ctx context.Context, h *sourceduty.Host, mod time.Time) customizationFinding {
	head := fmt.Sprintf("%s, last written %s", vmwareIMCLog, mod.UTC().Format(time.RFC3339))
	b, err := fsutil.ReadFileInNoFollow(ctx, string(h.Root), vmwareIMCLog, maxToolsDeployLog)
	if err != nil {
		return customizationFinding{"VMware Tools deployed a customization package here (" + head + "), and its log cannot be read to say who applied it: " + err.Error(), true}
	}
	switch readToolsDeployLog(b) {
	case deployByTools:
		return customizationFinding{"VMware Tools ran a guest customization itself here (" + head + ", its traditional workflow): it writes the distribution's own network files for the spec's NICs, beside seedkeeper's for the NICs it owns, and reboots the VM; with open-vm-tools before 12.4 set disable_vmware_customization: false in /etc/cloud/cloud.cfg itself so that it hands specs to seedkeeper, or set [deployPkg] enable-customization = false in /etc/vmware-tools/tools.conf to refuse them", true}
	case deployHandFailed:
		return customizationFinding{"VMware Tools failed to hand a customization spec over to the guest's agent (" + head + ") and reported the customization to vCenter as failed; its log says why", true}
	case deployHandedOver:
		for _, p := range []string{paths.VMwareIMCMarker, paths.VMwareIMCSpec} {
			if fi, err := fsutil.StatIn(string(h.Root), p, false); err == nil && fi.Mode().IsRegular() && !fi.ModTime().Before(mod) {
				return customizationFinding{"VMware Tools handed a customization spec over (" + head + "), and seedkeeper applied it since (" + p + ")", false}
			}
		}
		return customizationFinding{"VMware Tools handed a customization spec over (" + head + "), and seedkeeper has not applied it since (no marker or kept spec written after): this boot read the metadata from guestinfo or the environment, which come first; vCenter shows that customization as running until it times out, unless a boot reported it failed", true}
	}
	return customizationFinding{"VMware Tools deployed a customization package here (" + head + "); its log says neither that Tools handed the spec over nor that it ran its own customization", false}
}

// advertiseUpdates sets sourceduty.GuestinfoUpdatesSupported and
// sourceduty.GuestinfoUpdatesEnabled as cloud-init's activate() does, in
// its format (SCOPE=TYPE;TYPE, types sorted), for the events seedkeeper
// handles: supported are the events it can apply, enabled those
// events.network turns on (boot-new-instance always). With network.owner
// cloud-init, seedkeeper applies no event, and cloud-init (NoCloud)
// advertises nothing: neither does seedkeeper.
func advertiseUpdates(h *sourceduty.Host, w *guestinfoWriter, md *Metadata) {
	tool := guestinfoToolOf(md)
	if (tool != ToolRPCTool && tool != ToolVMToolsd) || h.NetworkByCloudInit {
		return
	}
	enabled := []string{"boot-new-instance"}
	for _, ev := range h.NetworkEvents {
		if !slices.Contains(enabled, ev) {
			enabled = append(enabled, ev)
		}
	}
	slices.Sort(enabled)
	for _, p := range []struct{ key, value string }{
		{sourceduty.GuestinfoUpdatesSupported, "network=boot;boot-new-instance;hotplug"},
		{sourceduty.GuestinfoUpdatesEnabled, "network=" + strings.Join(enabled, ";")},
	} {
		w.set(p.key, p.value)
	}
}
