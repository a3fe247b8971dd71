package main

import (
	"errors"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/agent/report"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/image"
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
	// exitPlanChanged: --expect named a plan, and the plan made right
	// before acting is another; nothing was changed.
	exitPlanChanged = 5
	// exitFindings: image check found what a clone will not do right;
	// validate found an error in a file.
	exitFindings = 1
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

// Every exit status but exitOK, exitUsage and exitError is decided in this
// file: exitCode for a command's error, and below it the verdicts of the
// commands that report one (a test holds the other files to that).

// exitCode is the one mapping of a command's error to its exit status.
func exitCode(err error) int {
	var timedOut errTimedOut
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, apply.ErrPlanChanged), errors.Is(err, image.ErrPlanChanged), errors.Is(err, agent.ErrPlanChanged):
		return exitPlanChanged
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

// checkExit is the exit status of an image check's report.
func checkExit(rep *image.Report) int {
	switch {
	case rep.Count(image.Error) > 0:
		return exitError
	case rep.Count(image.Finding) > 0:
		return exitFindings
	}
	return exitOK
}

// statusExit is the exit status of each verdict of status.
var statusExit = map[report.Verdict]int{
	report.OK:       exitOK,
	report.Failed:   exitStatusFailed,
	report.Degraded: exitStatusDegraded,
	report.NotRun:   exitStatusNotRun,
}

// validateExit is the exit status of validate: failed, a file could not
// be read or its kind told; invalid, a file has an error.
func validateExit(failed, invalid bool) int {
	switch {
	case failed:
		return exitError
	case invalid:
		return exitFindings
	}
	return exitOK
}
