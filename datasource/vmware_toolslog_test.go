package datasource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Excerpts of VMware Tools' toolsDeployPkg.log as libDeployPkg writes
// them (open-vm-tools linuxDeployment.c, Deploy and CloudInitSetup), one
// per way a package ends.
const (
	toolsLogHead = "[2026-11-30T09:12:01.101Z] [   debug] ## Starting deploy pkg operation\n" +
		"[2026-11-30T09:12:01.102Z] [    info] open-vm-tools Version: 12.2.0.1234 (build-21223074)\n" +
		"[2026-11-30T09:12:01.200Z] [    info] Cloud-init is installed.\n"
	toolsLogHandedOver = toolsLogHead +
		"[2026-11-30T09:12:01.300Z] [    info] UseCloudInitWorkflow return: 0\n" +
		"[2026-11-30T09:12:01.301Z] [    info] Executing cloud-init workflow.\n" +
		"[2026-11-30T09:12:01.500Z] [    info] Copying main configuration file cust.cfg.\n" +
		"[2026-11-30T09:12:01.600Z] [    info] Deployment for cloud-init succeeded.\n" +
		"[2026-11-30T09:12:01.601Z] [    info] Deployment delegated to Cloud-init. Returning success.\n"
	toolsLogHandFailed = toolsLogHead +
		"[2026-11-30T09:12:01.301Z] [    info] Executing cloud-init workflow.\n" +
		"[2026-11-30T09:12:01.400Z] [   error] Deployment for cloud-init failed.\n" +
		"[2026-11-30T09:12:01.401Z] [   error] Setting generic error status in vmx.\n"
	toolsLogRefused = toolsLogHead +
		"[2026-11-30T09:12:01.250Z] [    info] Metadata exists, check cloud-init version...\n" +
		"[2026-11-30T09:12:01.251Z] [   error] Deployment failed. use cloud-init work flow return: 5\n"
	toolsLogByTools = toolsLogHead +
		"[2026-11-30T09:12:01.300Z] [    info] UseCloudInitWorkflow return: 2\n" +
		"[2026-11-30T09:12:01.301Z] [    info] Executing traditional GOSC workflow.\n" +
		"[2026-11-30T09:12:09.000Z] [    info] Customization command output:\n" +
		"Executing cloud-init workflow.\n" + // the script's output, not Tools' line
		"[2026-11-30T09:12:09.100Z] [    info] Deployment succeeded.\n"
)

// Tools' log says who applied its last package: handed over (10.2 wrote
// the line without its final "."), a hand-over that failed, the
// cloud-init kind refused, Tools' own customization; a log without those
// lines says neither, and words outside Tools' own lines do not count.
func TestReadToolsDeployLog(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		want      int
	}{
		{"handed over", toolsLogHandedOver, deployHandedOver},
		{"handed over, 10.2", strings.ReplaceAll(toolsLogHandedOver, "workflow.\n", "workflow\n"), deployHandedOver},
		{"hand-over failed", toolsLogHandFailed, deployHandFailed},
		{"refused", toolsLogRefused, deployHandFailed},
		{"by tools", toolsLogByTools, deployByTools},
		{"head only", toolsLogHead, deployUnknown},
		{"not tools' lines", "Executing traditional GOSC workflow.\nx Executing cloud-init workflow.\n", deployUnknown},
		{"empty", "", deployUnknown},
	} {
		if got := readToolsDeployLog([]byte(tc.log)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func FuzzReadToolsDeployLog(f *testing.F) {
	for _, s := range []string{toolsLogHandedOver, toolsLogHandFailed, toolsLogRefused, toolsLogByTools, "", "] ]", "\x00] [x] Executing"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := readToolsDeployLog(b)
		switch got {
		case deployUnknown, deployHandedOver, deployHandFailed, deployByTools:
		default:
			t.Fatalf("%d is no answer", got)
		}
		// Only Tools' own lines count: without their words, nothing.
		if got != deployUnknown && !strings.Contains(string(b), "] Executing ") && !strings.Contains(string(b), "] Deployment ") {
			t.Fatalf("%d from a log without Tools' lines", got)
		}
	})
}

// Tools' log is read within the boot's context: a boot that is ending
// does not read it, and says that it could not.
func TestToolsDeployLogReadWithinContext(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, vmwareIMCLog)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(toolsLogByTools), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &sourceduty.Host{Root: sysroot.Root(root), Log: discardLog()}
	if got := vmwareCustomization(t.Context(), h); len(got) != 1 || !strings.HasPrefix(got[0].text, "VMware Tools ran a guest customization itself here") {
		t.Fatalf("a live context: %+v", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got := vmwareCustomization(ctx, h)
	if len(got) != 1 || !strings.Contains(got[0].text, "its log cannot be read to say who applied it") || !strings.Contains(got[0].text, context.Canceled.Error()) {
		t.Errorf("a cancelled context: %+v", got)
	}
}
