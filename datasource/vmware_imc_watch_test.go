package datasource

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/linkaddr"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// customized records what a watcher says of each customization.
type customized struct {
	failures
	lines  [][]string
	failed []bool
	why    []string
}

func (r *customized) Customized(lines []string, why string) {
	r.lines, r.failed, r.why = append(r.lines, lines), append(r.failed, why != ""), append(r.why, why)
}

// liveIMC is a watch of live specs on a stub VMX whose vmware-rpctool is
// the one in $PATH, following a boot that read the transport given, with
// an apply that records the configurations it gets and returns applyErr.
type liveIMC struct {
	s       *stubVMX
	w       *imcWatch
	rec     *customized
	applied []*netcfg.Config
}

func newLiveIMC(t *testing.T, transport string, applyErr error) *liveIMC {
	t.Helper()
	s := newStubVMX(t, ToolRPCTool)
	t.Setenv("PATH", s.bin+":/usr/bin:/bin")
	t.Setenv("GUESTINFO_DIR", s.dir)
	t.Setenv("GUESTINFO_LOG", s.log)
	l := &liveIMC{s: s, rec: &customized{}}
	h := &sourceduty.Host{Root: sysroot.Root(s.root), Live: true, Unit: "seedkeeper-watch",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Links: linkaddr.Links{},
		ApplyNetwork: func(_ context.Context, cfg *netcfg.Config) ([]string, error) {
			l.applied = append(l.applied, cfg)
			if applyErr != nil {
				return nil, applyErr
			}
			return []string{"eth0"}, nil
		}}
	l.w = newIMCWatch(h, sourceduty.Boot{Source: SourceVMware, Transport: transport, ReportedID: "vm-id"}, l.rec)
	if l.w == nil {
		t.Fatal("no watch of live specs")
	}
	return l
}

