package datasource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// A customization spec that arrives while the VM runs: VMware Tools
// takes a package whenever vCenter sends one (CustomizeGuest_Task, an
// instant clone), with no check of the boot, and leaves it in iMCDir as
// it does at boot. seedkeeper watch applies it (docs/cloud-init.md,
// "A spec that arrives while the VM runs"): once per MARKER-ID, its
// network live through the watch's own apply, the hostname at the next
// boot from the kept spec, which holds the instance ID the VM has now so
// that no later boot is a new instance by it; its root password not at
// all (a failure reported to vCenter).
//
// It looks for the spec with a cheap bounded poll, one stat of cust.cfg
// every sourceduty.SpecPoll, and reads it (bounded, with the same parser
// as boot) only when that file is a new one. Not inotify: the directory
// may not exist yet (Tools makes it), may be replaced as a whole, and is
// reached through /var/run, a link to /run on most systems; following it
// with inotify watches on its parent, a re-arm on every replacement and a
// rescan on a queue overflow is more code and more ways to miss a spec
// than one stat every two seconds, which vCenter, waiting minutes for a
// report, cannot tell from an event.

// imcWatchPoll is the default of sourceduty.SpecPoll.
const imcWatchPoll = 2 * time.Second

func init() { sourceduty.SpecPoll.Store(int64(imcWatchPoll)) }

// imcWatch applies the specs that arrive while seedkeeper watch runs.
type imcWatch struct {
	h   *sourceduty.Host
	rec sourceduty.Recorder
	// guestinfo is why a spec is not read (the boot read guestinfo,
	// which comes before a spec); "" when specs are read.
	guestinfo string
	// id is the instance ID the boot reported: a live spec keeps it.
	id string
	// bootSpec is the digest of the spec the boot read from iMCDir
	// (sourceduty.VMwareStatus.Spec): applied, or failed and reported so
	// by the boot, it is not applied again; "" when the boot read none.
	bootSpec string

	// Touched only by Run's goroutine: the cust.cfg last looked at, and
	// whether the last look failed (logged once).
	seen    fs.FileInfo
	failing bool
}

// newIMCWatch returns the watch of the specs that arrive after the boot
// b, nil when the flow cannot apply one (it only plans, or has no apply).
func newIMCWatch(h *sourceduty.Host, b sourceduty.Boot, rec sourceduty.Recorder) *imcWatch {
	if !h.Live || h.ApplyNetwork == nil || b.ReportedID == "" {
		return nil
	}
	w := &imcWatch{h: h, rec: rec, id: b.ReportedID}
	if vs := b.Extra.VMware; vs != nil {
		w.bootSpec = vs.Spec
	}
	if b.Transport != transportIMC {
		// cloud-init's order, as at boot: a spec is read only when
		// guestinfo holds nothing.
		w.guestinfo = "the boot read the metadata from guestinfo (" + b.Transport + "), which comes before a spec: seedkeeper reads a spec only when guestinfo holds no metadata, user-data or vendor-data"
	}
	return w
}

// SetLinks takes the owned links of a new plan: a spec's apply gets its
// own from Host.ApplyNetwork.
func (w *imcWatch) SetLinks([]string) {}

// Run looks for a new spec at once, then every sourceduty.SpecPoll,
// until ctx ends.
func (w *imcWatch) Run(ctx context.Context) {
	for {
		w.look(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(sourceduty.SpecPoll.Load())):
		}
	}
}

// look handles cust.cfg when it is not the file looked at last (another
// file, or the same one written again).
func (w *imcWatch) look(ctx context.Context) {
	fi, err := fsutil.StatIn(string(w.h.Root), imcSpecPath, false)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !w.failing {
			w.h.Log.Warn("vmware: looking for a customization spec", "err", err)
		}
		w.seen, w.failing = nil, !errors.Is(err, fs.ErrNotExist)
		return
	}
	w.failing = false
	if p := w.seen; p != nil && os.SameFile(p, fi) && p.Size() == fi.Size() && p.ModTime().Equal(fi.ModTime()) {
		return
	}
	w.seen = fi
	w.handle(ctx) // a link or another kind of file: readIMC says so
}

// handle reads the spec in iMCDir and applies it when it was not yet.
func (w *imcWatch) handle(ctx context.Context) {
	h := w.h
	if w.guestinfo != "" {
		line := "a VMware customization spec arrived in " + iMCDir + " while the VM runs and is not applied: " + w.guestinfo
		w.done(nil, line, w.guestinfo)
		return
	}
	md, err := readIMC(ctx, h.Root, h.Log)
	switch {
	case errors.Is(err, ErrNoSource):
		return // gone again
	case ctx.Err() != nil:
		return
	case err != nil:
		// Nothing of it can be applied; vCenter hears of the failure
		// (it waits for a report, and would time out).
		vs := &sourceduty.VMwareStatus{}
		imcReport(ctx, h, &vmwareBoot{tools: newToolBudget()}, vs, iMCStateRunning, iMCEventCustomizeFail, "customization failed")
		h.Log.Error("vmware: a customization spec arrived while the VM runs and cannot be read; nothing of it is applied", "err", err)
		why := "cannot be read, nothing of it is applied: " + err.Error()
		w.done(vs, "a VMware customization spec arrived in "+iMCDir+" while the VM runs and "+why, why)
		return
	}
	spec := md.VMwareIMC
	if w.bootSpec != "" && spec.digest() == w.bootSpec {
		// The boot applied it, or failed on it and told vCenter so: a
		// second go, and a second report, would only contradict it.
		h.Log.Info("vmware: the customization spec in " + iMCDir + " is the one the boot read; nothing to do")
		return
	}
	if applied := w.applied(ctx, spec); applied != "" {
		h.Log.Info("vmware: the customization spec in " + iMCDir + " " + applied + "; nothing to do")
		return
	}
	w.apply(ctx, md)
}

