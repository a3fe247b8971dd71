package identity

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// ErrBadID marks a reported instance ID that is refused.
var ErrBadID = errors.New("refused instance ID")

// CheckID says why id cannot be an instance ID, or nil. cloud-init keeps
// the ID in a line-based file and uses it as a directory name under
// /var/lib/cloud/instances, and status prints it to a terminal: so an ID
// is valid UTF-8 without control or other non-printing characters, has no
// "/", and is not "." or "..". The error describes the ID (position,
// length), never quotes it.
func CheckID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrBadID)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8 (%d bytes)", ErrBadID, len(id))
	case id == "." || id == "..":
		return fmt.Errorf("%w: a dot directory name", ErrBadID)
	}
	for i, r := range id {
		if r == '/' {
			return fmt.Errorf("%w: a \"/\" at byte %d", ErrBadID, i)
		}
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			return fmt.Errorf("%w: non-printing character %U at byte %d", ErrBadID, r, i)
		}
	}
	return nil
}
