package datasource

import (
	"strings"
	"testing"
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
