package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/nosource"
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
	CloudInit   *nosource.Hold         `json:"cloud_init,omitempty"`
	DeviceWait  string                 `json:"device_wait,omitempty"`
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
