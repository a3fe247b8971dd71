package identity

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/nohang"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Under an image root, identity's readers neither block on a FIFO nor
// follow a link onto the host: cloud-init's ID, the pin, the sealed marker
// and the machine identity.
func TestReadersUnderAnImageRoot(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c\n"), 0o644)
	for _, kind := range []string{"FIFO", "link"} {
		dir := t.TempDir()
		root := sysroot.Root(dir)
		for _, p := range []string{CloudInitIDPath, StatePath, SealedPath, ProductUUIDPath} {
			host := filepath.Join(dir, p)
			os.MkdirAll(filepath.Dir(host), 0o755)
			var err error
			if kind == "FIFO" {
				err = syscall.Mkfifo(host, 0o644)
			} else {
				err = os.Symlink(secret, host)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		var errs []error
		var ids []string
		nohang.Run(t, kind+": identity's readers", func() {
			id, err := CloudInitID(root)
			ids, errs = append(ids, id), append(errs, err)
			_, err = Load(root)
			errs = append(errs, err)
			mid, err := ReadMachineIdentity(root)
			ids, errs = append(ids, mid), append(errs, err)
			if s := ReadSeal(root); s == nil || !s.SealedAt.IsZero() {
				t.Errorf("%s at the marker: %+v, want sealed with no time", kind, s)
			}
		})
		for _, id := range ids {
			if strings.Contains(id, "3f6a1b2c") {
				t.Errorf("%s: read the host's file: %q", kind, id)
			}
		}
		if kind == "FIFO" {
			for i, err := range errs {
				if err == nil || !strings.Contains(err.Error(), fsutil.ErrNotRegular.Error()) {
					t.Errorf("FIFO, reader %d: %v; want it refused", i, err)
				}
			}
		}
	}
}

// The state directory of an image root is a link to an absolute path:
// consuming the marker removes the one ReadSeal found inside the root,
// never the host's file at the link's target.
func TestConsumeSealStaysInRoot(t *testing.T) {
	dir := t.TempDir()
	root := sysroot.Root(dir)
	host := t.TempDir()
	hostMarker := filepath.Join(host, "sealed")
	os.WriteFile(hostMarker, []byte("{}\n"), 0o644)
	inside := filepath.Join(dir, host)
	os.MkdirAll(inside, 0o755)
	os.WriteFile(filepath.Join(inside, "sealed"), []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "var/lib"), 0o755)
	if err := os.Symlink(host, filepath.Join(dir, "var/lib/seedkeeper")); err != nil {
		t.Fatal(err)
	}
	if ReadSeal(root) == nil {
		t.Fatal("the marker inside the root is not found")
	}
	if err := consumeSeal(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hostMarker); err != nil {
		t.Errorf("the host's file at the link's target was removed: %v", err)
	}
	if ReadSeal(root) != nil {
		t.Errorf("the marker inside the root is still there")
	}
	// A directory where the marker belongs is not removed.
	os.Remove(filepath.Join(inside, "sealed"))
	os.Mkdir(filepath.Join(inside, "sealed"), 0o755)
	if err := consumeSeal(root); err == nil {
		t.Errorf("a directory at the marker was consumed without an error")
	}
	if _, err := os.Stat(filepath.Join(inside, "sealed")); err != nil {
		t.Errorf("the directory at the marker was removed: %v", err)
	}
}

// The state directory's parent in an image root is a link to a host
// directory: the pin is not written there.
func TestSaveStaysInRoot(t *testing.T) {
	host := t.TempDir()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "var"), 0o755)
	if err := os.Symlink(host, filepath.Join(dir, "var/lib")); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(sysroot.Root(dir), &State{}); err == nil {
		t.Errorf("Save through a link out of the root succeeded")
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("the state was written on the host: %v", ents)
	}
}
