package main

// The hostile-input corpus (testdata/hostile) run through the commands as a
// person or systemd runs them: fetch --seed, fetch from guestinfo, boot
// --root on a scratch root, then status and identity show. Whatever the
// input, nothing panics, nothing runs past runCommand's deadline, nothing is
// written outside the directories seedkeeper owns, and the secret marker
// appears in no output and no file others can read.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

const (
	hostileDir = "../../testdata/hostile"
	// secretMarker is in every place of the corpus that holds a secret.
	secretMarker = "SECRETMARKER"
)

// ownedPrefixes are the only places under a root that boot may write.
var ownedPrefixes = []string{
	"var/lib/cloud/seed/nocloud/",
	"var/lib/seedkeeper/",
	"run/systemd/network/",
	"var/lib/cloud/scripts/per-boot/",
	"var/db/mdata-user-data",
	"etc/resolv.conf",
}

// hostileCases lists the cases in a corpus directory.
func hostileCases(t *testing.T, kind string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(hostileDir, kind))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	if len(out) == 0 {
		t.Fatalf("no %s cases in the corpus", kind)
	}
	// A case whose seedfrom is a URL that refuses the connection waits
	// out the fetch's retries (seconds, mostly asleep) in each of its
	// runs: it starts first, so the other cases run beside it rather
	// than after it.
	var fetches, rest []string
	for _, name := range out {
		b, _ := os.ReadFile(filepath.Join(hostileDir, kind, name, "meta-data"))
		if seedfromURL.Match(b) {
			fetches = append(fetches, name)
		} else {
			rest = append(rest, name)
		}
	}
	return append(fetches, rest...)
}

// seedfromURL matches a meta-data with a top-level http(s) seedfrom.
var seedfromURL = regexp.MustCompile(`(?m)^seedfrom: *"?https?://`)

// snapshot maps every regular file and link under root to a hash of its
// content and mode.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		h := sha256.New()
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			h.Write([]byte(l))
		}
		out[rel] = hex.EncodeToString(h.Sum(nil)) + fi.Mode().String()
		return nil
	})
	return out
}

// checkOutput fails on a panic, a runtime crash or the secret marker in a
// command's output.
func checkOutput(t *testing.T, what string, r procResult) {
	t.Helper()
	for _, bad := range []string{"panic:", "fatal error:", "goroutine "} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("%s crashed (%q):\n%s", what, bad, r)
		}
	}
	if strings.Contains(r.stdout+r.stderr, secretMarker) {
		t.Errorf("%s shows a secret:\n%s", what, r)
	}
}

// checkTerminal fails when human-readable output holds a control
// character other than newline and tab.
func checkTerminal(t *testing.T, what, out string) {
	t.Helper()
	for i, c := range []byte(out) {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			t.Errorf("%s prints control byte %#x at %d:\n%q", what, c, i, out)
			return
		}
	}
	if strings.ContainsRune(out, '\u202e') {
		t.Errorf("%s prints a bidirectional override:\n%q", what, out)
	}
}

// checkRoot fails when a file outside the owned directories changed, or a
// file others can read holds the secret marker.
func checkRoot(t *testing.T, root string, before map[string]string) {
	t.Helper()
	after := snapshot(t, root)
	for p, h := range after {
		if before[p] == h {
			continue
		}
		if !slices.ContainsFunc(ownedPrefixes, func(pre string) bool { return strings.HasPrefix(p, pre) }) {
			t.Errorf("boot wrote %s, outside the directories it owns", p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && !slices.ContainsFunc(ownedPrefixes, func(pre string) bool { return strings.HasPrefix(p, pre) }) {
			t.Errorf("boot removed %s, outside the directories it owns", p)
		}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Mode().Perm()&0o044 == 0 {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secretMarker)) {
			t.Errorf("%s is mode %v and holds a secret", p, fi.Mode().Perm())
		}
		return nil
	})
}

// hostileRoot is a KVM scratch root with a host key that a seedfrom may
// try to reach.
func hostileRoot(t *testing.T) string {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	writeFile(t, filepath.Join(root, "etc/ssh/ssh_host_rsa_key"), "-----BEGIN OPENSSH PRIVATE KEY-----\n"+secretMarker+"\n", 0o600)
	writeFile(t, filepath.Join(root, "etc/passwd"), "root:x:0:0::/root:/bin/sh\n", 0o644)
	return root
}

// bootAndLook runs boot --root, then status (text and JSON) and identity
// show, and checks all of it.
func bootAndLook(t *testing.T, env []string, root string, args ...string) procResult {
	t.Helper()
	before := snapshot(t, root)
	r := runBinary(t, env, append([]string{"boot", "--root", root}, args...)...)
	lookAfterBoot(t, env, root, before, r)
	return r
}

