package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
)

// Every command that prints JSON says which version of its document it
// prints (docs/json.md), as cloud-init keeps _schema_version.
func TestJSONHasSchemaVersion(t *testing.T) {
	root := t.TempDir()
	booted := statusRoot(t, &agent.Status{Version: 1, BootID: statusBootA, Outcome: "ok"})
	seed := filepath.Join("..", "..", "testdata", "nocloud", "proxmox")
	for _, args := range [][]string{
		{"status", "--root", booted, "--json"},
		{"fetch", "--seed", seed, "--json"},
		{"identity", "show", "--root", root, "--json"},
		{"image", "check", "--root", root, "--json"},
		{"uninstall", "--root", root, "--json"},
		{"version", "--json"},
	} {
		r := runInProcess(args...)
		var doc struct {
			SchemaVersion *int `json:"schema_version"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Errorf("%v: not JSON (%v): %q", args, err, r.stdout)
			continue
		}
		if doc.SchemaVersion == nil || *doc.SchemaVersion != 1 {
			t.Errorf("%v: schema_version %v, want 1", args, doc.SchemaVersion)
		}
	}
}
