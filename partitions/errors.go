package partitions

import (
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/vfs"
)

var (
	// ErrQuarantined matches (errors.Is) every *QuarantineError.
	ErrQuarantined = errors.New("partition quarantined")
	// ErrClosed is returned by operations on a closed or deleted log.
	ErrClosed = errors.New("partition log is closed")
	// ErrOffsetMismatch is returned when a batch's base_offset is not the log's next offset.
	ErrOffsetMismatch = errors.New("batch base offset is not the log's next offset")
	// ErrFailed is returned after a write failure that could not be rolled back: the log refuses
	// further writes until it is reopened (recovery then truncates whatever was half written).
	ErrFailed = errors.New("partition log failed")
)

// QuarantineError reports interior corruption found by Open: damage that is not a torn tail (a valid
// batch follows it, or a sealed segment is damaged, or segments are not contiguous). The partition is
// not served; the rest of the server keeps running.
type QuarantineError struct {
	Dir      string
	File     string // segment file name, e.g. 00000000000000001000.log
	Position uint64 // byte position of the damage in File
	Offset   uint64 // the offset expected at Position
	Reason   string
	// fs is the file system of the log that found the damage (SetAsideDamage works on it); nil:
	// vfs.OS.
	fs vfs.FS
}

// fileSystem is the file system SetAsideDamage works on.
func (e *QuarantineError) fileSystem() vfs.FS {
	if e.fs == nil {
		return vfs.OS
	}
	return e.fs
}

func (e *QuarantineError) Error() string {
	return fmt.Sprintf("partition %s quarantined: %s at byte %d (expected offset %d): %s",
		e.Dir, e.File, e.Position, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrQuarantined) true.
func (e *QuarantineError) Is(target error) bool { return target == ErrQuarantined }

// ErrCorrupt matches (errors.Is) every *CorruptionError.
var ErrCorrupt = errors.New("stored batch is corrupt")

// CorruptionError reports stored bytes that fail verification when they are read (a poll, a record
// read for state transfer, the scrubber) or a range recovery found damaged and set apart. Those bytes
// are never served: the read answers this error, naming the file and where the damage is.
type CorruptionError struct {
	Dir      string
	File     string // segment file name, e.g. 00000000000000001000.log
	Position uint64 // byte position of the damaged batch in File
	Offset   uint64 // first offset the damaged range holds
	// EndOffset, when above Offset, is the offset after the damaged range (known for ranges recovery
	// set apart); 0 when only the first offset is known.
	EndOffset uint64
	Reason    string
}

func (e *CorruptionError) Error() string {
	rng := fmt.Sprintf("offset %d", e.Offset)
	if e.EndOffset > e.Offset {
		rng = fmt.Sprintf("offsets %d..%d", e.Offset, e.EndOffset-1)
	}
	return fmt.Sprintf("partition %s: corrupt data in %s at byte %d (%s): %s", e.Dir, e.File, e.Position, rng, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }
