package seed

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Any path listed in the seed marker was deleted, even
// outside the seed directory and even when its hash did not match.
func TestMarkerCannotDeleteWhatSeedDidNotWrite(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	mustWrite(t, root, testSeed())
	victim := "/etc/passwd"
	escaping := Dir + "/../../../../../etc/shadow"
	handEdited := OperatorScript
	for p, content := range map[string]string{victim: "root:x:0:0::/root:/bin/sh\n", "/etc/shadow": "root:*:1::::::\n", handEdited: "#!/bin/sh\necho mine\n"} {
		os.MkdirAll(filepath.Dir(root.Path(p)), 0o755)
		if err := os.WriteFile(root.Path(p), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A marker someone edited: the victim with its real hash, a path that
	// climbs out of Dir, and a file seed writes with a hash that does not
	// match its content.
	mk, _, err := readMarker(root)
	if err != nil {
		t.Fatal(err)
	}
	mk.Files[victim] = sum([]byte("root:x:0:0::/root:/bin/sh\n"))
	mk.Files[escaping] = sum([]byte("root:*:1::::::\n"))
	mk.Files[handEdited] = sum([]byte("#!/bin/sh\necho seedkeeper wrote this\n"))
	b, _ := json.Marshal(mk)
	os.WriteFile(markerPath(root), b, 0o600)

	res := mustWrite(t, root, testSeed())
	for _, p := range []string{victim, "/etc/shadow", handEdited} {
		if _, err := os.Stat(root.Path(p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if len(res.Removed) != 0 {
		t.Errorf("removed %v", res.Removed)
	}
	if got := strings.Join(res.Warnings, "\n"); !strings.Contains(got, "does not write") || !strings.Contains(got, handEdited+" is not what seedkeeper wrote") {
		t.Errorf("warnings = %q", res.Warnings)
	}
	// What seed did write is still removed when it is no longer wanted.
	s := testSeed()
	s.SmartOS = &datasource.SmartOSExtras{UserScript: []byte("echo hi\n"), HasUserScript: true}
	mustWrite(t, root, s)
	res = mustWrite(t, root, testSeed())
	if len(res.Removed) != 1 || res.Removed[0] != UserScript {
		t.Errorf("own stale script: removed %v", res.Removed)
	}
}

// A FIFO where a seed file goes must not block the writer.
func TestWriteDoesNotReadAFIFO(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	mustWrite(t, root, testSeed())
	p := root.Path(sd(NetworkConfigFile))
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	res := mustWrite(t, root, testSeed())
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "leaving it in place") {
		t.Errorf("warnings = %q", res.Warnings)
	}
}

// An image root whose /var/lib/cloud is a link to a host directory: boot
// --root must neither import the host's seed nor write or remove there.
func TestWriteRefusesLinkOutOfRoot(t *testing.T) {
	host := t.TempDir()
	hostSeed := filepath.Join(host, "seed/nocloud")
	os.MkdirAll(hostSeed, 0o755)
	os.WriteFile(filepath.Join(hostSeed, MetaDataFile), []byte("instance-id: host-secret\n"), 0o644)
	os.WriteFile(filepath.Join(hostSeed, NetworkConfigFile), []byte("version: 1\nconfig: []\n"), 0o644)
	root := sysroot.Root(t.TempDir())
	os.MkdirAll(root.Path("/var/lib"), 0o755)
	if err := os.Symlink(host, root.Path("/var/lib/cloud")); err != nil {
		t.Fatal(err)
	}
	_, err := Write(string(root), testSeed())
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Write through a link out of the root: %v; want a refusal", err)
	}
	ents, _ := os.ReadDir(hostSeed)
	if len(ents) != 2 {
		t.Errorf("the host's seed directory changed: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(hostSeed, MetaDataFile)); string(b) != "instance-id: host-secret\n" {
		t.Errorf("the host's meta-data changed: %q", b)
	}
	if _, err := os.Lstat(root.Path(ImportDir)); err == nil {
		t.Errorf("the host's seed was imported into the root")
	}
}
