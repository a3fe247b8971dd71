package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/nosource"
	"github.com/seedkeeper/seedkeeper/seed"
)

// snapshot returns every file under dir with its content ("->target" for
// a link).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			out[p] = "->" + l
			return nil
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// uninstall --root on an image whose /var/lib/cloud, /etc/systemd and
// /run are links out of it (to what stands for the host here): nothing
// outside the image is removed or written, neither the host's seed, nor
// its network files, nor its no-source gate, and the image's imported
// seed is not given back into the host's seed directory.
func TestUninstallStaysInRoot(t *testing.T) {
	host := sysroot.Root(t.TempDir())
	if _, err := seed.Write(string(host), seed.Seed{InstanceID: "i-host"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := netcfg.Parse([]byte(uninstallNetwork))
	if err != nil {
		t.Fatal(err)
	}
	renderAll(t, host, cfg)
	writeT(t, host, nosource.MarkerPath, "")

	root := sysroot.Root(t.TempDir())
	writeT(t, root, filepath.Join(seed.ImportDir, seed.MetaDataFile), "instance-id: the-image's\n")
	writeT(t, root, filepath.Join(seed.ImportDir, seed.UserDataFile), "#cloud-config\n")
	for _, d := range []string{"/var/lib/cloud", "/etc/systemd", "/etc/NetworkManager", "/run"} {
		if err := os.MkdirAll(filepath.Dir(root.Path(d)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(host.Path(d), root.Path(d)); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, string(host))
	if _, err := os.Lstat(host.Path(filepath.Join(seed.Dir, seed.MetaDataFile))); err != nil {
		t.Fatal(err)
	}

	u, err := Uninstall(root)
	t.Logf("Uninstall = %+v, %v", u, err)
	after := snapshot(t, string(host))
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s outside the root was removed", p)
		} else if a != b {
			t.Errorf("%s outside the root was changed", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was written outside the root", p)
		}
	}
	// The image's import is its own: kept while it is not given back.
	if _, err := os.Lstat(root.Path(filepath.Join(seed.ImportDir, seed.MetaDataFile))); err != nil {
		t.Errorf("the image's imported seed: %v", err)
	}
}
