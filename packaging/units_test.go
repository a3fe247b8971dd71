package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBootUnit(t *testing.T) {
	u := parseUnit(t, "seedkeeper-boot.service")
	want := map[[2]string]string{
		{"Unit", "DefaultDependencies"}: "no",
		{"Unit", "RequiresMountsFor"}:   "/var/lib",
		{"Service", "Type"}:             "oneshot",
		{"Service", "RemainAfterExit"}:  "yes",
		{"Service", "ExecStart"}:        "/usr/sbin/seedkeeper boot",
		// STATUS= and EXTEND_TIMEOUT_USEC= from the binary are dropped
		// without it.
		{"Service", "NotifyAccess"}: "main",
		{"Install", "WantedBy"}:     "sysinit.target",
	}
	for k, v := range want {
		if got := u.get(k[0], k[1]); got != v {
			t.Errorf("[%s] %s = %q; want %q", k[0], k[1], got, v)
		}
	}
	// Without default dependencies, shutdown ordering must be explicit.
	hasAll(t, u, "Unit", "Conflicts", "shutdown.target")
	hasAll(t, u, "Unit", "Before", "shutdown.target", "cloud-init-local.service", "network-pre.target")
	hasAll(t, u, "Unit", "Wants", "network-pre.target")
	hasAll(t, u, "Unit", "After", "local-fs.target")
	hasAll(t, u, "Service", "SuccessExitStatus", "1") // no metadata source
	for _, k := range []string{"After", "Wants", "Requires"} {
		if slices.Contains(u.words("Unit", k), "systemd-udev-settle.service") {
			t.Errorf("%s=systemd-udev-settle.service: it is deprecated and delays every boot", k)
		}
	}
	// A bound start timeout: an unbounded wait is asked for by the binary
	// with EXTEND_TIMEOUT_USEC=, only while a detected mdata host is silent.
	if to := u.get("Service", "TimeoutStartSec"); to == "" || to == "0" || to == "infinity" {
		t.Errorf("TimeoutStartSec = %q; want a bound (a oneshot has none by default)", to)
	}
}

func TestWatchUnit(t *testing.T) {
	u := parseUnit(t, "seedkeeper-watch.service")
	want := map[[2]string]string{
		{"Service", "Type"}:         "notify",
		{"Service", "NotifyAccess"}: "main", // READY=1 from the main process (systemd#24516)
		{"Service", "ExecStart"}:    "/usr/sbin/seedkeeper watch",
		{"Service", "Restart"}:      "on-failure",
		{"Install", "WantedBy"}:     "multi-user.target",
	}
	for k, v := range want {
		if got := u.get(k[0], k[1]); got != v {
			t.Errorf("[%s] %s = %q; want %q", k[0], k[1], got, v)
		}
	}
	hasAll(t, u, "Unit", "After", "seedkeeper-boot.service")
	hasAll(t, u, "Unit", "Wants", "seedkeeper-boot.service")
}

