package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// The files a partition group's checkpoint writes beside its superblock
// (dedup.table, checkpoint.offsets) start with the checkpoint op they
// belong to and end with an XXH3-64 of everything before. Each is written
// durably before the superblock that names its checkpoint, and that
// superblock write can fail (a failed fsync fences the group until a
// restart). A restart then finds a file of a checkpoint its superblock
// never named, and must not use it; it needs the one before. So each file
// keeps two generations: writing a new checkpoint's file first moves the
// current one aside (<name>.prev) when a durable superblock names it (its
// op is at or below the last confirmed checkpoint), else overwrites the
// unconfirmed one; a restart reads the newest generation at or below its
// superblock's checkpoint (whole-node simulator: a restart after such a
// failure lost its retry table, and the same request was then appended
// twice on some replicas).

const checkpointFilePrev = ".prev"

// errCheckpointFileAhead: every generation of the file is of a checkpoint
// after the superblock's.
var errCheckpointFileAhead = errors.New("of a checkpoint after the superblock's")

// replaceCheckpointFile writes data (its op first) as dir/name durably,
// keeping the current file as the previous generation when confirmedOp
// (the checkpoint the durable superblock names) covers it.
func replaceCheckpointFile(fsys vfs.FS, dir, name string, data []byte, confirmedOp uint64) error {
	path := filepath.Join(dir, name)
	if cur, err := fsys.ReadFile(path); err == nil && checkpointFileValid(cur) && binary.LittleEndian.Uint64(cur) <= confirmedOp {
		if err := fsys.Rename(path, path+checkpointFilePrev); err != nil {
			return fmt.Errorf("keep %s of checkpoint op %d: %w", path, binary.LittleEndian.Uint64(cur), err)
		}
		// Durable before the new file replaces it, or a power loss could
		// leave the new file and neither old one.
		if err := syncDirectory(fsys, dir); err != nil {
			return err
		}
	}
	return replaceFileDurably(fsys, dir, name, data)
}

// readCheckpointFile returns the newest generation of dir/name written at
// or below checkpoint op: nil without any file; errCheckpointFileAhead
// (wrapped) when every generation is of a later checkpoint; another error
// when no generation is usable and one is damaged.
func readCheckpointFile(fsys vfs.FS, dir, name string, op uint64) ([]byte, error) {
	var firstErr error
	for _, n := range []string{name, name + checkpointFilePrev} {
		b, err := fsys.ReadFile(filepath.Join(dir, n))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
		case !checkpointFileValid(b):
			err = fmt.Errorf("%s fails its checksum", n)
		case binary.LittleEndian.Uint64(b) > op:
			err = fmt.Errorf("%s is of checkpoint op %d, the superblock's is %d: %w", n, binary.LittleEndian.Uint64(b), op, errCheckpointFileAhead)
		default:
			return b, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

func checkpointFileValid(b []byte) bool {
	return len(b) >= 16 && binary.LittleEndian.Uint64(b[len(b)-8:]) == xxh3.Hash(b[:len(b)-8])
}

// checkpointReservedFile keeps the offset reservation as of a checkpoint
// (partition_reserve.go): [op u64][reserved u64][XXH3-64]. partition.meta
// holds the latest applied one, which after a restart may be of an op
// above the checkpoint; a committed batch above the checkpoint is decided
// again against the reservation it met the first time (the replayed
// reserve ops move it on from there), never a later one.
const checkpointReservedFile = "checkpoint.reserved"

func writeCheckpointReserved(fsys vfs.FS, dir string, op, reserved, confirmedOp uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, op)
	b = binary.LittleEndian.AppendUint64(b, reserved)
	return replaceCheckpointFile(fsys, dir, checkpointReservedFile, binary.LittleEndian.AppendUint64(b, xxh3.Hash(b)), confirmedOp)
}

// readCheckpointReserved returns the reservation as of checkpoint op; ok
// is false without a usable file (a group that never reserved, or one
// written before this file existed).
func readCheckpointReserved(fsys vfs.FS, dir string, op uint64) (reserved uint64, ok bool, err error) {
	b, err := readCheckpointFile(fsys, dir, checkpointReservedFile, op)
	if errors.Is(err, errCheckpointFileAhead) || (err == nil && b == nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if len(b) != 24 {
		return 0, false, fmt.Errorf("%s: %d bytes, want 24", checkpointReservedFile, len(b))
	}
	return binary.LittleEndian.Uint64(b[8:]), true, nil
}
