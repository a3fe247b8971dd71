package identity

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// ErrUnusableID means a stored instance ID (the pin in the state file, or
// cloud-init's current one) is one cloud-init could not use as a directory
// name or a meta-data line (see datasource.CheckInstanceID). Decide treats
// such an ID as absent, decides as if it were not there and returns an
// error wrapping ErrUnusableID with the Decision, for the caller to log.
var ErrUnusableID = errors.New("stored instance ID is not usable")

// dropUnusable checks the stored IDs Decide reads. An unusable cloud-init
// ID becomes "" (as if cloud-init had not run); an unusable pin is removed
// from st, with what it pinned, so the rules pin again. It returns one
// error per ID dropped, naming the file and what was wrong, not the ID.
func dropUnusable(root sysroot.Root, st *State, ciID *string) []error {
	var errs []error
	if *ciID != "" {
		if err := datasource.CheckInstanceID(*ciID); err != nil {
			errs = append(errs, fmt.Errorf("%w: cloud-init's, in %s: %w; treating it as absent", ErrUnusableID, root.Path(CloudInitIDPath), err))
			*ciID = ""
		}
	}
	if st != nil && st.InstanceID != "" {
		if err := datasource.CheckInstanceID(st.InstanceID); err != nil {
			errs = append(errs, fmt.Errorf("%w: the pin in %s: %w; treating it as absent", ErrUnusableID, root.Path(StatePath), err))
			bad := st.InstanceID
			*st = State{Version: st.Version, Reset: st.Reset, Last: st.Last}
			if r := st.Reset; r != nil && r.From == bad {
				r2 := *r
				r2.From = ""
				st.Reset = &r2
			}
		}
	}
	return errs
}

// ignored adds to d's explanation the stored IDs Decide did not use.
func ignored(d Decision, dropped []error) Decision {
	for _, err := range dropped {
		d.Explanation += fmt.Sprintf(" Not used: %v.", err)
	}
	return d
}

// withSuffix appends suffix to id, first shortening id at a character
// boundary when the result would be longer than datasource.MaxInstanceID:
// a reported ID of the longest length still gets its reset or clone
// suffix, and stays an ID cloud-init can use.
func withSuffix(id, suffix string) string {
	keep := max(datasource.MaxInstanceID-len(suffix), 0)
	if len(id) > keep {
		for keep > 0 && !utf8.RuneStart(id[keep]) {
			keep--
		}
		id = id[:keep]
	}
	return id + suffix
}
