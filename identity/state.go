package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Paths of the files identity reads and writes, as system paths (resolve
// them with sysroot.Root.Path).
const (
	// StatePath holds the pin.
	StatePath = paths.Identity
	// CloudInitIDPath is where cloud-init keeps the instance ID of its
	// last run. identity only reads it.
	CloudInitIDPath = paths.CloudInitID
)

// StateVersion is the version of the state file format this package writes
// and reads.
const StateVersion = 1

// ErrBadState means the state file exists but cannot be read or parsed.
var ErrBadState = errors.New("identity state is unreadable")

// State is the content of the state file.
type State struct {
	Version int `json:"version"`

	// InstanceID is the pinned ID; empty when nothing is pinned (only a
	// reset request, or only Last, is recorded).
	InstanceID string `json:"instance_id,omitempty"`
	// MachineID is the machine identity the pin belongs to.
	MachineID string `json:"machine_id,omitempty"`
	// Source is the metadata source that reported ReportedID.
	Source string `json:"source,omitempty"`
	// ReportedID is the ID the source reported when the state was last
	// written with a pin.
	ReportedID string `json:"reported_id,omitempty"`
	// Rule and RuleName say which rule made the pin.
	Rule     Rule   `json:"rule,omitempty"`
	RuleName string `json:"rule_name,omitempty"`
	// PinnedAt is when the pin was made, ConfirmedAt when a decision last
	// kept it with other input than the one before (a boot that decides
	// exactly as the last one leaves the file untouched).
	PinnedAt    time.Time `json:"pinned_at,omitzero"`
	ConfirmedAt time.Time `json:"confirmed_at,omitzero"`

	// Reset is a pending request for a new instance on the next boot.
	Reset *ResetRequest `json:"reset,omitempty"`

	// Last is the most recent decision, so that `seedkeeper identity show`
	// can explain it without the metadata.
	Last *LastDecision `json:"last,omitempty"`
}

// ResetRequest is recorded by Reset and consumed by the next Decide that can
// pin an ID.
type ResetRequest struct {
	RequestedAt time.Time `json:"requested_at"`
	// Suffix is random, chosen when the reset is requested, so that a
	// boot that fails to save its state derives the same new ID again.
	Suffix string `json:"suffix"`
	// From is the pinned ID the reset moves away from (may be empty).
	From string `json:"from,omitempty"`
}

// LastDecision is the summary of a Decision kept in the state file.
type LastDecision struct {
	At          time.Time `json:"at"`
	ReportedID  string    `json:"reported_id"`
	InstanceID  string    `json:"instance_id"`
	Rule        Rule      `json:"rule"`
	RuleName    string    `json:"rule_name"`
	Explanation string    `json:"explanation"`
}

// Load reads the state file under root. It returns (nil, nil) when there is
// none, and an error wrapping ErrBadState that names the file when it exists
// but cannot be read or parsed.
func Load(root sysroot.Root) (*State, error) {
	path := root.Path(StatePath)
	data, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), StatePath, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadState, path, err)
	}
	st, err := ParseState(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadState, path, err)
	}
	return st, nil
}

// ParseState parses the content of a state file and checks it.
func ParseState(data []byte) (*State, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var st State
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("parsing state: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parsing state: trailing data after the JSON object")
	}
	if st.Version != StateVersion {
		return nil, fmt.Errorf("state version %d is not supported (want %d)", st.Version, StateVersion)
	}
	if st.InstanceID != "" && st.MachineID == "" {
		return nil, errors.New("state field machine_id: empty while instance_id is set")
	}
	if st.InstanceID != "" && (st.Rule < RuleKeep || st.Rule > RuleReset) {
		return nil, fmt.Errorf("state field rule: %d is not a rule that pins", st.Rule)
	}
	if st.Reset != nil && st.Reset.Suffix == "" {
		return nil, errors.New("state field reset.suffix: empty")
	}
	// Reset writes 8 hex digits; anything else would end up in an ID.
	if st.Reset != nil && (len(st.Reset.Suffix) > 16 || strings.Trim(st.Reset.Suffix, "0123456789abcdef") != "") {
		return nil, errors.New("state field reset.suffix: not 1 to 16 lower-case hex digits")
	}
	return &st, nil
}

// Save writes st to the state file under root, atomically, only when its
// content changed, and never through a link or across a mount on the way.
func Save(root sysroot.Root, st *State) (changed bool, err error) {
	st.Version = StateVersion
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return false, fmt.Errorf("encoding identity state: %w", err)
	}
	data = append(data, '\n')
	// Confined to the root: no link or mount on the way is followed.
	if cur, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), StatePath, int64(len(data))); err == nil && bytes.Equal(cur, data) {
		if fi, err := fsutil.StatIn(string(root), StatePath, false); err == nil && fi.Mode().Perm() == 0o644 {
			return false, nil
		}
	}
	if err := fsutil.WriteFileIn(string(root), StatePath, data, 0o644); err != nil {
		return false, fmt.Errorf("saving identity state: %w", err)
	}
	return true, nil
}

// CloudInitID returns cloud-init's current instance ID under root, or ""
// when cloud-init has not run here.
func CloudInitID(root sysroot.Root) (string, error) {
	data, err := fsutil.ReadFileIn(context.Background(), string(root), CloudInitIDPath, fsutil.TinyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading cloud-init's instance ID: %w", err)
	}
	return string(bytes.TrimSpace(data)), nil
}
