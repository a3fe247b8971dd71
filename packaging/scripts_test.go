package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRPMScripts runs the rpm scriptlets with a stand-in systemctl that
// records its arguments: enable on the first install only, disable on
// erase only, never start anything, and daemon-reload only with a running
// systemd (which this stand-in environment does not have). The .deb
// scripts run for real in TestIntegrationDebInstall.
func TestRPMScripts(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("this machine runs systemd: the scripts would daemon-reload it")
	}
	units := "seedkeeper-boot.service seedkeeper-watch.service"
	cases := []struct {
		script, arg, want string
	}{
		{"rpm-post", "1", "--no-reload enable " + units},
		{"rpm-post", "2", ""}, // upgrade: keep the admin's choice
		{"rpm-preun", "0", "--no-reload disable " + units},
		{"rpm-preun", "1", ""}, // upgrade
		{"rpm-postun", "0", ""},
		{"rpm-postun", "1", ""},
	}
	for _, c := range cases {
		t.Run(c.script+" "+c.arg, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "calls")
			fake := "#!/bin/sh\necho \"$*\" >> " + log + "\n"
			if err := os.WriteFile(filepath.Join(dir, "systemctl"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", filepath.Join("scripts", c.script), c.arg)
			cmd.Env = append(os.Environ(), "PATH="+dir+":/usr/bin:/bin")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %s: %v\n%s", c.script, c.arg, err, out)
			}
			b, _ := os.ReadFile(log)
			if got := strings.TrimSpace(string(b)); got != c.want {
				t.Errorf("systemctl calls %q; want %q", got, c.want)
			}
		})
	}
}

// TestScriptsAreShell checks every maintainer script parses with dash,
// the /bin/sh of Debian (and is valid POSIX sh for rpm's /bin/sh).
func TestScriptsAreShell(t *testing.T) {
	sh, err := exec.LookPath("dash")
	if err != nil {
		sh = "/bin/sh"
	}
	files, _ := filepath.Glob("scripts/*")
	files = append(files, "pkgversion.sh")
	if len(files) < 7 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		if out, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", f, err)
		}
	}
}

func TestPkgVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                  "1.2.3",
		"v1.2.3-4-gabc1234":       "1.2.3+4.gabc1234",
		"v1.2.3-4-gabc1234-dirty": "1.2.3+4.gabc1234.dirty",
		"90edf34-dirty":           "0.0.0~git90edf34.dirty",
		"abc1234":                 "0.0.0~gitabc1234",
		"dev":                     "0.0.0~gitdev",
	} {
		out, err := exec.Command("/bin/sh", "pkgversion.sh", in).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("pkgversion.sh %s = %q (%v); want %q", in, got, err, want)
		}
	}
}

// runningSystemFunc is the running_system shell function of a script.
func runningSystemFunc(t *testing.T, script string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "running_system() {\n")
	end := strings.Index(s[max(start, 0):], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatalf("%s has no running_system function", script)
	}
	return s[start : start+end+3]
}

// TestPostinstPinsOnlyOnARunningSystem: the postinst scripts run
// "seedkeeper identity pin" only on a booted system, never in an image
// build (DPKG_ROOT), a container build (no systemd) or a chroot that sees
// the host's /run (systemd-detect-virt --chroot says so).
func TestPostinstPinsOnlyOnARunningSystem(t *testing.T) {
	fn := runningSystemFunc(t, "deb-postinst")
	if other := runningSystemFunc(t, "rpm-post"); other != fn {
		t.Error("deb-postinst and rpm-post decide differently")
	}
	for _, s := range []string{"deb-postinst", "rpm-post"} {
		b, _ := os.ReadFile(filepath.Join("scripts", s))
		if !strings.Contains(string(b), "if running_system; then\n\t\t/usr/sbin/seedkeeper identity pin || true\n") &&
			!strings.Contains(string(b), "if running_system; then\n\t/usr/sbin/seedkeeper identity pin || true\n") {
			t.Errorf("%s does not pin on a running system", s)
		}
	}
	// The function runs with a stand-in for /run/systemd/system.
	cases := []struct {
		name     string
		dpkgRoot string
		systemd  bool // systemd is running (its /run directory exists)
		detect   string
		want     bool
	}{
		{"booted system", "", true, "not a chroot", true},
		{"image build (dpkg --root)", "/srv/image", true, "not a chroot", false},
		{"container build, no systemd", "", false, "not a chroot", false},
		{"chroot that sees the host's /run", "", true, "chroot", false},
		// Without systemd-detect-virt, / is compared with PID 1's root.
		{"booted system, no systemd-detect-virt", "", true, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			run := filepath.Join(dir, "run-systemd-system")
			if c.systemd {
				os.Mkdir(run, 0o755)
			}
			bin := filepath.Join(dir, "bin")
			os.Mkdir(bin, 0o755)
			for _, tool := range []string{"stat", "sh"} {
				p, err := exec.LookPath(tool)
				if err != nil {
					t.Skipf("needs %s", tool)
				}
				os.Symlink(p, filepath.Join(bin, tool))
			}
			if c.detect != "" {
				code := "1"
				if c.detect == "chroot" {
					code = "0"
				}
				fake := "#!/bin/sh\n[ \"$*\" = \"--quiet --chroot\" ] || exit 9\nexit " + code + "\n"
				if err := os.WriteFile(filepath.Join(bin, "systemd-detect-virt"), []byte(fake), 0o755); err != nil {
					t.Fatal(err)
				}
			} else if _, err := os.Stat("/proc/1/root/."); err != nil {
				t.Skip("cannot read /proc/1/root: needs root (sudo make test) outside a sandbox that hides PID 1")
			}
			script := strings.ReplaceAll(fn, "/run/systemd/system", run) + "running_system"
			cmd := exec.Command(filepath.Join(bin, "sh"), "-c", script)
			cmd.Env = []string{"PATH=" + bin, "DPKG_ROOT=" + c.dpkgRoot}
			err := cmd.Run()
			if got := err == nil; got != c.want {
				t.Errorf("running_system = %v (%v); want %v", got, err, c.want)
			}
		})
	}
}
