package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/vfs"
)

// Power-loss amnesia, the node's side (cluster mode; issue 9 point 1).
//
// Under `durability = replicated` a backup acknowledges a prepare once it
// is written to its prepare WAL, before the WAL is synced. A process crash
// keeps such writes (they are in the kernel's page cache); a power loss
// (or a kernel crash) may drop them. A replica that lost prepares it
// acknowledged must not vote as if it held them, or a view change could
// complete without an acknowledged write: consensus.Restored.Amnesia and
// VsrState.Amnesiac make its group wait for a primary's log instead.
//
// The node tells the two apart with the boot record, boot.record in the
// data directory: the machine's boot id (vfs.BootID) and whether the node
// stopped cleanly (every prepare WAL synced). At boot:
//
//   - the boot id differs from the record's and the last stop was not
//     clean, or either id is unknown, or the record is missing or damaged:
//     unsynced writes may be gone, so every partition directory gets an
//     amnesia marker (amnesiaMarkerFile, synced) before any group opens;
//   - then the record is replaced by {this boot, not clean}, so a crash
//     while marking leaves the old record and the next boot marks again;
//   - a group that opens with the marker writes VsrState.Amnesiac into its
//     superblock (synced) and only then loses the marker: from there the
//     group's own durable state carries the amnesia until it has caught up.
//
// A clean stop (Run returning nil after every WAL, log and superblock log
// closed without error) rewrites the record as {this boot, clean}. Marking
// too much is safe (an amnesiac only waits for a primary's log, and a rack
// of amnesiacs elects among itself); marking too little is not, hence every
// doubt counts as a power loss.

const (
	bootRecordFile    = "boot.record"
	amnesiaMarkerFile = "amnesiac"
	bootRecordMagic   = "LSBOOT01"
	bootRecordBytes   = len(bootRecordMagic) + vfs.BootIDBytes + 1 + 8 // magic, id, flags, xxh3
	bootRecordClean   = 1                                              // flags bit 0: the node stopped cleanly
)

// bootRecord is the content of boot.record.
type bootRecord struct {
	bootID string // "" when the boot id was unknown
	clean  bool
}

func (r bootRecord) encode() []byte {
	b := make([]byte, bootRecordBytes)
	n := copy(b, bootRecordMagic)
	copy(b[n:n+vfs.BootIDBytes], r.bootID)
	n += vfs.BootIDBytes
	if r.clean {
		b[n] = bootRecordClean
	}
	n++
	binary.LittleEndian.PutUint64(b[n:], xxh3.Hash(b[:n]))
	return b
}

func decodeBootRecord(b []byte) (bootRecord, error) {
	if len(b) != bootRecordBytes {
		return bootRecord{}, fmt.Errorf("%d bytes, want %d", len(b), bootRecordBytes)
	}
	sum := len(b) - 8
	if binary.LittleEndian.Uint64(b[sum:]) != xxh3.Hash(b[:sum]) {
		return bootRecord{}, errors.New("checksum mismatch")
	}
	if string(b[:len(bootRecordMagic)]) != bootRecordMagic {
		return bootRecord{}, fmt.Errorf("unknown magic %q", b[:len(bootRecordMagic)])
	}
	n := len(bootRecordMagic)
	flags := b[n+vfs.BootIDBytes]
	if flags&^bootRecordClean != 0 {
		return bootRecord{}, fmt.Errorf("unknown flags %#x", flags)
	}
	return bootRecord{
		bootID: strings.TrimRight(string(b[n:n+vfs.BootIDBytes]), "\x00"),
		clean:  flags&bootRecordClean != 0,
	}, nil
}

// amnesiaAtBoot decides whether unsynced writes of the last run may be
// lost. prev is the record read (nil: none), damage why it was unreadable.
// The reason is for the log.
func amnesiaAtBoot(prev *bootRecord, damage error, current string) (bool, string) {
	switch {
	case damage != nil:
		return true, "the boot record is unreadable: " + damage.Error()
	case prev == nil:
		return true, "no boot record (a first boot, or data of an older build)"
	case prev.clean:
		return false, "the last stop was clean"
	case current == "" || prev.bootID == "":
		return true, "the boot id is unknown: a process crash cannot be told from a power loss"
	case prev.bootID != current:
		return true, "the machine rebooted since the last stop, which was not clean"
	default:
		return false, "a process restart within the same boot (the page cache kept every write)"
	}
}

