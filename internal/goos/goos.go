// Package goos holds the one error seedkeeper's stubs for other operating
// systems return: "WHAT is not supported on GOOS", wrapping
// errors.ErrUnsupported so callers can branch on it.
package goos

import (
	"errors"
	"runtime"
)

// Unsupported returns the error of a stub for an operation (what) this
// operating system does not have.
func Unsupported(what string) error { return unsupported{what} }

type unsupported struct{ what string }

func (e unsupported) Error() string        { return e.what + " is not supported on " + runtime.GOOS }
func (e unsupported) Is(target error) bool { return target == errors.ErrUnsupported }
