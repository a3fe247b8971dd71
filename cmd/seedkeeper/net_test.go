package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runNetCapture(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = runNet(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Usage errors exit 3, as in every other command (issue 14: net used 2).
func TestNetUsage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "net.yaml")
	os.WriteFile(good, []byte("version: 2\nethernets: {}\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 3\nethernets:\n  eth0:\n    addresses: [10.0.0.1/24]\n"), 0o644)
	badAddr := filepath.Join(dir, "bad-address.yaml")
	os.WriteFile(badAddr, []byte("version: 2\nethernets:\n  eth0:\n    addresses: [10.0.0.300/24]\n"), 0o644)
	corruptRoot := filepath.Join(dir, "root")
	receipt := filepath.Join(corruptRoot, "var/lib/seedkeeper/network-receipt.json")
	os.MkdirAll(filepath.Dir(receipt), 0o755)
	os.WriteFile(receipt, []byte(`{"version":1,"links":{`), 0o644)

	tests := []struct {
		args       []string
		code       int
		stdout     string
		stderr     string
		stdoutMore []string
	}{
		{args: []string{"--help"}, code: 0, stdout: "Usage: seedkeeper net plan", stdoutMore: []string{"Exit status:", "  4  apply only: some operations failed", "--drivers LIST"}},
		{args: []string{"apply", "--help"}, code: 0, stdout: "Usage: seedkeeper net plan"},
		{args: nil, code: 3, stderr: "Usage: seedkeeper net plan"},
		{args: []string{"show"}, code: 3, stderr: `unknown command "show" (want plan or apply)`},
		{args: []string{"plan"}, code: 3, stderr: "seedkeeper net plan: --config FILE is required"},
		{args: []string{"plan", "--config", good, "extra"}, code: 3, stderr: `unexpected argument "extra"`},
		{args: []string{"apply", "--bogus"}, code: 3, stderr: "flag provided but not defined: -bogus"},
		{args: []string{"plan", "--config", filepath.Join(dir, "missing.yaml")}, code: 2, stderr: "reading network configuration: open " + filepath.Join(dir, "missing.yaml")},
		{args: []string{"plan", "--config", bad}, code: 2, stderr: "reading network configuration " + bad + ": "},
		// One bad field degrades that field: the plan says what was left out.
		{args: []string{"plan", "--config", badAddr}, code: 0, stdout: "note: network config: ethernets.eth0.addresses[0]: not an IP address; the address left out\n"},
		{args: []string{"apply", "--config", good, "--root", corruptRoot}, code: 2, stderr: "reading network receipt " + receipt + ": unexpected end of JSON input (it records what seedkeeper added"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runNetCapture(tt.args...)
		if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("net %q = %d\nstdout %q\nstderr %q\nwant %d, stdout containing %q, stderr containing %q",
				tt.args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
		}
		for _, s := range tt.stdoutMore {
			if !strings.Contains(stdout, s) {
				t.Errorf("net %q: stdout lacks %q", tt.args, s)
			}
		}
	}
	if data, _ := os.ReadFile(receipt); string(data) != `{"version":1,"links":{` {
		t.Errorf("corrupt receipt was rewritten: %q", data)
	}
}
