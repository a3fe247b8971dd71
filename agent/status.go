package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Status is what the last boot decided, kept at StatusPath for
// "seedkeeper status".
type Status struct {
	Version     int                    `json:"version"`
	Time        time.Time              `json:"time"`
	Seedkeeper  string                 `json:"seedkeeper"`
	Outcome     string                 `json:"outcome"` // ok, no-source, error, partial
	Error       string                 `json:"error,omitempty"`
	Config      string                 `json:"config"`
	ConfigError string                 `json:"config_error,omitempty"`
	Source      string                 `json:"source,omitempty"`
	Transport   string                 `json:"transport,omitempty"`
	Candidates  []datasource.Candidate `json:"candidates,omitempty"`
	Dropped     []string               `json:"dropped,omitempty"` // fields of the metadata not used, and why
	Identity    *identity.Decision     `json:"identity,omitempty"`
	Seed        *SeedStatus            `json:"seed,omitempty"`
	Network     *NetResult             `json:"network,omitempty"`
}

// SeedStatus is what the seed step wrote.
type SeedStatus struct {
	Dir      string   `json:"dir"`
	Written  []string `json:"written,omitempty"`
	Removed  []string `json:"removed,omitempty"`
	Imported string   `json:"imported,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// SaveStatus writes st to StatusPath under root.
func SaveStatus(root sysroot.Root, st *Status) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	_, err = fsutil.WriteFile(root.Path(StatusPath), append(b, '\n'), 0o644)
	return err
}

// ReadStatus reads the status the last boot saved under root. The error
// wraps fs.ErrNotExist when boot has not run yet.
func ReadStatus(root sysroot.Root) (*Status, error) {
	b, err := os.ReadFile(root.Path(StatusPath))
	if err != nil {
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", root.Path(StatusPath), err)
	}
	return &st, nil
}

// DropIn is the cloud-init configuration seedkeeper ships.
const DropIn = "/etc/cloud/cloud.cfg.d/95-seedkeeper.cfg"

// CloudConfigWarnings reports cloud-init settings that silently override
// seedkeeper's drop-in: cloud-init reads cloud.cfg and then cloud.cfg.d/*.cfg
// in name order, later files winning, and system config ranks above the
// datasource for network config.
func CloudConfigWarnings(r sysroot.Root) []string {
	var warn []string
	if _, err := os.Stat(r.Path(DropIn)); err != nil {
		warn = append(warn, fmt.Sprintf("%s is missing: cloud-init may not use seedkeeper's seed", DropIn))
	}
	files := []string{"/etc/cloud/cloud.cfg"}
	matches, _ := filepath.Glob(r.Path("/etc/cloud/cloud.cfg.d/*.cfg"))
	slices.Sort(matches)
	for _, m := range matches {
		files = append(files, r.Rel(m))
	}
	last := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(r.Path(f))
		if err != nil {
			continue
		}
		var doc map[string]any
		if yaml.Unmarshal(b, &doc) != nil {
			continue
		}
		for _, k := range []string{"datasource_list", "network"} {
			if _, ok := doc[k]; ok {
				last[k] = f
			}
		}
	}
	for _, k := range []string{"datasource_list", "network"} {
		if f, ok := last[k]; ok && f != DropIn {
			warn = append(warn, fmt.Sprintf("%s sets %s and overrides %s", f, k, DropIn))
		}
	}
	return warn
}
