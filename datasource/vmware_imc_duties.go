package datasource

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// What boot does for a VMware customization spec (transportIMC)
// beyond the seed and the network, as cloud-init's VMware datasource did:
// apply it once per MARKER-ID (the marker kept in paths.VMwareIMCMarker)
// and report to vCenter through vmware-rpctool, so that vCenter shows the
// customization as done or failed, never as timed out
// (docs/cloud-init.md, "VMware guest customization").

// imcReportMessage is the message of every report of h's flow: where to
// look. The reason of a failure is appended after an "@", as cloud-init
// does.
func imcReportMessage(h *sourceduty.Host) string {
	return "journalctl -u " + cmp.Or(h.Unit, "seedkeeper-boot")
}

// vmwareIMCBegin starts the customization of a boot that read a spec:
// it reads the marker kept before (once: vmwareIMCEnd takes it from b),
// a marker seen before drops the password (it was set once already), and
// a live boot reports "running" (and guestinfo.gc.status Started when
// the spec asks for it).
func vmwareIMCBegin(ctx context.Context, h *sourceduty.Host, b *vmwareBoot, vs *sourceduty.VMwareStatus, md *Metadata) {
	spec := md.VMwareIMC
	head := fmt.Sprintf("VMware customization spec (%s kind", spec.Kind)
	if spec.MarkerID != "" {
		head += ", marker " + spec.MarkerID
	}
	if spec.Kept {
		// The spec an earlier boot applied: the customization holds,
		// and vCenter was told once already.
		marker := spec.MarkerID
		if marker == "" {
			marker = "none"
		}
		head = fmt.Sprintf("no VMware customization spec in %s and guestinfo is empty: the spec applied at %s (%s kind, marker %s) is read again from %s, and nothing is reported to vCenter",
			iMCDir, cmp.Or(spec.AppliedAt, "an unknown time"), spec.Kind, marker, paths.VMwareIMCSpec)
		if spec.Live {
			head += "; it was applied while the VM ran, and its instance ID is the one the VM had then (" + md.InstanceID + "), not the spec's own"
		}
	} else {
		head += ") read from " + iMCDir
		vs.Spec = spec.digest()
		if spec.Live {
			head += ", applied while the VM ran; its instance ID is the one the VM had then (" + md.InstanceID + "), not the spec's own"
		}
	}
	if spec.Waited != "" {
		head += ", after waiting " + spec.Waited + " for VMware Tools to write it"
	}
	vs.Customization = append(vs.Customization, head)
	if !spec.Kept {
		b.marker = imcMarker(h)
	}
	if spec.MarkerID != "" && b.marker == spec.MarkerID && !spec.Kept {
		msg := "customization " + spec.MarkerID + " was applied on an earlier boot"
		if dropIMCPassword(md) {
			msg += ": the root password is not set again"
		}
		vs.Customization = append(vs.Customization, msg)
	}
	if spec.CustomScript && !spec.Kept {
		vs.Customization = append(vs.Customization, "the spec names a customization script: seedkeeper runs no customization script; reported to vCenter as script disabled")
	}
	if !h.Live || spec.Kept {
		return
	}
	imcReport(ctx, h, b, vs, iMCStateRunning, iMCSuccess, "")
	imcGCStatus(ctx, h, b, vs, spec, "Started")
}

// vmwareIMCEnd finishes it once boot is over, with its outcome: the
// marker is kept and "done" reported when the boot went through, a
// failure with its reason otherwise.
func vmwareIMCEnd(ctx context.Context, h *sourceduty.Host, b *vmwareBoot, outcome string, vs *sourceduty.VMwareStatus, md *Metadata) {
	spec := md.VMwareIMC
	if !h.Live || spec == nil || vs == nil {
		return
	}
	if spec.Kept {
		for _, c := range vs.Customization {
			h.Log.Info("vmware: " + c)
		}
		return
	}
	imcFinish(ctx, h, b, vs, spec, outcome)
	if outcome == "ok" || outcome == "partial" {
		keepIMCMarker(h, b, vs, spec)
		keepIMC(h, vs, spec)
	}
	for _, c := range vs.Customization {
		h.Log.Info("vmware: " + c)
	}
}