// handOver leaves cfg as Tools does, and has the watch look once.
func (l *liveIMC) handOver(t *testing.T, cfg string) {
	t.Helper()
	p := sysroot.Root(l.s.root).Path(imcSpecPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".tmp", []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
	l.w.look(t.Context())
}

const liveNICSpec = "[NIC-CONFIG]\nNICS = NIC1\n[NIC1]\nMACADDR = 02:5e:00:00:0a:01\nBOOTPROTO = static\nIPADDR = 192.0.2.10\nNETMASK = 255.255.255.0\n"

// A spec naming a customization script is applied but for the script,
// which seedkeeper never runs: vCenter hears "script disabled", as at
// boot. Looking again at the same file does nothing.
func TestIMCWatchCustomScript(t *testing.T) {
	l := newLiveIMC(t, transportIMC, nil)
	l.handOver(t, liveNICSpec+"[CUSTOM-SCRIPT]\nSCRIPT-NAME = script.bat\n[MISC]\nMARKER-ID = m-1\n")
	l.w.look(t.Context())
	want := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-watch",
		"vmware-rpctool|deployPkg.update.state 4 6 journalctl -u seedkeeper-watch@script disabled",
	}
	if got := l.s.calls(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	if len(l.applied) != 1 || len(l.applied[0].Interfaces) != 1 || l.applied[0].Interfaces[0].MAC != "02:5e:00:00:0a:01" {
		t.Errorf("applied %+v", l.applied)
	}
	if len(l.rec.lines) != 1 || l.rec.failed[0] || !slices.Contains(l.rec.lines[0], "the spec names a customization script: seedkeeper runs no customization script; reported to vCenter as script disabled") {
		t.Errorf("recorded %q (failed %v)", l.rec.lines, l.rec.failed)
	}
	if b, err := os.ReadFile(sysroot.Root(l.s.root).Path(paths.VMwareIMCMarker)); err != nil || string(b) != "m-1\n" {
		t.Errorf("marker %q, %v", b, err)
	}
}

// An apply that fails as a whole: vCenter hears the customization
// failed, and neither the marker nor the spec is kept, so a later boot
// does not take it for applied.
func TestIMCWatchApplyFails(t *testing.T) {
	l := newLiveIMC(t, transportIMC, errors.New("netlink: busy"))
	l.handOver(t, liveNICSpec+"[MISC]\nMARKER-ID = m-1\n")
	want := []string{
		"vmware-rpctool|deployPkg.update.state 4 0 journalctl -u seedkeeper-watch",
		"vmware-rpctool|deployPkg.update.state 4 100 journalctl -u seedkeeper-watch@customization failed",
	}
	if got := l.s.calls(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	// Why is the reason, not the first line (which says what arrived).
	if len(l.rec.lines) != 1 || !l.rec.failed[0] || l.rec.why[0] != "network: not applied: netlink: busy" || !slices.Contains(l.rec.lines[0], l.rec.why[0]) {
		t.Errorf("recorded %q (why %q)", l.rec.lines, l.rec.why)
	}
	for _, p := range []string{paths.VMwareIMCMarker, paths.VMwareIMCSpec} {
		if _, err := os.Stat(sysroot.Root(l.s.root).Path(p)); !os.IsNotExist(err) {
			t.Errorf("%s kept: %v", p, err)
		}
	}
}

// After a boot that read guestinfo, a spec is not read (guestinfo comes
// first, as at boot): said, recorded as a failure, nothing reported or
// applied.
func TestIMCWatchAfterGuestinfo(t *testing.T) {
	l := newLiveIMC(t, ToolRPCTool, nil)
	l.handOver(t, liveNICSpec)
	if got := l.s.calls(); len(got) != 0 || len(l.applied) != 0 {
		t.Errorf("calls %q, applied %d", got, len(l.applied))
	}
	if len(l.rec.lines) != 1 || !l.rec.failed[0] || !strings.Contains(l.rec.lines[0][0], "is not applied: the boot read the metadata from guestinfo (vmware-rpctool), which comes before a spec") {
		t.Errorf("recorded %q (failed %v)", l.rec.lines, l.rec.failed)
	}
	// The reason alone, not the line saying that a spec arrived.
	if len(l.rec.why) != 1 || strings.Contains(l.rec.why[0], "arrived") || !strings.HasPrefix(l.rec.why[0], "the boot read the metadata from guestinfo") {
		t.Errorf("recorded why %q", l.rec.why)
	}
}

// A spec without a marker that is the spec kept was applied already;
// one that is not, is applied.
func TestIMCWatchNoMarker(t *testing.T) {
	l := newLiveIMC(t, transportIMC, nil)
	l.handOver(t, liveNICSpec)
	if len(l.applied) != 1 || len(l.s.calls()) != 2 {
		t.Fatalf("applied %d, calls %q", len(l.applied), l.s.calls())
	}
	l.handOver(t, liveNICSpec) // a new file, the same spec
	l.handOver(t, liveNICSpec+"[NETWORK]\nHOSTNAME = other\n")
	if len(l.applied) != 2 || len(l.s.calls()) != 4 || len(l.rec.lines) != 2 {
		t.Errorf("applied %d, calls %q, recorded %q", len(l.applied), l.s.calls(), l.rec.lines)
	}
}

// The spec the boot read from iMCDir is not applied again by the watch,
// even when the boot failed on it (no marker, nothing kept): the boot
// told vCenter, and a second go would contradict it. A spec written
// after it is applied.
func TestIMCWatchSkipsTheBootsSpec(t *testing.T) {
	l := newLiveIMC(t, transportIMC, nil)
	cfg := liveNICSpec + "[MISC]\nMARKER-ID = m-boot\n"
	p := sysroot.Root(l.s.root).Path(imcSpecPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	md, err := readIMC(t.Context(), sysroot.Root(l.s.root), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	vs := &sourceduty.VMwareStatus{}
	vmwareIMCBegin(t.Context(), &sourceduty.Host{Root: sysroot.Root(l.s.root), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, &vmwareBoot{tools: newToolBudget()}, vs, md)
	if len(vs.Spec) != 64 {
		t.Fatalf("the boot's status names no spec: %q", vs.Spec)
	}
	l.w.bootSpec = vs.Spec
	l.handOver(t, cfg) // Tools' file, as the boot read it
	if len(l.applied) != 0 || len(l.s.calls()) != 0 || len(l.rec.lines) != 0 {
		t.Errorf("the boot's spec again: applied %d, calls %q, recorded %q", len(l.applied), l.s.calls(), l.rec.lines)
	}
	l.handOver(t, strings.Replace(cfg, "m-boot", "m-next", 1))
	if len(l.applied) != 1 || len(l.s.calls()) != 2 {
		t.Errorf("a new spec: applied %d, calls %q", len(l.applied), l.s.calls())
	}
}