// bootGuard is the running node's boot record.
type bootGuard struct {
	fsys    vfs.FS
	dataDir string
	bootID  string
	mu      sync.Mutex // forget may run on several shards at once
}

// startBoot reads the boot record, marks every partition directory under
// partitionsRoot amnesiac when the last run's unsynced writes may be lost,
// then records this boot as not clean (all durably, before any partition
// group opens).
func startBoot(fsys vfs.FS, dataDir, partitionsRoot string, log *slog.Logger) (*bootGuard, error) {
	g := &bootGuard{fsys: fsys, dataDir: dataDir, bootID: vfs.BootID(fsys)}
	path := filepath.Join(dataDir, bootRecordFile)
	var prev *bootRecord
	var damage error
	switch b, err := fsys.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	default:
		r, err := decodeBootRecord(b)
		if err != nil {
			damage = fmt.Errorf("%s: %w", path, err)
		} else {
			prev = &r
		}
	}
	amnesia, reason := amnesiaAtBoot(prev, damage, g.bootID)
	if amnesia {
		dirs, err := partitionDirsUnder(fsys, partitionsRoot)
		if err != nil {
			return nil, err
		}
		for _, dir := range dirs {
			if err := replaceFileDurably(fsys, dir, amnesiaMarkerFile, nil); err != nil {
				return nil, fmt.Errorf("mark partition amnesiac: %w", err)
			}
		}
		if len(dirs) > 0 {
			log.Warn("unsynced writes of the last run may be lost: partition groups rejoin amnesiac (no vote until a primary's log is held again)",
				"reason", reason, "partitions", len(dirs))
		}
	} else {
		log.Info("boot record: no partition group lost unsynced writes", "reason", reason)
	}
	if err := vfs.MkdirAllDurable(fsys, dataDir, 0o755); err != nil {
		return nil, err
	}
	if err := replaceFileDurably(fsys, dataDir, bootRecordFile, bootRecord{bootID: g.bootID}.encode()); err != nil {
		return nil, fmt.Errorf("record this boot: %w", err)
	}
	return g, nil
}

// stoppedCleanly records a clean stop: every prepare WAL, partition log and
// superblock was synced and closed without error.
func (g *bootGuard) stoppedCleanly() error {
	if err := replaceFileDurably(g.fsys, g.dataDir, bootRecordFile, bootRecord{bootID: g.bootID, clean: true}.encode()); err != nil {
		return fmt.Errorf("record the clean stop: %w", err)
	}
	return nil
}

// forget records this boot's id as unknown: the next boot treats every
// partition group as having lost unsynced writes (a failed fsync that
// could not be recorded in the group's directory, partition_fsync_failed.go).
func (g *bootGuard) forget() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := replaceFileDurably(g.fsys, g.dataDir, bootRecordFile, bootRecord{}.encode()); err != nil {
		return fmt.Errorf("mark the boot record unknown: %w", err)
	}
	return nil
}

// partitionDirsUnder lists every partition directory of the layout
// <root>/<stream>/topics/<topic>/partitions/<partition>, leftovers of an
// interrupted removal excluded.
func partitionDirsUnder(fsys vfs.FS, root string) ([]string, error) {
	paths, err := vfs.Glob(fsys, filepath.Join(root, "*", "topics", "*", "partitions", "*"))
	if err != nil {
		return nil, fmt.Errorf("list partition directories under %s: %w", root, err)
	}
	dirs := paths[:0]
	for _, p := range paths {
		if strings.HasSuffix(p, vfs.RemovingSuffix) || strings.HasSuffix(p, ".tmp") {
			continue
		}
		if fi, err := fsys.Stat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	return dirs, nil
}
