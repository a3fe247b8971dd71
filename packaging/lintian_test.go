package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// TestIntegrationLintian runs Debian's lintian on the .deb, failing on
// errors and warnings as an archive would, and shows every tag down to the
// pedantic and informational ones: none may be left. The tags that do not
// apply are overridden, each with its reason, in lintian-overrides.
// (Root is not needed; lintian only warns about it.)
func TestIntegrationLintian(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	needTool(t, "lintian", "lintian")
	deb := onePackage(t, packages(t), "*.deb")
	out, err := exec.Command("lintian", "--fail-on", "error,warning", "--pedantic", "--display-info",
		"--tag-display-limit", "0", deb).CombinedOutput()
	if err != nil {
		t.Errorf("lintian --fail-on error,warning: %v", err)
	}
	var tags []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.Contains(l, "running with root privileges") {
			tags = append(tags, l)
		}
	}
	if len(tags) > 0 {
		t.Errorf("lintian:\n%s", strings.Join(tags, "\n"))
	}
}

// TestIntegrationRPMLint runs rpmlint on the .rpm with rpmlint.toml,
// which filters only what does not apply, each with its reason: no
// finding may be left.
func TestIntegrationRPMLint(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	needTool(t, "rpmlint", "rpmlint")
	if _, err := exec.Command("/usr/bin/python3", "-c", "import magic").CombinedOutput(); err != nil {
		t.Skip("rpmlint needs python3-magic to tell a binary: apt-get install python3-magic (make test-deps installs it as root)")
	}
	pkg := onePackage(t, packages(t), "*.rpm")
	// rpmlint unpacks the package with "rpm2cpio | cpio -id"; nfpm's cpio
	// archive names its files with absolute paths, which cpio would write
	// into this machine's root. A cpio first in PATH keeps them in
	// rpmlint's directory.
	bin := t.TempDir()
	cpio, err := exec.LookPath("cpio")
	if err != nil {
		t.Skip("needs cpio: apt-get install cpio")
	}
	wrapper := "#!/bin/sh\nexec " + cpio + " --no-absolute-filenames \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "cpio"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("rpmlint", "-c", "rpmlint.toml", pkg)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	var findings []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "seedkeeper") {
			findings = append(findings, l)
		}
	}
	if err != nil || len(findings) > 0 {
		t.Errorf("rpmlint (%v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "0 errors, 0 warnings") {
		t.Errorf("rpmlint's summary is not 0 errors, 0 warnings:\n%s", out)
	}
}
