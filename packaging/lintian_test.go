package packaging

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// TestIntegrationLintian runs Debian's lintian on the .deb: nothing but
// the tag a static Go binary always gets. (Root is not needed; lintian
// only warns about it.)
func TestIntegrationLintian(t *testing.T) {
	testenv.Integration(t)
	needTool(t, "lintian", "lintian")
	deb := onePackage(t, packages(t), "*.deb")
	out, err := exec.Command("lintian", "--tag-display-limit", "0", deb).CombinedOutput()
	var tags []string
	for _, l := range strings.Split(string(out), "\n") {
		if l == "" || strings.Contains(l, "running with root privileges") {
			continue
		}
		if !strings.HasPrefix(l, "E: seedkeeper: statically-linked-binary ") {
			tags = append(tags, l)
		}
	}
	if len(tags) > 0 {
		t.Errorf("lintian (%v):\n%s", err, strings.Join(tags, "\n"))
	}
}
