package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// BodyError reports a body that does not decode. Field names the part that failed (e.g. "stream_id",
// "options[2].key"); Code is the error code a server answers with (InvalidCommand unless a more specific
// code applies, e.g. OptionsBlockTooLarge).
type BodyError struct {
	Body   string // body being decoded, e.g. "CreateTopic"
	Field  string
	Offset int
	Reason string
	Code   ErrorCode

	indexed int // how many list indexes annotate added
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("decode %s body: field %s at offset %d: %s", e.Body, e.Field, e.Offset, e.Reason)
}

// decoder reads a body front to back. The first failure sticks: later reads return zero values, and
// err() reports the failure with the field that caused it. Lengths are checked against the remaining
// bytes before anything is sliced or allocated.
type decoder struct {
	body    string
	buf     []byte
	off     int
	failure *BodyError
}

func newDecoder(body string, b []byte) *decoder { return &decoder{body: body, buf: b} }

func (d *decoder) fail(field, format string, args ...any) {
	d.failWithCode(ErrInvalidCommand, field, format, args...)
}

func (d *decoder) failWithCode(code ErrorCode, field, format string, args ...any) {
	if d.failure == nil {
		d.failure = &BodyError{Body: d.body, Field: field, Offset: d.off, Reason: fmt.Sprintf(format, args...), Code: code}
	}
}

func (d *decoder) failed() bool { return d.failure != nil }

// annotate records the index of the list element being decoded when it failed (once per failure, so
// nested lists read inner-most first: "permissions.stream.flags[2][0]" = stream 0, topic 2).
func (d *decoder) annotate(index int) {
	if d.failure != nil && d.failure.indexed < 2 {
		d.failure.Field += fmt.Sprintf("[%d]", index)
		d.failure.indexed++
	}
}

func (d *decoder) err() error {
	if d.failure == nil {
		return nil
	}
	return d.failure
}

func (d *decoder) remaining() int { return len(d.buf) - d.off }

// take returns the next n bytes (a sub-slice of the body, not a copy).
func (d *decoder) take(field string, n int) []byte {
	if d.failed() {
		return nil
	}
	if n < 0 || n > d.remaining() {
		d.fail(field, "needs %d bytes, %d left", n, d.remaining())
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

func (d *decoder) rest() []byte {
	if d.failed() {
		return nil
	}
	b := d.buf[d.off:]
	d.off = len(d.buf)
	return b
}

func (d *decoder) u8(field string) uint8 {
	b := d.take(field, 1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (d *decoder) u16(field string) uint16 {
	b := d.take(field, 2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (d *decoder) u32(field string) uint32 {
	b := d.take(field, 4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (d *decoder) u64(field string) uint64 {
	b := d.take(field, 8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (d *decoder) f32(field string) float32 { return math.Float32frombits(d.u32(field)) }

// bool reads a u8 that must be 0 or 1.
func (d *decoder) bool(field string) bool {
	v := d.u8(field)
	if v > 1 {
		d.fail(field, "boolean byte %d is not 0 or 1", v)
	}
	return v == 1
}

// name8 reads [len u8][UTF-8 bytes] with len 1..255.
func (d *decoder) name8(field string) string {
	n := d.u8(field)
	if d.failed() {
		return ""
	}
	if n == 0 {
		d.fail(field, "name length 0, must be 1..255")
		return ""
	}
	return d.utf8(field, d.take(field, int(n)))
}

// bytes8 reads [len u8][bytes] where len may be 0 (passwords, tokens).
func (d *decoder) bytes8(field string) []byte {
	n := d.u8(field)
	return d.take(field, int(n))
}

// str32 reads [len u32][UTF-8 bytes]; the length is checked against the remaining bytes first.
func (d *decoder) str32(field string) string {
	n := d.u32(field)
	if d.failed() {
		return ""
	}
	if uint64(n) > uint64(d.remaining()) {
		d.fail(field, "string length %d exceeds the %d bytes left", n, d.remaining())
		return ""
	}
	return d.utf8(field, d.take(field, int(n)))
}

func (d *decoder) utf8(field string, b []byte) string {
	if d.failed() {
		return ""
	}
	if !utf8.Valid(b) {
		d.fail(field, "not valid UTF-8")
		return ""
	}
	return string(b)
}

// count reads a u32 element count and checks that count × minElemSize bytes can still follow, so a
// caller can size a slice from it without trusting the wire.
func (d *decoder) count(field string, minElemSize int) int {
	n := d.u32(field)
	if d.failed() {
		return 0
	}
	if minElemSize > 0 && uint64(n)*uint64(minElemSize) > uint64(d.remaining()) {
		d.fail(field, "count %d needs at least %d bytes, %d left", n, uint64(n)*uint64(minElemSize), d.remaining())
		return 0
	}
	return int(n)
}

// skipTrailing consumes whatever follows the fields a request decoder read. Upstream's server decodes
// these requests with `decode_from`, which reads what it needs and ignores the rest (SDKs other than Go's
// send extra fields, e.g. DeleteTopic with a partitions count), so we do too; docs/wire.md lists the
// trailing-byte outcome of every command code. Response decoders and length-delimited sections keep
// using end.
func (d *decoder) skipTrailing() {
	if !d.failed() {
		d.off = len(d.buf)
	}
}

// end fails if bytes are left over.
func (d *decoder) end() {
	if !d.failed() && d.remaining() != 0 {
		d.fail("end", "%d trailing bytes", d.remaining())
	}
}

// Append helpers (encoders never fail: callers validate before encoding; lengths are clamped by type).

func appendU8(b []byte, v uint8) []byte   { return append(b, v) }
func appendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func appendF32(b []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendName8 writes [len u8][bytes]; s must be 1..255 bytes (checked by the typed Encode methods).
func appendName8(b []byte, s string) []byte {
	b = append(b, uint8(len(s)))
	return append(b, s...)
}

func appendBytes8(b []byte, v []byte) []byte {
	b = append(b, uint8(len(v)))
	return append(b, v...)
}

func appendStr32(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

// checkName8 validates a name before encoding: 1..255 bytes of UTF-8.
func checkName8(field, s string) error {
	if len(s) == 0 || len(s) > 255 {
		return fmt.Errorf("%s: length %d, must be 1..255 bytes", field, len(s))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: not valid UTF-8", field)
	}
	return nil
}

func checkBytes8(field string, v []byte) error {
	if len(v) > 255 {
		return fmt.Errorf("%s: length %d, must be at most 255 bytes", field, len(v))
	}
	return nil
}