// imcFinish reports the end of a customization to vCenter by its
// outcome: "ok" (done, or "script disabled" for a spec naming a script),
// "partial" (the network applied in part), "password" (all but the root
// password of a spec applied while the VM runs) or anything else
// (failed).
func imcFinish(ctx context.Context, h *sourceduty.Host, b *vmwareBoot, vs *sourceduty.VMwareStatus, spec *IMCSpec, outcome string) {
	switch {
	case outcome == "ok" && spec.CustomScript:
		imcReport(ctx, h, b, vs, iMCStateRunning, iMCErrScriptDisabled, "script disabled")
		imcGCStatus(ctx, h, b, vs, spec, "Custom script is disabled")
	case outcome == "ok":
		imcReport(ctx, h, b, vs, iMCStateDone, iMCSuccess, "")
		imcGCStatus(ctx, h, b, vs, spec, "Successful")
	case outcome == "partial":
		imcReport(ctx, h, b, vs, iMCStateRunning, iMCEventNetworkFail, "network setup failed")
		imcGCStatus(ctx, h, b, vs, spec, "Network setup failed")
	case outcome == "password":
		imcReport(ctx, h, b, vs, iMCStateRunning, iMCEventCustomizeFail, "root password not set while the VM runs")
		imcGCStatus(ctx, h, b, vs, spec, "Customization failed")
	default:
		imcReport(ctx, h, b, vs, iMCStateRunning, iMCEventCustomizeFail, "customization failed")
		imcGCStatus(ctx, h, b, vs, spec, "Customization failed")
	}
}

// keepIMCMarker keeps the spec's marker in paths.VMwareIMCMarker (0600),
// when it has one not kept already (b.marker, read when the
// customization began).
func keepIMCMarker(h *sourceduty.Host, b *vmwareBoot, vs *sourceduty.VMwareStatus, spec *IMCSpec) {
	if spec.MarkerID == "" || b.marker == spec.MarkerID {
		return
	}
	if err := fsutil.WriteFileIn(string(h.Root), paths.VMwareIMCMarker, []byte(spec.MarkerID+"\n"), 0o600); err != nil {
		vs.Notes = append(vs.Notes, "keeping the customization marker failed: "+err.Error())
		h.Log.Error("vmware: keeping the customization marker", "err", err)
		return
	}
	vs.Customization = append(vs.Customization, "customization "+spec.MarkerID+" marked as applied in "+paths.VMwareIMCMarker)
}

// keepIMC keeps the spec a boot applied in paths.VMwareIMCSpec (0600,
// written atomically, without the password), replacing the one kept
// before; the same spec kept already is left as it is, with the time it
// was first applied.
func keepIMC(h *sourceduty.Host, vs *sourceduty.VMwareStatus, spec *IMCSpec) {
	if spec.keep == nil {
		return
	}
	// The kept file is compared as it is on disk with the one this spec
	// makes, a piece at a time, and made only when they differ: at the
	// bounds each is 24 MiB, and only one of them is held at a time.
	env, err := newKeptEnvelope(spec.keep, time.Now().UTC().Format(time.RFC3339))
	if err == nil {
		if keptFileIs(context.Background(), h.Root, env) {
			return
		}
	}
	var b []byte
	if err == nil {
		b, err = env.bytes()
	}
	if err == nil {
		err = fsutil.WriteFileIn(string(h.Root), paths.VMwareIMCSpec, b, 0o600)
	}
	if err != nil {
		vs.Notes = append(vs.Notes, "keeping the customization spec failed, a later boot without it will not apply it again: "+err.Error())
		h.Log.Error("vmware: keeping the customization spec", "err", err)
		return
	}
	vs.Customization = append(vs.Customization, "the customization spec, without its password, kept in "+paths.VMwareIMCSpec+" for later boots")
}