// lookAfterBoot checks boot's run r and the root against what it held
// before, then runs status (text and JSON) and identity show, which read
// only what boot left, at once, and checks them.
func lookAfterBoot(t *testing.T, env []string, root string, before map[string]string, r procResult) {
	t.Helper()
	checkOutput(t, "boot", r)
	checkRoot(t, root, before)
	if r.code != exitOK && r.code != exitError && r.code != exitNoSource && r.code != exitPartial {
		t.Errorf("boot exit %d:\n%s", r.code, r)
	}
	if st, err := os.Lstat(filepath.Join(root, statusPath)); err == nil && st.Mode().Perm() != 0o600 {
		t.Errorf("status.json is mode %v, want 0600", st.Mode().Perm())
	}
	cmds := [][]string{{"status", "--root", root}, {"status", "--root", root, "--json"}, {"identity", "show", "--root", root}}
	for i, s := range runBinaries(t, env, cmds...) {
		cmd := cmds[i]
		label := strings.Join(slices.DeleteFunc(slices.Clone(cmd), func(a string) bool { return a == root || a == "--root" }), " ")
		checkOutput(t, label, s)
		if !slices.Contains(cmd, "--json") {
			checkTerminal(t, cmd[0], s.stdout+s.stderr)
		}
	}
}

// fetchCmds are the fetch runs of fetchAndLook: JSON, then text.
func fetchCmds(args ...string) [][]string {
	return [][]string{append([]string{"fetch", "--json"}, args...), append([]string{"fetch"}, args...)}
}

// fetchAndLook runs fetch (JSON and text) at once and checks both.
func fetchAndLook(t *testing.T, env []string, args ...string) {
	t.Helper()
	rs := runBinaries(t, env, fetchCmds(args...)...)
	checkFetches(t, rs[0], rs[1])
}

// checkFetches checks fetch's runs: js with --json, text without.
func checkFetches(t *testing.T, js, text procResult) {
	t.Helper()
	checkOutput(t, "fetch --json", js)
	if js.code == exitOK && !json.Valid([]byte(js.stdout)) {
		t.Errorf("fetch --json exit 0 without a JSON document:\n%s", js)
	}
	checkOutput(t, "fetch", text)
	checkTerminal(t, "fetch", text.stdout+text.stderr)
}

func TestHostileNoCloudCorpus(t *testing.T) {
	t.Parallel()
	for _, name := range hostileCases(t, "nocloud") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(hostileDir, "nocloud", name)
			root := hostileRoot(t)
			entries, _ := os.ReadDir(src)
			for _, e := range entries {
				writeFile(t, filepath.Join(root, "var/lib/cloud/seed/nocloud", e.Name()), readFile(t, filepath.Join(src, e.Name())), 0o600)
			}
			// fetch --seed reads only the case and boot only the
			// root: the fetches run beside the first boot.
			before := snapshot(t, root)
			rs := runBinaries(t, nil, append(fetchCmds("--seed", src), []string{"boot", "--root", root})...)
			checkFetches(t, rs[0], rs[1])
			lookAfterBoot(t, nil, root, before, rs[2])
			// A second boot reads the imported seed.
			bootAndLook(t, nil, root)
		})
	}
}

func TestHostileGuestinfoCorpus(t *testing.T) {
	t.Parallel()
	for _, name := range hostileCases(t, "guestinfo") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env, gi := vmwareStub(t)
			src := filepath.Join(hostileDir, "guestinfo", name)
			entries, _ := os.ReadDir(src)
			for _, e := range entries {
				writeFile(t, filepath.Join(gi, "guestinfo."+e.Name()), readFile(t, filepath.Join(src, e.Name())), 0o600)
			}
			root := scratchRoot(t, "VMware7,1", "VMware, Inc.", "4213ABCD-1234-5678-9ABC-DEF012345678")
			fetchAndLook(t, env, "--root", root, "--source", "vmware")
			bootAndLook(t, env, root)
		})
	}
}

