package intent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// RecordPath is where the record of the last boot's metadata is kept, and
// BadRecordPath where one that could not be read is kept aside.
const (
	RecordPath    = paths.Changes
	BadRecordPath = paths.ChangesBad
)

// ErrBadRecord is returned by LoadRecord for a file that is no record.
var ErrBadRecord = errors.New("not a record this version of seedkeeper wrote")

// Record is what the last boot's metadata was, setting by setting, for the
// next boot to compare with. It holds digests, never a value in clear.
type Record struct {
	Version int `json:"version"`
	// Salt is mixed into every digest, so that a digest of a short
	// password cannot be looked up in a table.
	Salt string `json:"salt"`
	// InstanceID is the instance the record belongs to: a record of
	// another instance is not compared with.
	InstanceID string `json:"instance_id"`
	Source     string `json:"source"`
	// Settings maps a setting name to its digest.
	Settings map[string]string `json:"settings"`
	// CloudInit is the digest of the seed cloud-init reads.
	CloudInit string `json:"cloud_init"`
	// Keys is the receipt, per user, of the fingerprints of the keys that
	// are in the user's authorized_keys because the metadata put them
	// there: only these are ever removed.
	Keys map[string][]string `json:"keys,omitempty"`
	// DefaultUser is the user the metadata's keys were for, and
	// UserDataKeys the fingerprints, per user, of the keys the user-data
	// named, both at the last boot whose user-data could be read: a boot
	// that cannot read it still revokes what the meta-data no longer
	// grants, and leaves what the user-data may still name.
	DefaultUser  string              `json:"default_user,omitempty"`
	UserDataKeys map[string][]string `json:"user_data_keys,omitempty"`
}

// LoadRecord reads the record under root: nil and no error when there is
// none. It is read through the bounded reader, never through a link.
func LoadRecord(root sysroot.Root) (*Record, error) {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), RecordPath, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Version != 1 || r.Salt == "" {
		return nil, fmt.Errorf("%s: %w", root.Path(RecordPath), ErrBadRecord)
	}
	return &r, nil
}

// Save writes the record under root, 0600, atomically, and only when its
// content changed; it reports whether it wrote.
func (r *Record) Save(root sysroot.Root) (bool, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return false, err
	}
	b = append(b, '\n')
	old, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), RecordPath, fsutil.SmallFile)
	if err == nil && bytes.Equal(old, b) {
		return false, nil
	}
	return true, fsutil.WriteFileIn(string(root), RecordPath, b, 0o600)
}

// NewSalt makes the salt of a new record.
func NewSalt() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Change is one setting that differs between two records.
type Change struct {
	Setting string `json:"setting"`
	// Kind is "added", "changed" or "removed".
	Kind string `json:"kind"`
}

// Compare returns the settings whose digests differ between the last
// boot's record and this boot's, sorted by name. It is pure: what counts
// as a change is decided when the digests are made (Settings).
func Compare(last, now map[string]string) []Change {
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(now)) {
		switch old, ok := last[k]; {
		case !ok:
			out = append(out, Change{k, "added"})
		case old != now[k]:
			out = append(out, Change{k, "changed"})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(last)) {
		if _, ok := now[k]; !ok {
			out = append(out, Change{k, "removed"})
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int {
		if a.Setting < b.Setting {
			return -1
		}
		if a.Setting > b.Setting {
			return 1
		}
		return 0
	})
	return out
}
