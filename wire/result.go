package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Result section (§2.8): [count u32] then count × {index u32, result u32}. Success is count 0 followed
// by the payload; a committed rejection is count 1, index 0, result = code, with no payload.
const (
	resultCountSize = 4
	resultEntrySize = 8
	// resultEntriesMax bounds how many entries a decoder looks at; replies carry at most one today.
	resultEntriesMax = 1024
)

// AppendResultOK appends the success section (count 0); the payload follows it.
func AppendResultOK(dst []byte) []byte {
	return binary.LittleEndian.AppendUint32(dst, 0)
}

// AppendResultRejection appends a committed rejection: count 1, index 0, result = code.
func AppendResultRejection(dst []byte, code ErrorCode) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, 1)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	return binary.LittleEndian.AppendUint32(dst, uint32(code))
}

// ResultError is a malformed result section.
type ResultError struct{ Reason string }

func (e *ResultError) Error() string { return "invalid result section: " + e.Reason }

// DecodeResult splits a result-framed body into the committed result code (OK or the first non-zero
// entry) and the payload that follows the section. A body shorter than its section is an error.
func DecodeResult(body []byte) (ErrorCode, []byte, error) {
	if len(body) < resultCountSize {
		return OK, nil, &ResultError{Reason: fmt.Sprintf("body of %d bytes has no count", len(body))}
	}
	count := binary.LittleEndian.Uint32(body)
	if count > resultEntriesMax {
		return OK, nil, &ResultError{Reason: fmt.Sprintf("count %d exceeds %d", count, resultEntriesMax)}
	}
	need := resultCountSize + int(count)*resultEntrySize
	if len(body) < need {
		return OK, nil, &ResultError{Reason: fmt.Sprintf("count %d needs %d bytes, body has %d", count, need, len(body))}
	}
	code := OK
	for i := 0; i < int(count); i++ {
		entry := body[resultCountSize+i*resultEntrySize:]
		if r := ErrorCode(binary.LittleEndian.Uint32(entry[4:])); r != OK && code == OK {
			code = r
		}
	}
	return code, body[need:], nil
}

// BodyChecksum is the request checksum of a body: XXH3-64 (seed 0) zero-extended to u128.
func BodyChecksum(body []byte) Uint128 {
	return Uint128{Lo: xxh3.Hash(body)}
}

// RequestChecksumValid reports whether a request's checksum field is unset (zero) or matches its body.
func RequestChecksumValid(h RequestHeader, body []byte) bool {
	return h.RequestChecksum.IsZero() || h.RequestChecksum == BodyChecksum(body)
}