func TestHostileConfigCorpus(t *testing.T) {
	t.Parallel()
	good := filepath.Join(hostileDir, "nocloud", "passwords-in-lists")
	configs := []string{"/dev/zero"}
	fifo := filepath.Join(t.TempDir(), "config-fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	configs = append(configs, fifo)
	for _, name := range hostileCases(t, "config") {
		configs = append(configs, filepath.Join(hostileDir, "config", name))
	}
	for _, cfg := range configs {
		t.Run(filepath.Base(cfg), func(t *testing.T) {
			t.Parallel()
			root := hostileRoot(t)
			for _, f := range []string{"meta-data", "user-data"} {
				writeFile(t, filepath.Join(root, "var/lib/cloud/seed/nocloud", f), readFile(t, filepath.Join(good, f)), 0o600)
			}
			r := bootAndLook(t, nil, root, "--config", cfg)
			if r.code != exitOK {
				t.Errorf("a bad configuration stopped boot:\n%s", r)
			}
			// The aliases are kept raw for the allowlist to judge; every
			// other file is refused and the defaults used.
			if st := readStatus(t, root); st.ConfigError == "" && filepath.Base(cfg) != "alias-bomb.yaml" {
				t.Errorf("status has no config error")
			}
		})
	}
}

// A seedfrom naming a FIFO once blocked boot for ever, and
// s=/etc/ssh/KEY/%s/.. reached the host key.
func TestHostileSeedfromLocalFiles(t *testing.T) {
	t.Parallel()
	for name, seedfrom := range map[string]string{
		"fifo":    "/srv/fifo-seed/",
		"dot-dot": "/etc/ssh/ssh_host_rsa_key/%s/..",
	} {
		t.Run(name, func(t *testing.T) {
			root := hostileRoot(t)
			writeFile(t, filepath.Join(root, "srv/fifo-seed/user-data"), "#\n", 0o600)
			if err := syscall.Mkfifo(filepath.Join(root, "srv/fifo-seed/meta-data"), 0o600); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(root, "proc/cmdline"), "ro ds=nocloud;s="+seedfrom+"\n", 0o644)
			r := bootAndLook(t, nil, root)
			if r.code != exitError {
				t.Errorf("boot with seedfrom %s: %s", seedfrom, r)
			}
		})
	}
	r := runBinary(t, nil, "fetch", "--seed", "/dev/zero")
	checkOutput(t, "fetch --seed /dev/zero", r)
	if r.code != exitError || !strings.Contains(r.stderr, "neither a seed directory nor an image") {
		t.Errorf("fetch --seed /dev/zero: %s", r)
	}
	// Without --root, a seed file that links to a device.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "meta-data"), "instance-id: i-1\n", 0o600)
	os.Symlink("/dev/zero", filepath.Join(dir, "user-data"))
	r = runBinary(t, nil, "fetch", "--seed", dir)
	checkOutput(t, "fetch --seed DIR", r)
	if r.code != exitError || !strings.Contains(r.stderr, "not a regular file (character device)") {
		t.Errorf("fetch --seed with user-data linked to /dev/zero: %s", r)
	}
}

// /var/lib/seedkeeper was followed when it was a link,
// and a path in the seed marker was deleted wherever it was.
func TestHostileStateAndMarker(t *testing.T) {
	good := filepath.Join(hostileDir, "nocloud", "passwords-in-lists")
	seed := func(root string) {
		for _, f := range []string{"meta-data", "user-data"} {
			writeFile(t, filepath.Join(root, "var/lib/cloud/seed/nocloud", f), readFile(t, filepath.Join(good, f)), 0o600)
		}
	}
	t.Run("linked state directory", func(t *testing.T) {
		root := hostileRoot(t)
		seed(root)
		os.MkdirAll(filepath.Join(root, "elsewhere"), 0o755)
		os.MkdirAll(filepath.Join(root, "var/lib"), 0o755)
		os.Symlink("../../elsewhere", filepath.Join(root, "var/lib/seedkeeper"))
		r := runBinary(t, nil, "boot", "--root", root)
		checkOutput(t, "boot", r)
		if r.code != exitError || !strings.Contains(r.stderr, "symbolic link") {
			t.Errorf("boot with a linked state directory: %s", r)
		}
		if got, _ := os.ReadDir(filepath.Join(root, "elsewhere")); len(got) != 0 {
			t.Errorf("boot wrote through the link: %v", got)
		}
	})
	t.Run("marker lists a file outside", func(t *testing.T) {
		root := hostileRoot(t)
		seed(root)
		bootAndLook(t, nil, root)
		mp := filepath.Join(root, "var/lib/cloud/seed/nocloud/.seedkeeper")
		var mk map[string]any
		if err := json.Unmarshal([]byte(readFile(t, mp)), &mk); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(readFile(t, filepath.Join(root, "etc/passwd"))))
		mk["files"].(map[string]any)["/etc/passwd"] = hex.EncodeToString(sum[:])
		b, _ := json.Marshal(mk)
		writeFile(t, mp, string(b), 0o600)
		bootAndLook(t, nil, root)
		if _, err := os.Stat(filepath.Join(root, "etc/passwd")); err != nil {
			t.Errorf("/etc/passwd listed in the marker was removed: %v", err)
		}
	})
}

// "net plan --config /dev/zero" once read without end.
func TestHostileNetConfigDevice(t *testing.T) {
	r := runBinary(t, nil, "net", "plan", "--config", "/dev/zero")
	checkOutput(t, "net plan", r)
	if r.code != exitError || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("net plan --config /dev/zero: %s", r)
	}
}

// A hostile SmartOS host could make boot hold ~15 of the
// largest values at once; one read stops at its total budget and says
// which key it was reading.
func TestHostileSmartOSTotal(t *testing.T) {
	t.Parallel()
	st := mdatatest.NewStore()
	st.SetString("sdc:uuid", mdatatest.SampleUUID)
	big := bytes.Repeat([]byte("x"), datasource.MaxSmartOSTotal/3+1)
	for _, k := range []string{"user-script", "user-data", "cloud-init:user-data", "sdc:vendor-data"} {
		st.Set(k, big)
	}
	_, transport := smartosHost(t, st)
	root := scratchRoot(t, "SmartDC HVM", "Joyent", "")
	r := bootAndLook(t, []string{"SEEDKEEPER_MDATA=" + transport}, root)
	if r.code != exitError || !strings.Contains(r.stderr, "reading cloud-init:user-data: the values read add up to more than") {
		t.Errorf("boot: %s", r)
	}
}
