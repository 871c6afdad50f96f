package client

import (
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/wire"
)

// Error is every failure a Client method returns: a server status or committed result code, an
// eviction, a local precondition (e.g. Unauthenticated before login) or a transport failure
// (Disconnected). errors.Is(err, wire.ErrStreamIDNotFound) compares the code.
type Error struct {
	Code    wire.ErrorCode
	Command wire.CommandCode
	// Eviction is set when the server evicted the session; Code is then the SDK mapping of its reason.
	Eviction *wire.Eviction
	// Err is the underlying cause for local and transport failures.
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Command, e.Code)
	if e.Eviction != nil {
		msg += fmt.Sprintf(" (evicted: %s)", e.Eviction.Reason)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is matches a wire.ErrorCode target against Code.
func (e *Error) Is(target error) bool {
	code, ok := target.(wire.ErrorCode)
	return ok && code == e.Code
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the wire error code carried by err (OK for nil, Error for an unrelated error).
func CodeOf(err error) wire.ErrorCode {
	if err == nil {
		return wire.OK
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	var code wire.ErrorCode
	if errors.As(err, &code) {
		return code
	}
	return wire.ErrError
}

// EvictionOf returns the eviction carried by err, if any.
func EvictionOf(err error) (wire.Eviction, bool) {
	var ce *Error
	if errors.As(err, &ce) && ce.Eviction != nil {
		return *ce.Eviction, true
	}
	return wire.Eviction{}, false
}
