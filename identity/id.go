package identity

import (
	"errors"
	"fmt"

	"github.com/seedkeeper/seedkeeper/datasource"
)

// ErrBadID marks a reported instance ID that is refused.
var ErrBadID = errors.New("refused instance ID")

// CheckID says why id cannot be an instance ID, or nil. There is one rule
// set, datasource.CheckInstanceID (the readers, the seed writer and the
// check of stored IDs use it too); CheckID only marks its refusal with
// ErrBadID. The error describes the ID (position, length), never quotes it.
func CheckID(id string) error {
	if err := datasource.CheckInstanceID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrBadID, err)
	}
	return nil
}
