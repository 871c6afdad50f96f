package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Offline verification and salvage of a metadata directory (`iggy-server check` / `repair`). Nothing
// here runs inside the server.

// CheckMetadata verifies dir's superblock copies, snapshot and WAL without changing anything and
// returns what is wrong (empty when sound).
func CheckMetadata(dir string) []string {
	var findings []string
	for _, name := range slotNames {
		data, err := os.ReadFile(filepath.Join(dir, name))
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
	if _, err := ReadSnapshot(dir); err != nil {
		findings = append(findings, fmt.Sprintf("snapshot: %v", err))
	}
	if at, reason, err := firstWALDamage(dir); err != nil {
		findings = append(findings, fmt.Sprintf("%s: %v", walFileName, err))
	} else if at >= 0 {
		findings = append(findings, fmt.Sprintf("%s: %s", walFileName, reason))
	}
	return findings
}

// firstWALDamage scans dir/journal.wal read-only: the byte position of the first record that does not
// verify (-1 when none) and what it is.
func firstWALDamage(dir string) (int64, string, error) {
	data, err := os.ReadFile(filepath.Join(dir, walFileName))
	if errors.Is(err, os.ErrNotExist) {
		return -1, "", nil
	}
	if err != nil {
		return -1, "", err
	}
	for off := 0; off < len(data); {
		_, n, perr := parseEntry(data[off:])
		if perr == nil {
			off += n
			continue
		}
		switch at, op, found := findValidEntry(data, off+1); {
		case found:
			return int64(off), fmt.Sprintf("damaged record at byte %d (%v); a valid record (op %d) follows at byte %d: interior corruption, the server refuses to boot",
				off, perr, op, at), nil
		case completeRecord(data[off:]):
			return int64(off), fmt.Sprintf("the record at byte %d is complete but fails verification (%v): synced data damaged, the server refuses to boot",
				off, perr), nil
		default:
			return int64(off), fmt.Sprintf("torn tail at byte %d (%d bytes; an append that never completed, cut at boot)",
				off, len(data)-off), nil
		}
	}
	return -1, "", nil
}

// TruncateWALAtDamage cuts dir/journal.wal at its first damaged record (dropping it and everything
// after it: the operator's explicit choice on a single node) and fsyncs it. It returns the byte
// position and the bytes dropped (-1, 0 when the WAL verifies).
func TruncateWALAtDamage(dir string) (int64, int64, error) {
	at, _, err := firstWALDamage(dir)
	if err != nil || at < 0 {
		return -1, 0, err
	}
	path := filepath.Join(dir, walFileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return -1, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return -1, 0, err
	}
	if err := f.Truncate(at); err != nil {
		return -1, 0, fmt.Errorf("truncate %s at %d: %w", path, at, err)
	}
	if err := f.Sync(); err != nil {
		return -1, 0, fmt.Errorf("fsync %s: %w", path, err)
	}
	return at, st.Size() - at, nil
}
