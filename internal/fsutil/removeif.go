package fsutil

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
)

// ErrChanged is returned by RemoveInIfSum for a file that no longer holds
// what was read when the removal was decided.
var ErrChanged = errors.New("changed since it was read")

// Sum is the SHA-256 of b in hex, the hash RemoveInIfSum checks.
func Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// RemoveInIfSum removes the system path p under root only while it is a
// regular file whose content has the Sum sum: it reads the file again
// (as ReadFileInNoFollow does, at most limit bytes) right before
// removing it. A file that changed, is no longer a regular file or is
// past limit is left, with an error wrapping ErrChanged; a file that is
// gone is an error wrapping fs.ErrNotExist. What decided on the removal
// after reading the file (a plan, a dry run) is thereby held to the
// file it read.
func RemoveInIfSum(root, p, sum string, limit int64) error {
	if sum == "" {
		return fmt.Errorf("removing %s: %w (nothing was read of it)", p, ErrChanged)
	}
	b, err := ReadFileInNoFollow(context.Background(), root, p, limit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return err
	case err != nil || Sum(b) != sum:
		return fmt.Errorf("removing %s: %w", p, ErrChanged)
	}
	return RemoveIn(root, p, false)
}
