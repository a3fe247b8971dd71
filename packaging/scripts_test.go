package packaging

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// scriptCalls runs a maintainer script with stand-ins for every program
// it asks of the system (systemctl, deb-systemd-helper,
// deb-systemd-invoke, seedkeeper) that record their arguments, and
// returns the calls, one a line. running says what running_system
// answers; /var/lib/seedkeeper is replaced by state, and the stand-in
// seedkeeper exits with seedkeeperExit. It returns the script's exit code.
func scriptCalls(t *testing.T, script string, running bool, state string, seedkeeperExit int, args ...string) (string, int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if fn := strings.Index(text, "running_system() {\n"); fn >= 0 {
		end := fn + strings.Index(text[fn:], "\n}\n") + 3
		answer := "return 1"
		if running {
			answer = "return 0"
		}
		text = text[:fn] + "running_system() {\n\t" + answer + "\n}\n" + text[end:]
	}
	text = strings.ReplaceAll(text, "/var/lib/seedkeeper", state)
	dir := t.TempDir()
	text = strings.ReplaceAll(text, "/etc/cloud/cloud.cfg.d", dir)
	log := filepath.Join(dir, "calls")
	for tool, code := range map[string]int{"systemctl": 0, "deb-systemd-helper": 0, "deb-systemd-invoke": 0, "seedkeeper": seedkeeperExit} {
		fake := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> '%s'\nexit %d\n", tool, log, code)
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", text, script}, args...)...)
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	calls, _ := os.ReadFile(log)
	if cmd.ProcessState.ExitCode() != 0 {
		t.Logf("%s %v: %s", script, args, out)
	}
	return strings.TrimSpace(string(calls)), cmd.ProcessState.ExitCode()
}

// TestMaintainerScripts runs every maintainer script, for each way the
// package manager calls it, on and off a running system: the rpm enables
// by preset on the first install only and never starts anything; removal
// stops and disables, and runs "seedkeeper uninstall" while the binary is
// still there (a failure stops the removal); an upgrade of a running
// system restarts the hotplug daemon (try-restart: only if it runs) and
// touches nothing else; only a .deb purge forgets the state in a script
// (the rpm declares the state files %ghost, and rpm removes them). The .deb
// scripts run for real in TestIntegrationDebInstall and the chroot tests.
func TestMaintainerScripts(t *testing.T) {
	t.Parallel()
	units := "seedkeeper-boot.service seedkeeper-watch.service"
	cases := []struct {
		script  string
		args    []string
		running bool
		want    string
		gone    bool // the state directory is removed
	}{
		{script: "rpm-post", args: []string{"1"}, want: "systemctl --root=/ preset " + units},
		{script: "rpm-post", args: []string{"1"}, running: true, want: "systemctl --root=/ preset " + units + "\nsystemctl daemon-reload\nseedkeeper identity pin"},
		{script: "rpm-post", args: []string{"2"}, want: ""}, // upgrade: keep the admin's choice
		{script: "rpm-preun", args: []string{"0"}, want: "systemctl --root=/ disable " + units + "\nseedkeeper uninstall"},
		{script: "rpm-preun", args: []string{"0"}, running: true, want: "systemctl stop seedkeeper-watch.service\nsystemctl --root=/ disable " + units + "\nseedkeeper uninstall"},
		{script: "rpm-preun", args: []string{"1"}, running: true, want: ""}, // upgrade
		{script: "rpm-postun", args: []string{"0"}, want: ""},
		{script: "rpm-postun", args: []string{"1"}, want: ""},
		{script: "rpm-postun", args: []string{"1"}, running: true, want: "systemctl daemon-reload\nsystemctl try-restart seedkeeper-watch.service"},
		{script: "deb-postinst", args: []string{"configure", ""}, want: "deb-systemd-helper --quiet was-enabled seedkeeper-boot.service\ndeb-systemd-helper enable seedkeeper-boot.service\n" +
			"deb-systemd-helper --quiet was-enabled seedkeeper-watch.service\ndeb-systemd-helper enable seedkeeper-watch.service"},
		{script: "deb-postinst", args: []string{"configure", "1.0.0-1"}, running: true, want: "deb-systemd-helper --quiet was-enabled seedkeeper-boot.service\ndeb-systemd-helper enable seedkeeper-boot.service\n" +
			"deb-systemd-helper --quiet was-enabled seedkeeper-watch.service\ndeb-systemd-helper enable seedkeeper-watch.service\n" +
			"systemctl --system daemon-reload\ndeb-systemd-invoke try-restart seedkeeper-watch.service\nseedkeeper identity pin"},
		{script: "deb-prerm", args: []string{"upgrade", "2.0.0-1"}, running: true, want: ""},
		{script: "deb-prerm", args: []string{"remove"}, running: true, want: "deb-systemd-invoke stop seedkeeper-watch.service\ndeb-systemd-helper purge " + units + "\nseedkeeper uninstall --root /"},
		{script: "deb-prerm", args: []string{"remove"}, want: "deb-systemd-helper purge " + units + "\nseedkeeper uninstall --root /"},
		{script: "deb-postrm", args: []string{"remove"}, want: ""},
		{script: "deb-postrm", args: []string{"upgrade", "2.0.0-1"}, want: ""},
		{script: "deb-postrm", args: []string{"purge"}, want: "", gone: true},
	}
	for _, c := range cases {
		name := c.script + " " + strings.Join(c.args, " ")
		if c.running {
			name += " (running system)"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			os.Mkdir(state, 0o755)
			os.WriteFile(filepath.Join(state, "identity.json"), []byte("{}\n"), 0o600)
			calls, code := scriptCalls(t, c.script, c.running, state, 0, c.args...)
			if code != 0 || calls != c.want {
				t.Errorf("exit %d, calls:\n%s\nwant exit 0, calls:\n%s", code, calls, c.want)
			}
			if _, err := os.Stat(filepath.Join(state, "identity.json")); (err != nil) != c.gone {
				t.Errorf("state removed: %v; want %v", err != nil, c.gone)
			}
		})
	}
	// A failed uninstall stops the removal, saying why.
	for _, s := range []struct{ script, arg string }{{"rpm-preun", "0"}, {"deb-prerm", "remove"}} {
		if _, code := scriptCalls(t, s.script, false, t.TempDir(), 2, s.arg); code == 0 {
			t.Errorf("%s %s: exit 0 after seedkeeper uninstall failed", s.script, s.arg)
		}
	}
}

