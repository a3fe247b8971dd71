package seed

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Environment of the crash helper process (see TestMain).
const (
	crashRootEnv = "SEEDKEEPER_SEED_CRASH_ROOT"
	crashGenEnv  = "SEEDKEEPER_SEED_CRASH_GEN"
)

// TestMain turns the test binary into the crash helper when asked: it
// writes ever newer large seeds into the root until it is killed.
func TestMain(m *testing.M) {
	if root := os.Getenv(crashRootEnv); root != "" {
		gen, _ := strconv.Atoi(os.Getenv(crashGenEnv))
		fmt.Println("ready")
		for ; ; gen++ {
			if _, err := Write(root, crashSeed(gen)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
	}
	os.Exit(m.Run())
}

// crashSeed is generation gen of a seed with large files. Every file
// starts with its generation, so a checker knows which complete content
// to expect.
func crashSeed(gen int) Seed {
	fill := func(name string, size int) []byte {
		head := fmt.Sprintf("#gen=%d file=%s\nversion: 1\nconfig: []\n#", gen, name)
		return append([]byte(head), bytes.Repeat([]byte{byte('a' + (gen+len(name))%26)}, size)...)
	}
	s := Seed{
		InstanceID: fmt.Sprintf("gen-%d", gen),
		Hostname:   "crash",
		UserData:   fill(UserDataFile, 2<<20),
		VendorData: fill(VendorDataFile, 1<<20),
	}
	if gen%3 != 0 {
		s.NetworkConfig = fill(NetworkConfigFile, 256<<10)
	}
	if gen%2 == 0 {
		s.SmartOS = &datasource.SmartOSExtras{UserScript: fill("user-script", 512<<10), HasUserScript: true}
	}
	return s
}

// genOf reads the generation a file claims to be.
func genOf(name string, data []byte) (int, error) {
	if name == MetaDataFile {
		var md struct {
			ID string `yaml:"instance-id"`
		}
		if err := yaml.Unmarshal(data, &md); err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimPrefix(md.ID, "gen-"))
	}
	data = bytes.TrimPrefix(data, []byte("#!/bin/bash\n"))
	line, _, _ := bytes.Cut(data, []byte("\n"))
	g, _, _ := strings.Cut(strings.TrimPrefix(string(line), "#gen="), " ")
	return strconv.Atoi(g)
}

// checkComplete fails unless every seed file under root is exactly the
// content of some generation.
func checkComplete(t *testing.T, root sysroot.Root) {
	t.Helper()
	for _, p := range []string{sd(MetaDataFile), sd(UserDataFile), sd(VendorDataFile), sd(NetworkConfigFile), UserScript} {
		data, err := os.ReadFile(root.Path(p))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		gen, err := genOf(filepath.Base(p), data)
		if err != nil {
			t.Fatalf("%s is torn (%d bytes): %v", p, len(data), err)
		}
		want, _ := files(crashSeed(gen))
		found := false
		for _, f := range want {
			if f.path == p {
				found = true
				if !bytes.Equal(f.data, data) {
					t.Fatalf("%s is torn: %d bytes, generation %d has %d", p, len(data), gen, len(f.data))
				}
			}
		}
		if !found {
			t.Fatalf("%s exists with generation %d, which has no such file", p, gen)
		}
	}
	// Whatever is there, it is our output, never a seed to import.
	// (A kill while the very first marker is being written leaves only
	// its temporary file: no seed file, nothing to import, cleaned up by
	// the next run.)
	entries, _ := os.ReadDir(root.Path(Dir))
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return strings.Contains(e.Name(), ".tmp-") })
	if len(entries) > 0 {
		if owned, err := Owned(string(root)); !owned || err != nil {
			t.Fatalf("seed directory has %d entries but no marker (%v)", len(entries), err)
		}
		if dir, _ := SourceDir(string(root)); dir != "" {
			t.Fatalf("SourceDir = %q for our own output", dir)
		}
	}
	if _, _, err := readMarker(root); err != nil {
		t.Fatalf("marker torn: %v", err)
	}
}

// Kill a process writing large seeds at random moments: every file is
// always the complete old or new content, and temporary files are neither
// seed files nor a reason to import.
func TestWriteSurvivesSIGKILL(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	shared := sysroot.Root(t.TempDir())
	for i := range rounds {
		root := shared
		if i%5 == 0 {
			root = sysroot.Root(t.TempDir()) // a kill during the very first run
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashRootEnv+"="+string(root), crashGenEnv+"="+strconv.Itoa(i*1000))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper did not start: %q %v %s", line, err, stderr.Bytes())
		}
		// Not synchronisation: the random moment of the kill.
		time.Sleep(time.Duration(rand.IntN(80_000)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()
		if bytes.Contains(stderr.Bytes(), []byte("seed")) {
			t.Fatalf("helper failed: %s", stderr.Bytes())
		}
		checkComplete(t, root)
	}

	// The next run cleans up, imports nothing and sees no hand edits.
	res, err := Write(string(shared), crashSeed(1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != "" || len(res.Warnings) != 0 {
		t.Errorf("after the kills: %+v", res)
	}
	for _, d := range []string{Dir, PerBootDir} {
		entries, _ := os.ReadDir(shared.Path(d))
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp-") {
				t.Errorf("temporary file left in %s: %s", d, e.Name())
			}
		}
	}
	checkComplete(t, shared)
}
