package main

import (
	"errors"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/netcfg/apply"
)

// Exit codes. The mdata tools use the reference C tools' codes: 0 success,
// 1 not found, 2 error, 3 usage, 10 try again; boot, fetch and net add
// 1 no metadata source and 4 network applied in part.
const (
	exitOK       = 0
	exitNotFound = 1
	exitNoSource = 1 // no metadata source here: a normal outcome
	exitError    = 2
	exitUsage    = 3
	exitPartial  = 4 // the network was applied only in part
	exitTryAgain = 10
)

// Exit codes of status, as cloud-init status's (0 ok, 1 failed, 2
// recoverable problems), with one of its own for a boot seedkeeper boot
// has not run in; 3 stays usage, 10 a --timeout that ran out.
const (
	exitStatusFailed   = 1
	exitStatusDegraded = 2
	exitStatusNotRun   = 5
)

// errTimedOut marks an error that ended a wait the user bounded (--timeout,
// or the mdata host still unavailable when it ran out): "try again".
type errTimedOut struct{ error }

func (e errTimedOut) Unwrap() error { return e.error }

// exitCode is the one mapping of a command's error to its exit status.
func exitCode(err error) int {
	var timedOut errTimedOut
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, datasource.ErrNoSource):
		return exitNoSource
	case errors.Is(err, mdata.ErrNotFound):
		return exitNotFound
	case errors.Is(err, apply.ErrPartial):
		return exitPartial
	case errors.As(err, &timedOut):
		return exitTryAgain
	}
	return exitError
}