// TestUnitsHardening checks the sandbox both units share: it must keep what
// seedkeeper needs (netlink changes, its own network namespace, devices,
// /proc/sys/net) and take the rest away.
func TestUnitsHardening(t *testing.T) {
	for _, name := range []string{"seedkeeper-boot.service", "seedkeeper-watch.service"} {
		t.Run(name, func(t *testing.T) {
			u := parseUnit(t, name)
			caps := u.words("Service", "CapabilityBoundingSet")
			// CAP_SYS_ADMIN: netcfg/apply calls setns() (checked with
			// setpriv: "net apply" fails with EPERM without it).
			for _, c := range []string{"CAP_NET_ADMIN", "CAP_SYS_ADMIN"} {
				if !slices.Contains(caps, c) {
					t.Errorf("CapabilityBoundingSet lacks %s: %v", c, caps)
				}
			}
			for _, c := range []string{"CAP_SYS_MODULE", "CAP_SYS_PTRACE", "CAP_SYS_BOOT", "CAP_SYS_TIME", "CAP_SETUID"} {
				if slices.Contains(caps, c) {
					t.Errorf("CapabilityBoundingSet has %s, which seedkeeper does not use", c)
				}
			}
			for k, v := range map[string]string{
				"NoNewPrivileges": "yes", "ProtectHome": "yes", "PrivateTmp": "yes",
				// full, not strict: /var/lib/cloud and /var/db may not exist
				// before the first boot, and /etc stays read-only.
				"ProtectSystem": "yes",
				// setns() into its own network namespace.
				"RestrictNamespaces": "net",
			} {
				if got := u.get("Service", k); got != v {
					t.Errorf("%s = %q; want %q", k, got, v)
				}
			}
			fams := u.words("Service", "RestrictAddressFamilies")
			for _, f := range []string{"AF_NETLINK", "AF_UNIX", "AF_INET", "AF_VSOCK"} {
				if !slices.Contains(fams, f) {
					t.Errorf("RestrictAddressFamilies lacks %s (netlink, zone socket and D-Bus, ethtool ioctl socket, vsock)", f)
				}
			}
			// Each of these closes the devices (serial ports, CD-ROMs,
			// vsock) or /proc/sys/net that seedkeeper uses: ProtectClock=
			// implies DeviceAllow=char-rtc, which turns the device policy
			// to "only the allowed ones".
			for _, k := range []string{"ProtectClock", "PrivateDevices", "DeviceAllow", "DevicePolicy", "ProtectKernelTunables", "PrivateNetwork", "User", "DynamicUser"} {
				if v, ok := u["Service"][k]; ok {
					t.Errorf("%s=%v would break seedkeeper (devices, /proc/sys/net or the host's network)", k, v)
				}
			}
		})
	}
}

func hasAll(t *testing.T, u unit, section, key string, want ...string) {
	t.Helper()
	got := u.words(section, key)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("[%s] %s = %v; want it to include %s", section, key, got, w)
		}
	}
}

// verify runs systemd-analyze verify on unit files and returns what it
// said. A clean unit makes it say nothing; it exits 0 on unknown keys, bad
// values and ordering cycles too, so any output is a finding.
func verify(t *testing.T, files ...string) (string, error) {
	t.Helper()
	args := append([]string{"verify", "--man=no"}, files...)
	out, err := exec.Command("systemd-analyze", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestIntegrationUnitsVerify checks both units with systemd-analyze, with
// ExecStart pointing at a freshly built binary (verify checks that it
// exists and is executable), and proves the check fails on broken copies.
func TestIntegrationUnitsVerify(t *testing.T) {
	needTool(t, "systemd-analyze", "systemd")
	bin := seedkeeperBin(t)
	dir := t.TempDir()
	copyUnit := func(name string, edit func(string) string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "/usr/sbin/seedkeeper", bin)
		if edit != nil {
			s = edit(s)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	boot := copyUnit("seedkeeper-boot.service", nil)
	watch := copyUnit("seedkeeper-watch.service", nil)
	if out, err := verify(t, boot, watch); err != nil || out != "" {
		t.Fatalf("systemd-analyze verify: err=%v\n%s", err, out)
	}

	broken := []struct {
		name string
		edit func(string) string
		need string // a unit that must be installed for this case
	}{
		{"misspelled key", func(s string) string {
			return strings.Replace(s, "\nProtectSystem=yes\n", "\nProtectSytem=yes\n", 1)
		}, ""},
		{"bad type", func(s string) string {
			return strings.Replace(s, "\nType=oneshot\n", "\nType=oneshoot\n", 1)
		}, ""},
		{"missing binary", func(s string) string {
			return strings.Replace(s, "ExecStart="+bin, "ExecStart="+bin+"-missing", 1)
		}, ""},
		{"ordering cycle with cloud-init-local", func(s string) string {
			return strings.Replace(s, "\nAfter=local-fs.target\n", "\nAfter=local-fs.target cloud-init-local.service\nWants=cloud-init-local.service\n", 1)
		}, "cloud-init-local.service"},
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			if b.need != "" {
				if _, err := os.Stat(filepath.Join("/lib/systemd/system", b.need)); err != nil {
					t.Skipf("needs %s installed: apt-get install cloud-init", b.need)
				}
			}
			p := copyUnit("seedkeeper-boot.service", b.edit)
			if out, err := verify(t, p); err == nil && out == "" {
				t.Errorf("systemd-analyze verify found nothing wrong with a broken unit (%s)", b.name)
			}
		})
	}
}