// TestScriptsAreShell checks every maintainer script parses with dash,
// the /bin/sh of Debian (and is valid POSIX sh for rpm's /bin/sh).
func TestScriptsAreShell(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestRunningSystemFailsSafe: the scripts pin the instance ID, reload,
// restart and stop units only on a booted system, never in an image build
// (DPKG_ROOT), a container build (no systemd) or a chroot, and a chroot is
// assumed whenever it cannot be told apart: / must be PID 1's root, and
// systemd-detect-virt --chroot, which exits 1 both for "no" and for "could
// not tell" (/proc/1/root unreadable), is believed only when it says yes.
// Run in a chroot that saw the host's /run, the old check pinned the build
// host's UUID into the image.
func TestRunningSystemFailsSafe(t *testing.T) {
	t.Parallel()
	fn := runningSystemFunc(t, "deb-postinst")
	for _, s := range []string{"deb-prerm", "rpm-post", "rpm-preun", "rpm-postun"} {
		if other := runningSystemFunc(t, s); other != fn {
			t.Errorf("deb-postinst and %s decide differently", s)
		}
	}
	for _, s := range []string{"deb-postinst", "rpm-post"} {
		b, _ := os.ReadFile(filepath.Join("scripts", s))
		if !regexp.MustCompile(`(?m)^\t*if running_system; then\n(\t+.*\n)*\t+seedkeeper identity pin \|\| true\n`).Match(b) {
			t.Errorf("%s does not pin under running_system", s)
		}
	}
	other := t.TempDir()
	cases := []struct {
		name     string
		dpkgRoot string
		systemd  bool   // systemd is running (its /run directory exists)
		init     string // what /proc/1/root is: "/" , another root, or "" (unreadable)
		detect   string // systemd-detect-virt --chroot: "no", "yes", "error", "" (absent)
		want     bool
	}{
		{"booted system", "", true, "/", "no", true},
		{"booted system, no systemd-detect-virt", "", true, "/", "", true},
		{"image build (dpkg --root)", "/srv/image", true, "/", "no", false},
		{"container build, no systemd", "", false, "/", "no", false},
		{"chroot that sees the host's /run and /proc", "", true, other, "yes", false},
		{"chroot that sees the host's /run and /proc, detect-virt says no", "", true, other, "no", false},
		{"chroot that sees the host's /run, /proc/1/root unreadable", "", true, "", "error", false},
		{"chroot that sees the host's /run, no /proc, no detect-virt", "", true, "", "", false},
		{"/ is PID 1's root but detect-virt says chroot", "", true, "/", "yes", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			run := filepath.Join(dir, "run-systemd-system")
			if c.systemd {
				os.Mkdir(run, 0o755)
			}
			init := filepath.Join(dir, "proc-1-root")
			if c.init != "" {
				os.Symlink(c.init, init)
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
				body := map[string]string{
					"no":    "exit 1",
					"yes":   "exit 0",
					"error": "echo 'Failed to check for chroot() environment: Permission denied' >&2; exit 1",
				}[c.detect]
				fake := "#!/bin/sh\n[ \"$*\" = \"--quiet --chroot\" ] || exit 9\n" + body + "\n"
				if err := os.WriteFile(filepath.Join(bin, "systemd-detect-virt"), []byte(fake), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			script := strings.NewReplacer("/run/systemd/system", run, "/proc/1/root", init).Replace(fn) + "running_system"
			cmd := exec.Command(filepath.Join(bin, "sh"), "-c", script)
			cmd.Env = []string{"PATH=" + bin, "DPKG_ROOT=" + c.dpkgRoot}
			err := cmd.Run()
			if got := err == nil; got != c.want {
				t.Errorf("running_system = %v (%v); want %v", got, err, c.want)
			}
		})
	}
}
