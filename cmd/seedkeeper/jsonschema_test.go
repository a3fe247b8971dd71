package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// boot --json prints the record status reads, under a schema_version.
func TestBootJSON(t *testing.T) {
	root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
	r := runBinary(t, nil, "boot", "--root", root, "--json")
	var out struct {
		SchemaVersion int `json:"schema_version"`
		Status        struct {
			Identity struct {
				InstanceID string `json:"instance_id"`
			}
		}
		Error *string
	}
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &out) != nil || out.SchemaVersion != 1 || out.Status.Identity.InstanceID == "" || out.Error != nil {
		t.Fatalf("boot --json: %v", r)
	}
	b, _ := os.ReadFile(filepath.Join(root, "var/lib/seedkeeper/status.json"))
	var rec struct {
		Identity struct {
			InstanceID string `json:"instance_id"`
		}
	}
	if json.Unmarshal(b, &rec) != nil || rec.Identity.InstanceID != out.Status.Identity.InstanceID {
		t.Errorf("boot --json says %q, status.json %q", out.Status.Identity.InstanceID, rec.Identity.InstanceID)
	}

	// No source: exit 1, and the reason in error.
	empty := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
	r = runBinary(t, nil, "boot", "--root", empty, "--json", "--network", "off")
	out.Error = nil
	if r.code != exitNoSource || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Error == nil {
		t.Errorf("boot --json without a source: %v", r)
	}
}

func TestVersionJSON(t *testing.T) {
	r := runInProcess("version", "--json")
	var out struct {
		SchemaVersion         int `json:"schema_version"`
		Version, Go, OS, Arch string
	}
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &out) != nil || out.SchemaVersion != 1 || out.Version != version || out.Go != runtime.Version() {
		t.Errorf("version --json: %v", r)
	}
	if r := runInProcess("version"); r.code != exitOK || r.stdout != "seedkeeper "+version+"\n" {
		t.Errorf("version: %v", r)
	}
	if r := runInProcess("version", "--bogus"); r.code != exitUsage {
		t.Errorf("version --bogus: %v", r)
	}
}
