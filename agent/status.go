package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/intent"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/nosource"
)

// Status is what the last boot decided, kept at StatusPath for
// "seedkeeper status".
type Status struct {
	Version     int                    `json:"version"`
	Time        time.Time              `json:"time"`
	BootID      string                 `json:"boot_id,omitempty"` // the kernel's ID of the boot this describes; "" when unknown
	Seedkeeper  string                 `json:"seedkeeper"`
	Outcome     string                 `json:"outcome"` // ok, no-source, error, partial
	Error       string                 `json:"error,omitempty"`
	Config      string                 `json:"config"`
	ConfigError string                 `json:"config_error,omitempty"`
	Source      string                 `json:"source,omitempty"`
	Transport   string                 `json:"transport,omitempty"`
	Candidates  []datasource.Candidate `json:"candidates,omitempty"`
	// MetadataSeconds is how long finding and reading the metadata
	// took, waits for a silent host or late devices included.
	MetadataSeconds float64            `json:"metadata_seconds,omitempty"`
	CloudInit       *nosource.Hold     `json:"cloud_init,omitempty"`
	DeviceWait      string             `json:"device_wait,omitempty"`
	Dropped         []string           `json:"dropped,omitempty"` // fields of the metadata not used, and why
	Identity        *identity.Decision `json:"identity,omitempty"`
	Seed            *SeedStatus        `json:"seed,omitempty"`
	Network         *NetResult         `json:"network,omitempty"`
	// What the source's duties did beyond the seed and the network
	// (provision on SmartOS, vmware on VMware).
	sourceduty.Extra
	// Changes is what changed in the metadata since the last boot, what
	// of it was applied and what waits for a new instance.
	Changes *intent.Result `json:"changes,omitempty"`
}

// BootIDPath is where the kernel gives the ID of the running boot, a
// random UUID made anew at every boot.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// CurrentBootID returns the ID of the running boot read under root, ""
// when there is none to read (a --root without /proc) or it is not a
// boot ID.
func CurrentBootID(root sysroot.Root) string {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), BootIDPath, fsutil.SmallFile)
	if err != nil {
		return ""
	}
	id, err := ParseBootID(b)
	if err != nil {
		return ""
	}
	return id
}

// ParseBootID checks the kernel's boot_id: one UUID in the 8-4-4-4-12
// hex form, one line. It returns the ID in lower case.
func ParseBootID(b []byte) (string, error) {
	s := strings.TrimSuffix(string(b), "\n")
	if len(s) != 36 {
		return "", fmt.Errorf("boot_id: %d bytes, want a 36-character UUID", len(s))
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", fmt.Errorf("boot_id: byte %d is not the dash of a UUID", i+1)
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return "", fmt.Errorf("boot_id: byte %d is not a hex digit", i+1)
		}
	}
	return strings.ToLower(s), nil
}

// ThisBoot reports whether st describes the running boot, whose ID is
// current: known is false when either ID is missing (a record from a
// version that did not keep it, a root without /proc), and then same is
// true, as before boot IDs were kept.
func (st *Status) ThisBoot(current string) (same, known bool) {
	if st.BootID == "" || current == "" {
		return true, false
	}
	return st.BootID == current, true
}

// SeedStatus is what the seed step wrote.
type SeedStatus struct {
	Dir      string   `json:"dir"`
	Written  []string `json:"written,omitempty"`
	Removed  []string `json:"removed,omitempty"`
	Imported string   `json:"imported,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// SaveStatus writes st to StatusPath under root, mode 0600 (the status
// keeps error text, which may describe secrets), never through a link or
// across a mount on the way.
func SaveStatus(root sysroot.Root, st *Status) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileIn(string(root), StatusPath, append(b, '\n'), 0o600)
}

// ReadStatus reads the status the last boot saved under root. The error
// wraps fs.ErrNotExist when boot has not run yet. The file is read
// through the bounded reader, never through a link, and confined to the
// root (a link on the way is resolved inside it).
func ReadStatus(root sysroot.Root) (*Status, error) {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), StatusPath, fsutil.SmallFile)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", root.Path(StatusPath), err)
	}
	return &st, nil
}
