package intent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// sshd's configuration is read within the same kind of aggregate bound:
// past it, where sshd looks for keys is not known, and that is an error
// naming the file and the bound rather than a guess.
func TestAuthorizedKeysFileAggregateBound(t *testing.T) {
	root, a := userRoot(t)
	line := "# " + strings.Repeat("x", 77) + "\n"
	pad := strings.Repeat(line, (fsutil.SmallFile-4096)/len(line))
	for i := range fsutil.ConfigSetTotal/len(pad) + 1 {
		write(t, string(root), fmt.Sprintf("etc/ssh/sshd_config.d/%02d-pad.conf", i), pad, 0o644)
	}
	write(t, string(root), "etc/ssh/sshd_config.d/99-keys.conf", "AuthorizedKeysFile .ssh/late\n", 0o644)
	got, err := AuthorizedKeysFile(root, a)
	if err == nil || !strings.Contains(err.Error(), "aggregate bound") || !strings.Contains(err.Error(), "sshd_config.d/") {
		t.Errorf("AuthorizedKeysFile = %q, %v; want an error naming the aggregate bound", got, err)
	}
}
