package main

// Exit codes. The mdata tools use the reference C tools' codes: 0 success,
// 1 not found, 2 error, 3 usage, 10 try again.
const (
	exitOK       = 0
	exitNotFound = 1
	exitError    = 2
	exitUsage    = 3
	exitTryAgain = 10
)
