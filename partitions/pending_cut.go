package partitions

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/zeebo/xxh3"
)

// A cut at open (a torn tail truncated) whose fsync fails must not be trusted to the page cache:
// Linux marks the dirty state clean after a failed writeback, so the truncation shows in reads while
// the disk may still hold the old tail, and a retried open finds nothing left to cut. After a later
// power loss the cut bytes would come back (docs/simulator.md, storage item 17). So the cut is
// recorded first in <segment>.log.cut ([position u64][XXH3-64 u64], written durably); the marker is
// removed (durably) once the truncation is synced, and an open that finds one rewrites the kept
// prefix through a fresh file, whose successful sync does make it durable.
const pendingCutSuffix = ".cut"

func pendingCutPath(dir string, start uint64) string {
	return segmentLogPath(dir, start) + pendingCutSuffix
}

// markPendingCut durably records that segment start is being cut at position.
func (l *Log) markPendingCut(start, position uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, position)
	b = binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
	if err := writeFileAtomic(l.opts.FS, l.dir, pendingCutPath(l.dir, start), b, true); err != nil {
		return fmt.Errorf("record the cut of segment %d at %d: %w", start, position, err)
	}
	return nil
}

// clearPendingCut durably removes the marker of a cut whose truncation is synced.
func (l *Log) clearPendingCut(start uint64) error {
	if err := l.opts.FS.Remove(pendingCutPath(l.dir, start)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear the cut marker of segment %d: %w", start, err)
	}
	return syncDir(l.opts.FS, l.dir)
}

// finishPendingCut completes a cut an earlier open could not make durable: the segment's first
// position bytes are copied to a fresh file, synced and renamed over it. Called before the segment is
// opened through the file cache (no handle may point at the replaced file).
func (l *Log) finishPendingCut(start uint64) error {
	marker := pendingCutPath(l.dir, start)
	data, err := l.opts.FS.ReadFile(marker)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", marker, err)
	}
	if len(data) != 16 || binary.LittleEndian.Uint64(data[8:]) != xxh3.Hash(data[:8]) {
		// Written whole through a rename: damage, not a torn write.
		return l.quarantine(segmentBaseName(start)+logSuffix+pendingCutSuffix, 0, start,
			fmt.Sprintf("the marker of an unfinished cut is damaged (%d bytes)", len(data)))
	}
	position := binary.LittleEndian.Uint64(data)
	if l.readOnly {
		l.note("%s: a cut at byte %d was not made durable; the next open rewrites the segment",
			segmentBaseName(start)+logSuffix, position)
		return nil
	}
	path := segmentLogPath(l.dir, start)
	l.logger.Warn("rewriting a segment through a fresh file: a cut at open or a failed fsync was not made durable", "dir", l.dir,
		"file", segmentBaseName(start)+logSuffix, "position", position)
	if err := l.rewritePrefix(path, position); err != nil {
		return fmt.Errorf("finish the cut of %s at %d: %w", path, position, err)
	}
	return l.clearPendingCut(start)
}

// rewritePrefix replaces path with its first n bytes through path.rewrite: copy, sync, rename,
// directory sync.
func (l *Log) rewritePrefix(path string, n uint64) error {
	src, err := l.opts.FS.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + ".rewrite.tmp" // a crash mid-copy leaves it: Open removes *.tmp
	dst, err := l.opts.FS.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, cerr := io.Copy(dst, io.LimitReader(src, int64(n)))
	serr := dst.Sync()
	if err := errors.Join(cerr, serr, dst.Close()); err != nil {
		_ = l.opts.FS.Remove(tmp)
		return err
	}
	if err := l.opts.FS.Rename(tmp, path); err != nil {
		_ = l.opts.FS.Remove(tmp)
		return err
	}
	return syncDir(l.opts.FS, l.dir)
}
