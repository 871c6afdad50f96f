package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodestream/lodestream/vfs"
)

// Offline verification and salvage of a metadata directory (`iggy-server check` / `repair`). Nothing
// here runs inside the server.

// CheckMetadata verifies dir's superblock copies, snapshot and WAL without changing anything and
// returns what is wrong (empty when sound).
func CheckMetadata(dir string, opts ...Option) []string {
	fsys := fsOf(opts)
	var findings []string
	for _, name := range slotNames {
		data, err := fsys.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			findings = append(findings, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if _, _, err := decodeSuperblock(data); err != nil {
			findings = append(findings, fmt.Sprintf("%s: damaged: %v", name, err))
		}
	}
	if _, err := readSnapshot(fsys, dir); err != nil {
		findings = append(findings, fmt.Sprintf("snapshot: %v", err))
	}
	if file, _, reason, err := firstWALDamage(fsys, dir); err != nil {
		findings = append(findings, fmt.Sprintf("WAL: %v", err))
	} else if file != "" {
		findings = append(findings, fmt.Sprintf("%s: %s", file, reason))
	}
	return findings
}

// firstWALDamage scans dir's WAL files (segments, or the single-file
// journal.wal of earlier releases) read-only, as the open does: the file
// and byte position of the first record that does not verify ("" when
// none) and what it is.
func firstWALDamage(fsys vfs.FS, dir string) (string, int64, string, error) {
	files, err := listWALSegments(fsys, dir)
	if err != nil || len(files) == 0 {
		return "", -1, "", err
	}
	d, err := scanWAL(fsys, files, func(walRecord) {})
	if err != nil || d == nil {
		return "", -1, "", err
	}
	file := filepath.Base(files[d.seg].path)
	switch d.kind {
	case walInterior:
		where := fmt.Sprintf("byte %d", d.nextAt)
		if d.nextSeg != d.seg {
			where = fmt.Sprintf("byte %d of %s", d.nextAt, filepath.Base(files[d.nextSeg].path))
		}
		return file, d.at, fmt.Sprintf("damaged record at byte %d (%v); a valid record (op %d) follows at %s: interior corruption, the server refuses to boot",
			d.at, d.perr, d.nextOp, where), nil
	case walCompleteDamage:
		return file, d.at, fmt.Sprintf("the record at byte %d is complete but fails verification (%v): synced data damaged, the server refuses to boot",
			d.at, d.perr), nil
	case walSealedDamage:
		return file, d.at, fmt.Sprintf("the record at byte %d fails verification (%v) in a sealed segment (%s follows): synced data damaged, the server refuses to boot",
			d.at, d.perr, filepath.Base(files[d.seg+1].path)), nil
	default:
		return file, d.cut, fmt.Sprintf("torn tail at byte %d (%d bytes; an append that never completed, cut at boot)",
			d.cut, d.segSize-d.cut), nil
	}
}

// WALCut is what TruncateWALAtDamage removed.
type WALCut struct {
	File    string   // the segment cut (base name)
	At      int64    // byte position of the cut in File
	Dropped int64    // bytes dropped: File's tail and every later segment
	Removed []string // later segments deleted (base names)
}

// TruncateWALAtDamage cuts dir's WAL at its first damaged record (dropping it and everything after
// it, later segments included: the operator's explicit choice on a single node) and fsyncs the file
// and the directory. A damaged record inside a truncation's tombstone group cuts the whole group. It
// returns nil when the WAL verifies.
func TruncateWALAtDamage(dir string, opts ...Option) (*WALCut, error) {
	fsys := fsOf(opts)
	files, err := listWALSegments(fsys, dir)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	d, err := scanWAL(fsys, files, func(walRecord) {})
	if err != nil || d == nil {
		return nil, err
	}
	// Later segments go first, newest first: a crash part way leaves the
	// damage where it was and a prefix of the log, and the repair can run
	// again.
	var removed []string
	var removedBytes int64
	for i := len(files) - 1; i > d.seg; i-- {
		if st, err := fsys.Stat(files[i].path); err == nil {
			removedBytes += st.Size()
		}
		if err := fsys.Remove(files[i].path); err != nil {
			return nil, fmt.Errorf("remove %s: %w", files[i].path, err)
		}
		if err := syncDir(fsys, dir); err != nil {
			return nil, err
		}
		removed = append([]string{filepath.Base(files[i].path)}, removed...)
	}
	path := files[d.seg].path
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(d.cut); err != nil {
		return nil, fmt.Errorf("truncate %s at %d: %w", path, d.cut, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("fsync %s: %w", path, err)
	}
	cut := &WALCut{File: filepath.Base(path), At: d.cut, Dropped: st.Size() - d.cut + removedBytes, Removed: removed}
	return cut, nil
}
