// Package wire is the Iggy binary protocol 0.11 ("VSR framing") codec shared by the server and the Go
// client: 256-byte frame headers, operations and command codes, request and response bodies, result
// sections, eviction frames and the shared numeric error-code space.
//
// Every integer on the wire is little-endian. Decoders never panic on bad input: they return an error
// that names the field or rule that failed.
package wire

import "fmt"

// ErrorCode is a code of the shared Iggy numeric error space (wire-protocol.md §6). It travels in a reply
// header's status field (pre-commit denials) or in a result section (committed rejections). Zero means OK.
// ErrorCode implements error so a code can be returned and compared with errors.Is directly.
type ErrorCode uint32

// OK is the zero status: the request succeeded (or committed).
const OK ErrorCode = 0

// Name returns the upstream name of the code, or "" for a code outside the known space.
func (c ErrorCode) Name() string {
	if c == OK {
		return "OK"
	}
	return errorCodeNames[c]
}

// Known reports whether c is one of the codes of the shared numeric space (OK included).
func (c ErrorCode) Known() bool {
	return c == OK || errorCodeNames[c] != ""
}

// String renders "Name(code)", e.g. "StreamIdNotFound(1009)".
func (c ErrorCode) String() string {
	name := c.Name()
	if name == "" {
		name = "UnknownError"
	}
	return fmt.Sprintf("%s(%d)", name, uint32(c))
}

// Error makes ErrorCode usable as an error value.
func (c ErrorCode) Error() string {
	return "iggy error " + c.String()
}