// imcMarker is the marker of the last spec applied; "" when none.
func imcMarker(h *sourceduty.Host) string {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(h.Root), paths.VMwareIMCMarker, 256)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.Log.Warn("vmware: reading the customization marker", "err", err)
		}
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// imcReport sends one deployPkg.update.state within the tool budget of
// b, shared with the info-set calls of its boot; what was sent, or why
// not, is in the status.
func imcReport(ctx context.Context, h *sourceduty.Host, b *vmwareBoot, vs *sourceduty.VMwareStatus, state, code int, reason string) {
	msg := imcReportMessage(h)
	if reason != "" {
		msg += "@" + reason
	}
	line := fmt.Sprintf("deployPkg.update.state %d %d %s", state, code, msg)
	if why := b.tools.skip(ToolRPCTool); why != "" {
		vs.Notes = append(vs.Notes, fmt.Sprintf("not reported to vCenter (deployPkg.update.state %d %d): not tried, %s", state, code, why))
		h.Log.Warn("vmware: not reporting to vCenter", "state", state, "code", code, "why", why)
		return
	}
	if err := b.tools.run(ctx, ToolRPCTool, func(ctx context.Context) error { return reportIMC(ctx, nil, state, code, msg) }); err != nil {
		vs.Notes = append(vs.Notes, "reporting to vCenter failed: "+err.Error())
		h.Log.Warn("vmware: reporting to vCenter failed", "err", err)
		return
	}
	vs.Customization = append(vs.Customization, "reported to vCenter: "+line)
}

// imcGCStatus sets guestinfo.gc.status when the spec asks for it
// (MISC POST-GC-STATUS = yes).
func imcGCStatus(ctx context.Context, h *sourceduty.Host, b *vmwareBoot, vs *sourceduty.VMwareStatus, spec *IMCSpec, value string) {
	if !spec.PostGCStatus {
		return
	}
	newGuestinfoWriter(ctx, h, b.tools, ToolRPCTool, vs).set("gc.status", value)
}

// guestinfoToolOf is the tool the guestinfo of md's VMX is written
// through: the one that read it, and vmware-rpctool for a spec (cloud-init
// found the tool while it looked at guestinfo first); "envvar" for the
// environment, which is not written.
func guestinfoToolOf(md *Metadata) string {
	if md.Origin.Transport == transportIMC {
		return ToolRPCTool
	}
	return md.Origin.Transport
}

// vmwareFallback does what cloud-init's fallback does for a VMware guest
// whose metadata has no network configuration (neither guestinfo's
// network key nor a spec's NIC-CONFIG): DHCP (IPv4 and IPv6) on one NIC,
// the first seedkeeper may own (driver on the allowlist), those with a
// carrier first, in name order. It sets md.Network (not the raw document:
// the source gave none) and says so in vs.Fallback. With network.owner
// cloud-init, cloud-init's own fallback applies. A boot under an image
// root looks at no NIC (they are not the image's) unless it was given a
// network namespace.
func vmwareFallback(ctx context.Context, h *sourceduty.Host, vs *sourceduty.VMwareStatus, md *Metadata) {
	if md.Network != nil || md.NetworkConfigRaw != nil || h.NetworkByCloudInit {
		return
	}
	if s := md.VMwareIMC; s != nil && s.NICs+s.NICsDropped > 0 {
		return // the spec had NICs, all unusable: not "no network config"
	}
	head := "no network configuration in the metadata: "
	if !h.Root.IsReal() && h.Netns <= 0 {
		vs.Fallback = head + "no DHCP fallback under an image root (its NICs are not this machine's)"
		return
	}
	allows, desc := h.Allowlist()
	name, mac, err := h.Links.FallbackNIC(ctx, allows)
	switch {
	case err != nil:
		vs.Fallback = head + "no DHCP fallback: reading the links: " + err.Error()
	case name == "":
		vs.Fallback = head + "no DHCP fallback: no NIC with a driver on the allowlist (" + desc + ")"
	default:
		doc := fmt.Sprintf(`{"version": 2, "ethernets": {%q: {"match": {"macaddress": %q}, "dhcp4": true, "dhcp6": true}}}`, name, mac)
		cfg, perr := netcfg.Parse([]byte(doc))
		if perr != nil {
			vs.Fallback = head + "no DHCP fallback: " + perr.Error()
			break
		}
		md.Network = cfg
		vs.Fallback = fmt.Sprintf("%sDHCP on %s (%s), the first NIC seedkeeper may own, as cloud-init's fallback", head, name, mac)
	}
	h.Log.Info("vmware: " + vs.Fallback)
}
