package nosource

import (
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

// Paths (system paths; resolve them with sysroot.Root.Path).
const (
	// MarkerPath exists while cloud-init is held back for this boot; the
	// drop-ins shipped in packaging/ skip cloud-init's units with
	// ConditionPathExists=!MarkerPath. It lives on tmpfs, so every boot
	// starts without it.
	MarkerPath = "/run/seedkeeper/no-source"
	// cloud-init's generator writes one of these per boot; `cloud-init
	// status` reads them (cmd/status.py get_bootstatus: "disabled" is
	// checked before "enabled").
	cloudInitEnabled  = "/run/cloud-init/enabled"
	cloudInitDisabled = "/run/cloud-init/disabled"
	// dsIdentifyConfig is ds-identify's own configuration.
	dsIdentifyConfig = "/etc/cloud/ds-identify.cfg"
)

// seedDirs are the NoCloud seed directories cloud-init reads (NoCloud's
// seed_dirs), the first holding the seed seedkeeper writes.
var seedDirs = paths.SeedDirs

// Hold is what HoldCloudInit decided.
type Hold struct {
	// Held is true when cloud-init's units are skipped this boot.
	Held bool `json:"held"`
	// Reason says why, in one sentence, for the log and status.
	Reason string `json:"reason"`
}

// marker is the content of MarkerPath.
type marker struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	// Switched is true when HoldCloudInit replaced cloud-init's
	// "enabled" with "disabled", so that Release puts it back.
	Switched bool `json:"switched_cloud_init_status,omitempty"`
}

// HoldCloudInit is called by a boot that found no metadata source. Unless
// cloud-init has something to run with (a seed an earlier boot wrote) or
// ds-identify's policy asks cloud-init to run without a datasource, it
// writes MarkerPath so that cloud-init's units are skipped this boot, and
// turns the generator's /run/cloud-init/enabled into disabled so that
// `cloud-init status` says "disabled" (and `--wait` returns) rather than
// "not run" forever. Otherwise it removes a marker left by an earlier run.
func HoldCloudInit(root sysroot.Root, now time.Time) (Hold, error) {
	if dir := seedPresent(root); dir != "" {
		h := Hold{Reason: fmt.Sprintf("cloud-init runs with the seed an earlier boot wrote in %s, under the instance ID decided then", dir)}
		return h, Release(root)
	}
	if p, ok := policyRunsWithoutSource(root); ok {
		h := Hold{Reason: fmt.Sprintf("ds-identify's policy %q asks cloud-init to run without a datasource, so it runs as DataSourceNone", p)}
		return h, Release(root)
	}
	h := Hold{Held: true, Reason: "no metadata source and no seed: cloud-init is skipped this boot (its status says disabled), as its own ds-identify does when it finds nothing, so that a seed that comes later configures an untouched machine"}
	m := marker{At: now.UTC().Truncate(time.Second), Reason: h.Reason}
	if old, err := readMarker(root); err == nil && old != nil {
		m.Switched = old.Switched
	}
	// The marker first: it is what skips the units, and it records the
	// switch of the status files before the switch is made.
	enabled := exists(root, cloudInitEnabled)
	m.Switched = m.Switched || enabled
	b, _ := json.Marshal(m)
	if err := fsutil.WriteFileIn(string(root), MarkerPath, append(b, '\n'), 0o644); err != nil {
		return h, fmt.Errorf("holding cloud-init back: %w", err)
	}
	if enabled {
		if err := fsutil.WriteFileIn(string(root), cloudInitDisabled, nil, 0o644); err != nil {
			return h, fmt.Errorf("holding cloud-init back: %w", err)
		}
		if err := fsutil.RemoveIn(string(root), cloudInitEnabled, false); err != nil {
			return h, fmt.Errorf("holding cloud-init back: %w", err)
		}
	}
	return h, nil
}

// Release removes MarkerPath, if any, and gives cloud-init's status back
// what HoldCloudInit changed. A boot that found a source calls it: cloud-init
// then runs as usual.
func Release(root sysroot.Root) error {
	m, err := readMarker(root)
	if err != nil {
		return fmt.Errorf("releasing cloud-init: %w", err)
	}
	if m == nil {
		return nil
	}
	if m.Switched && exists(root, cloudInitDisabled) {
		if err := fsutil.WriteFileIn(string(root), cloudInitEnabled, nil, 0o644); err != nil {
			return fmt.Errorf("releasing cloud-init: %w", err)
		}
		if err := fsutil.RemoveIn(string(root), cloudInitDisabled, false); err != nil {
			return fmt.Errorf("releasing cloud-init: %w", err)
		}
	}
	if err := fsutil.RemoveIn(string(root), MarkerPath, false); err != nil {
		return fmt.Errorf("releasing cloud-init: %w", err)
	}
	return nil
}

// readMarker returns the marker, nil when there is none. A marker that
// cannot be parsed still holds cloud-init back (the units test only its
// existence), and is an error here.
func readMarker(root sysroot.Root) (*marker, error) {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), MarkerPath, fsutil.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return &marker{}, fmt.Errorf("%s: not a marker seedkeeper wrote: %w", MarkerPath, err)
	}
	return &m, nil
}

// seedPresent returns the first seed directory holding both files NoCloud
// requires (meta-data and user-data), or "".
func seedPresent(root sysroot.Root) string {
	for _, d := range seedDirs {
		if isFile(root, d+"/meta-data") && isFile(root, d+"/user-data") {
			return d
		}
	}
	return ""
}

// policyRunsWithoutSource reads ds-identify's policy the way ds-identify
// does (read_config: the "policy:" line of ds-identify.cfg, overridden by
// ci.di.policy= on the kernel command line) and reports whether it runs
// cloud-init when no datasource is found: mode "enabled" or "report", or
// notfound=enabled. The default (search, notfound=disabled on machines
// with DMI) does not.
func policyRunsWithoutSource(root sysroot.Root) (string, bool) {
	policy := ""
	if b, err := fsutil.ReadFileIn(context.Background(), string(root), dsIdentifyConfig, fsutil.SmallFile); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "#")
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(k) == "policy" {
				policy = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	if b, err := fsutil.ReadFileIn(context.Background(), string(root), "/proc/cmdline", fsutil.TinyFile); err == nil {
		for _, tok := range strings.Fields(string(b)) {
			if v, ok := strings.CutPrefix(tok, "ci.di.policy="); ok {
				policy = v
			}
		}
	}
	if policy == "" {
		return "", false
	}
	// parse_policy takes the tokens in any order.
	for _, tok := range strings.Split(policy, ",") {
		switch tok {
		case "enabled", "report", "notfound=enabled":
			return policy, true
		}
	}
	return policy, false
}

// exists reports whether the system path p is there under root (a link
// itself counts).
func exists(root sysroot.Root, p string) bool {
	_, err := fsutil.StatIn(string(root), p, false)
	return err == nil
}

// isFile reports whether the system path p under root is a regular file,
// links followed inside the root.
func isFile(root sysroot.Root, p string) bool {
	fi, err := fsutil.StatIn(string(root), p, true)
	return err == nil && fi.Mode().IsRegular()
}
