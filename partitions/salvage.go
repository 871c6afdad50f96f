package partitions

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lodestream/lodestream/vfs"
)

// SetAsideDamage keeps the verified prefix of a quarantined log so that a
// replica of a replicated partition can refill the rest from its peers:
// the damaged segment and every later one are renamed
// "<name>.log.corrupt-<unix nanos>" (kept for inspection; Open ignores
// them), their indexes removed, and the damaged segment's bytes before the
// damage are written back as that segment. Open then serves the prefix,
// which ends at q.Offset.
//
// It can fail or be cut at any step and be run again: the prefix is
// copied first, to "<name>.log.salvage" (a full disk fails it before
// anything is renamed), and put in place by a rename after the damaged
// segment was set aside; Open finishes that last rename when a crash fell
// just before it (recoverSegments).
func SetAsideDamage(q *QuarantineError) error {
	fsys := q.fileSystem()
	damaged, ok := parseSegmentName(q.File, logSuffix)
	if !ok {
		return fmt.Errorf("set aside damage in %s: %q is not a segment file", q.Dir, q.File)
	}
	entries, err := fsys.ReadDir(q.Dir)
	if err != nil {
		return fmt.Errorf("set aside damage: list %s: %w", q.Dir, err)
	}
	var later []uint64
	for _, e := range entries {
		if start, ok := parseSegmentName(e.Name(), logSuffix); ok && start > damaged {
			later = append(later, start)
		}
	}
	slices.Sort(later)
	damagedPath := segmentLogPath(q.Dir, damaged)
	salvage := filepath.Join(q.Dir, segmentBaseName(damaged)+salvageSuffix)
	// Written back also when nothing before the damage verified (Position 0) if the segment's own
	// start was expected there: the empty segment keeps the log's next offset at q.Offset, which an
	// empty directory would reset to 0 once retention removed the segments before it. (Not for a
	// segment that does not start where the previous one ended: its empty copy would be that gap again.)
	keep := q.Position > 0 || q.Offset == damaged
	if keep {
		if err := fsys.Remove(salvage); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("set aside damage: remove an earlier attempt's %s: %w", salvage, err)
		}
		if err := copyPrefix(fsys, damagedPath, salvage, int64(q.Position)); err != nil {
			return fmt.Errorf("set aside damage: keep the verified prefix of %s: %w", q.File, err)
		}
		if err := syncDir(fsys, q.Dir); err != nil { // the prefix's name before the renames it must outlive
			return fmt.Errorf("set aside damage: keep the verified prefix of %s: %w", q.File, err)
		}
	}
	suffix := ".corrupt-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	for _, start := range append(later, damaged) { // the damaged segment last: until then a rerun finds it
		from := segmentLogPath(q.Dir, start)
		if err := fsys.Rename(from, from+suffix); err != nil {
			return fmt.Errorf("set aside %s: %w", from, err)
		}
		if err := fsys.Remove(segmentIndexPath(q.Dir, start)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("set aside damage: remove index: %w", err)
		}
	}
	if keep {
		if err := fsys.Rename(salvage, damagedPath); err != nil {
			return fmt.Errorf("set aside damage: put the verified prefix of %s in place: %w", q.File, err)
		}
	}
	return syncDir(fsys, q.Dir)
}

// copyPrefix writes the first n bytes of src to a new file dst, synced;
// on failure dst is removed.
func copyPrefix(fsys vfs.FS, src, dst string, n int64) error {
	in, err := fsys.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, in, n); err != nil {
		_ = out.Close()
		_ = fsys.Remove(dst)
		return err
	}
	if err := datasync(out); err != nil {
		_ = out.Close()
		_ = fsys.Remove(dst)
		return err
	}
	return out.Close()
}

// CutAtFirstDamage is the offline salvage of a single node's partition (`iggy-server repair
// --cut-partition-damage`, an explicit operator choice): the log is cut at its first damaged range —
// the damaged segment and every later one are set aside as "*.log.corrupt-<nanos>" (SetAsideDamage),
// the verified bytes before the damage kept — and the offset reservation is raised to the next offset
// the log had handed out, so nothing after the cut is ever re-issued. It returns the range it cut at
// (nil when the log has no damaged range).
func CutAtFirstDamage(dir string) (*DamagedRange, error) { return cutAtFirstDamage(vfs.OS, dir) }

// cutAtFirstDamage is CutAtFirstDamage on fsys.
func cutAtFirstDamage(fsys vfs.FS, dir string) (*DamagedRange, error) {
	l, err := Open(dir, Options{FS: fsys, ReadOnly: true, ServeAroundDamage: true, Logger: quietDiscard()})
	if err != nil {
		return nil, err
	}
	ranges := l.DamagedRanges()
	next := l.NextOffset()
	_ = l.Close()
	if len(ranges) == 0 {
		return nil, nil
	}
	first := ranges[0]
	reserved := next
	if data, err := fsys.ReadFile(filepath.Join(dir, reservedFileName)); err == nil {
		if v, _, ok := decodeReservation(data); ok {
			reserved = max(reserved, v)
		}
	}
	q := &QuarantineError{Dir: dir, File: first.File, Position: first.Position, Offset: first.FirstOffset, Reason: first.Reason,
		fs: fsys}
	if err := SetAsideDamage(q); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(fsys, dir, filepath.Join(dir, reservedFileName), encodeReservationBoot(reserved, ""), true); err != nil {
		return nil, fmt.Errorf("cut %s: keep offsets below %d from being re-issued: %w", dir, reserved, err)
	}
	// One open rebuilds the indexes SetAsideDamage removed.
	l, err = Open(dir, Options{FS: fsys, ServeAroundDamage: true, ReserveOffsets: true, Logger: quietDiscard()})
	if err != nil {
		return &first, fmt.Errorf("cut %s: reopen: %w", dir, err)
	}
	return &first, l.Close()
}

func quietDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// salvageSuffix names the verified prefix SetAsideDamage copies before it
// sets the damaged segment aside.
const salvageSuffix = logSuffix + ".salvage"

// finishSetAside (Open) deals with a verified prefix a cut SetAsideDamage
// left: when its segment is gone (set aside), the cut fell just before the
// prefix was put in place, and the rename is done now (its start is
// returned); otherwise the segment is still the damaged one and the
// prefix is removed (the next SetAsideDamage copies it again).
func (l *Log) finishSetAside(entries []fs.DirEntry, name string) (*uint64, error) {
	base := strings.TrimSuffix(name, salvageSuffix) + logSuffix
	start, ok := parseSegmentName(base, logSuffix)
	if !ok {
		return nil, nil // not ours
	}
	present := slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == base })
	path := filepath.Join(l.dir, name)
	switch {
	case l.readOnly:
		l.note("%s left by an interrupted set-aside of damage (put in place or removed at open)", name)
		return nil, nil
	case present:
		if err := l.opts.FS.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale %s: %w", name, err)
		}
		return nil, nil
	}
	l.logger.Warn("finishing an interrupted set-aside of damage: the verified prefix becomes the segment",
		"dir", l.dir, "file", base)
	if err := l.opts.FS.Rename(path, filepath.Join(l.dir, base)); err != nil {
		return nil, fmt.Errorf("put the verified prefix %s in place: %w", name, err)
	}
	if err := syncDir(l.opts.FS, l.dir); err != nil {
		return nil, fmt.Errorf("put the verified prefix %s in place: %w", name, err)
	}
	return &start, nil
}
