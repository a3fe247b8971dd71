package datasource

import "errors"

// ErrNoSource means no metadata source of the kind asked for exists on this
// machine. It is a normal outcome, not a failure.
var ErrNoSource = errors.New("no metadata source found")
