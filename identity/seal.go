package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// SealedPath is the marker "seedkeeper image seal" leaves in an image. Its
// presence makes the next decision a first run (the first boot of a clone),
// whatever state or cloud-init ID is found, and that decision removes it.
const SealedPath = paths.Sealed

// Seal is the content of the sealed marker.
type Seal struct {
	Version  int       `json:"version"`
	SealedAt time.Time `json:"sealed_at"`
}

// MarkSealed writes the sealed marker under root, with no link and (in an
// image) no mount on the way.
func MarkSealed(root sysroot.Root, now time.Time) error {
	if now.IsZero() {
		now = time.Now()
	}
	data, err := json.Marshal(Seal{Version: StateVersion, SealedAt: now.UTC().Truncate(time.Second)})
	if err != nil {
		return fmt.Errorf("writing the sealed marker: %w", err)
	}
	// Confined and checked as it is written: a directory on the way
	// swapped for a link (or a mount) since the seal was planned is
	// refused, never followed out of the image.
	if err := fsutil.WriteFileIn(string(root), SealedPath, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the sealed marker: %w", err)
	}
	return nil
}

// ReadSeal returns the sealed marker under root, or nil when there is none.
// A marker that exists but cannot be read or parsed still means "sealed":
// the returned Seal then has a zero SealedAt.
func ReadSeal(root sysroot.Root) *Seal {
	if _, err := fsutil.StatIn(string(root), SealedPath, false); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var s Seal
	if data, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), SealedPath, fsutil.SmallFile); err == nil && json.Unmarshal(data, &s) == nil {
		return &s
	}
	return &Seal{}
}

// explain is the sentence a decision made on a sealed image ends with.
func (s *Seal) explain() string {
	return fmt.Sprintf(" The image was sealed (seedkeeper image seal) at %s, so this is the first boot of a clone: no pin and no cloud-init state from before the seal counts, and the sealed marker is removed now.", stamp(s.SealedAt))
}

// consumeSeal removes the sealed marker ReadSeal found: the way to it is
// resolved inside the root, as ReadSeal reads it, and the marker itself is
// unlinked (a link is removed, not followed; a directory is not removed).
func consumeSeal(root sysroot.Root) error {
	real, err := fsutil.ResolveIn(string(root), SealedPath, false)
	if err == nil {
		err = fsutil.RemoveIn(string(root), real, false)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the sealed marker: %w", err)
	}
	return nil
}
