package buildtest

import (
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestSeedkeeperBuildsOnce(t *testing.T) {
	p := Seedkeeper(t)
	if again := Seedkeeper(t); again != p {
		t.Errorf("second call built again: %s, then %s", p, again)
	}
	out, err := exec.Command(p, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "seedkeeper ") {
		t.Errorf("%s version = %q (%v)", p, out, err)
	}
}