// applied says how the spec was applied already ("" when it was not):
// its marker is the one kept, or, without a marker, it is the spec kept.
func (w *imcWatch) applied(ctx context.Context, spec *IMCSpec) string {
	if spec.MarkerID != "" {
		if imcMarker(w.h) == spec.MarkerID {
			return "is customization " + spec.MarkerID + ", applied already"
		}
		return ""
	}
	if _, same := keptSameSpec(ctx, w.h.Root, spec.keep); same {
		return "has no marker and is the spec kept in " + paths.VMwareIMCSpec + ", applied already"
	}
	return ""
}

// apply applies a spec that arrives while the VM runs, reporting to
// vCenter as boot does: "running", then done or the failure.
func (w *imcWatch) apply(ctx context.Context, md *Metadata) {
	h, spec := w.h, md.VMwareIMC
	vs := &sourceduty.VMwareStatus{}
	// The tool calls of one live customization share one budget, as a
	// boot's do.
	b := &vmwareBoot{tools: newToolBudget(), marker: imcMarker(h)}
	head := fmt.Sprintf("VMware customization spec (%s kind", spec.Kind)
	if spec.MarkerID != "" {
		head += ", marker " + spec.MarkerID
	}
	vs.Customization = append(vs.Customization, head+") arrived in "+iMCDir+" while the VM runs")
	imcReport(ctx, h, b, vs, iMCStateRunning, iMCSuccess, "")
	imcGCStatus(ctx, h, b, vs, spec, "Started")

	// outcome is what vCenter is told, why the first reason it is not
	// "ok", for the record.
	outcome, why := "ok", ""
	// The network: live, on the NICs of the spec seedkeeper owns.
	if md.Network == nil {
		vs.Customization = append(vs.Customization, "network: the spec configures no NIC; the network is left as it is")
	} else {
		owned, err := h.ApplyNetwork(ctx, md.Network)
		switch {
		case errors.Is(err, apply.ErrPartial):
			outcome, why = "partial", "network: applied in part: "+err.Error()
			vs.Notes = append(vs.Notes, why)
		case err != nil:
			outcome, why = "failed", "network: not applied: "+err.Error()
			vs.Notes = append(vs.Notes, why)
		default:
			vs.Customization = append(vs.Customization, "network: applied live to the spec's NICs seedkeeper owns (owned links now: "+orNone(owned)+")")
		}
	}
	// The root password: never. The kept spec never holds the
	// [PASSWORD] section, so there is no later time, and the watch's
	// service may not change /etc/shadow (it has no CAP_CHOWN, which
	// chpasswd needs).
	if spec.Password {
		pw := "root password: not set: seedkeeper watch sets no password (its service may not change /etc/shadow), and the password is kept nowhere for a later boot; reported to vCenter as customization failed. A customization of the powered-off VM sets it at boot"
		if outcome == "ok" {
			outcome, why = "password", pw // a network failure is said first
		}
		vs.Notes = append(vs.Notes, pw)
	}
	vs.Customization = append(vs.Customization, w.later(md)...)
	if spec.CustomScript {
		vs.Customization = append(vs.Customization, "the spec names a customization script: seedkeeper runs no customization script; reported to vCenter as script disabled")
	}
	imcFinish(ctx, h, b, vs, spec, outcome)
	if outcome == "ok" || outcome == "partial" || outcome == "password" {
		// Applied, but for what cannot be: kept, and not tried again.
		if spec.keep != nil {
			spec.keep.InstanceID = w.id
		}
		keepIMCMarker(h, b, vs, spec)
		keepIMC(h, vs, spec)
	} else {
		vs.Customization = append(vs.Customization, "not kept: a later boot does not read this spec, and the watch tries it again only when it is written again or the watch restarts")
	}
	w.done(vs, "", why)
}

// later says what of the spec waits for the next boot, and what becomes
// of the instance ID.
func (w *imcWatch) later(md *Metadata) []string {
	var out []string
	id := "instance ID: stays " + w.id + " (a spec applied while the VM runs never changes it, now or at a later boot: it is kept with the spec)"
	if md.InstanceID != w.id {
		id += "; the spec's own is not used"
	}
	out = append(out, id)
	if md.Hostname != "" {
		out = append(out, "hostname "+md.Hostname+": at the next boot (cloud-init sets it from the seed, which the watch never writes)")
	}
	if tz, ok := md.VMwareIMC.cloudConfig["timezone"].(string); ok {
		out = append(out, "time zone "+tz+": not set (cloud-init sets a time zone only for a new instance, and this one stays)")
	}
	if md.VMwareIMC.Kind == imcKindCloud && len(md.UserData) > 0 {
		out = append(out, "user-data: at the next boot, in the seed, as a change to the same instance")
	}
	return out
}

// done logs and records what became of a spec: line, then vs's lines
// (either may be empty), and why it failed ("" when it did not).
func (w *imcWatch) done(vs *sourceduty.VMwareStatus, line, why string) {
	var lines []string
	if line != "" {
		lines = append(lines, line)
	}
	if vs != nil {
		lines = append(append(lines, vs.Customization...), vs.Notes...)
	}
	for _, l := range lines {
		w.h.Log.Info("vmware: " + l)
	}
	w.rec.Customized(lines, why)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
