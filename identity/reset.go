package identity

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Reset records that the next boot must be a new instance, on purpose, and
// returns the state it saved. The next Decide that can pin an ID (one with a
// machine identity) hands cloud-init the reported ID followed by "-r" and 8
// random hex digits chosen now, so the new ID differs from the current pin
// even when the reported ID has not changed, and a boot that fails to save
// its state derives the same ID again. It then pins that ID (rule 7), and
// later boots keep it by rule 1.
//
// A reset that is already pending is left as it is. An unreadable state
// file is an error: remove it first.
func Reset(rootDir string, now time.Time) (*State, error) {
	root := sysroot.Root(rootDir)
	st, err := Load(root)
	if err != nil {
		return nil, fmt.Errorf("resetting the instance ID: %w", err)
	}
	if st == nil {
		st = &State{}
	}
	if st.Reset != nil {
		return st, nil
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("resetting the instance ID: %w", err)
	}
	if now.IsZero() {
		now = time.Now()
	}
	st.Reset = &ResetRequest{
		RequestedAt: now.UTC().Truncate(time.Second),
		Suffix:      hex.EncodeToString(b[:]),
		From:        st.InstanceID,
	}
	if _, err := Save(root, st); err != nil {
		return nil, fmt.Errorf("resetting the instance ID: %w", err)
	}
	return st, nil
}
