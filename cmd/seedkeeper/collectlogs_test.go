package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// readTarGz returns the files of a tar.gz by name.
func readTarGz(t *testing.T, p string) map[string]string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[strings.TrimPrefix(h.Name, "seedkeeper-logs/")] = string(b)
	}
}

func TestCollectLogs(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "host-secret"), "HOST-FILE\n", 0o600)
	writeFile(t, filepath.Join(root, "var/lib/seedkeeper/identity.json"), `{"instance_id":"i-1","machine_id":"m"}`, 0o644)
	writeFile(t, filepath.Join(root, "var/lib/seedkeeper/status.json"), `{"instance_id":"i-1","seed_url":"http://u:SECRET-URLPW@h/?tok=SECRET-Q","meta_data":{"root_password":"SECRET-PW"}}`, 0o600)
	writeFile(t, filepath.Join(root, "var/log/cloud-init.log"), "2026 util.py: password: SECRET-LOGPW\nread http://h/seed?token=SECRET-LOGQ\nplain line\n", 0o644)
	// A link that climbs out of the root resolves inside it.
	os.MkdirAll(filepath.Join(root, "var/log"), 0o755)
	os.Symlink(filepath.Join(outside, "host-secret"), filepath.Join(root, "var/log/cloud-init-output.log"))
	writeFile(t, filepath.Join(root, "/run/systemd/network", "05-seedkeeper-lan.network"), netcfg.Header+"\n[Match]\nMACAddress=bc:24:11:aa:bb:01\n", 0o644)
	writeFile(t, filepath.Join(root, "/run/systemd/network", "10-netplan-lan.network"), "[Match]\nName=eth0\n", 0o644)
	writeFile(t, filepath.Join(root, "/run/systemd/network", "05-seedkeeper-old.network"), "edited by a person\n", 0o644)

	out := filepath.Join(t.TempDir(), "logs.tar.gz")
	r := runInProcess("collect-logs", "--root", root, "--output", out)
	if r.code != exitOK {
		t.Fatalf("collect-logs: %v", r)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("output %v %v, want a 0600 file", fi, err)
	}
	files := readTarGz(t, out)
	for _, name := range []string{"var/lib/seedkeeper/identity.json", "var/lib/seedkeeper/status.json", "var/log/cloud-init.log", "status.json",
		"network" + "/run/systemd/network" + "/05-seedkeeper-lan.network", "MANIFEST"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the tar file lacks %s; it has %v", name, keysOf(files))
		}
	}
	for name := range files {
		if strings.Contains(name, "netplan") || strings.Contains(name, "seedkeeper-old") {
			t.Errorf("took %s, a network file seedkeeper did not write (or no longer its own)", name)
		}
	}
	all := strings.Join(valuesOf(files), "\n")
	if strings.Contains(all, "SECRET") || strings.Contains(all, "HOST-FILE") {
		t.Errorf("a secret, or a file outside the root, is in the tar file:\n%s", all)
	}
	if !strings.Contains(files["var/log/cloud-init.log"], "password: REDACTED\n") || !strings.Contains(files["var/log/cloud-init.log"], "plain line\n") {
		t.Errorf("cloud-init.log as taken:\n%s", files["var/log/cloud-init.log"])
	}
	if !strings.Contains(files["MANIFEST"], "missing /run/seedkeeper/watch.json:") || !strings.Contains(files["MANIFEST"], "missing journal.txt: not read for an image under --root") {
		t.Errorf("MANIFEST does not say what is missing and why:\n%s", files["MANIFEST"])
	}

	r = runInProcess("collect-logs", "--root", root, "--output", out, "--include-secrets")
	files = readTarGz(t, out)
	if r.code != exitOK || !strings.Contains(files["var/log/cloud-init.log"], "SECRET-LOGPW") || !strings.Contains(files["var/lib/seedkeeper/status.json"], "SECRET-PW") {
		t.Errorf("--include-secrets: %v\n%s", r, files["var/log/cloud-init.log"])
	}
	if r := runInProcess("collect-logs", "extra"); r.code != exitUsage {
		t.Errorf("collect-logs extra: %v", r)
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func valuesOf(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
