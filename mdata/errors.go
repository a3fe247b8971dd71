package mdata

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is the host's NOTFOUND answer: the key does not exist.
	// It is an answer, not a fault, and is never retried.
	ErrNotFound = errors.New("no metadata for key")

	// ErrUnavailable means the host did not answer before the context
	// ended. The error also wraps the context's error.
	ErrUnavailable = errors.New("metadata service unavailable")

	// ErrUnsupported means the host does not support the operation: PUT
	// and DELETE on a V1-only host, or "invalid command" in reply to a
	// request.
	ErrUnsupported = errors.New("operation not supported by the host")

	// ErrNoTransport means this machine offers no way to reach a metadata
	// host: no zone socket, and DMI does not say SmartOS.
	ErrNoTransport = errors.New("no metadata transport on this system")
)

// HostError is the host's FAILURE answer (or any other answer code), with
// the message it gave. It is final: retrying would get the same answer.
type HostError struct {
	Code    string // FAILURE, or the unexpected code the host sent
	Message string // the host's message; may be empty
}

func (e *HostError) Error() string {
	if e.Message == "" {
		return "host answered " + e.Code
	}
	return e.Message
}

// OpError describes a failed operation.
type OpError struct {
	Op  string // "get", "keys", "put", "delete"
	Key string // empty for keys
	Err error
}

func (e *OpError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("mdata %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("mdata %s %q: %v", e.Op, e.Key, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// permanentError marks a failure that retrying cannot fix (no such device,
// permission denied). The client returns it at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err} }

func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
