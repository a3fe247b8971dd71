package image

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// TestIntegrationUnitsFixedBySystemctl: the units item agrees with
// systemd's own offline view (systemctl --root is-enabled), and the
// command it names as the fix does fix it.
func TestIntegrationUnitsFixedBySystemctl(t *testing.T) {
	testenv.Integration(t)
	if _, err := exec.LookPath("systemctl"); err != nil {
		t.Skip("needs systemctl: run `sudo make test` (scripts/test-deps.sh installs systemd)")
	}
	m := freshImage(t)
	m.remove("/etc/systemd/system")
	isEnabled := func(u string) string {
		out, _ := exec.Command("systemctl", "--root="+m.dir, "is-enabled", u).Output()
		return strings.TrimSpace(string(out))
	}
	run := func(fix string) {
		t.Helper()
		args := strings.Fields(fix)
		if len(args) < 2 || args[0] != "systemctl" {
			t.Fatalf("fix %q is not a systemctl command", fix)
		}
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", fix, err, out)
		}
	}

	it := expectItem(t, check(t, m), "units", Finding, "not enabled")
	if isEnabled("seedkeeper-boot.service") != "disabled" {
		t.Fatalf("systemctl says %q", isEnabled("seedkeeper-boot.service"))
	}
	run(it.Fix)
	expectItem(t, check(t, m), "units", OK)
	for _, u := range []string{"seedkeeper-boot.service", "seedkeeper-watch.service"} {
		if got := isEnabled(u); got != "enabled" {
			t.Errorf("after the fix systemctl says %s is %q", u, got)
		}
	}

	run("systemctl --root=" + m.dir + " mask seedkeeper-watch.service")
	it = expectItem(t, check(t, m), "units", Finding, "seedkeeper-watch.service masked")
	if isEnabled("seedkeeper-watch.service") != "masked" {
		t.Fatalf("systemctl says %q", isEnabled("seedkeeper-watch.service"))
	}
	run(it.Fix)
	expectItem(t, check(t, m), "units", OK)

	run("systemctl --root=" + m.dir + " disable systemd-networkd.service")
	it = expectItem(t, check(t, m), "network-stack", Finding, "no network service is enabled")
	run(it.Fix)
	expectItem(t, check(t, m), "network-stack", OK, "networkd enabled")
}
