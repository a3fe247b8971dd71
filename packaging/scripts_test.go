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
