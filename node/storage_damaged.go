package node

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/vfs"
)

// A cluster replica whose metadata WAL is damaged (journal.ErrWALCorrupt:
// a record torn in pieces by a power loss, which a disk may write in any
// sector order, or bytes rotted on disk) no longer refuses to boot until
// an operator wipes it. It does what a partition group does with a
// damaged prepare WAL (partition_wal.go): the WAL is set aside for
// inspection, the storage-lost marker is written first (durably), and the
// group restarts from its checkpoint with StorageLost: no vote until the
// view's primary answers, then it repairs or transfers what it lacks (the
// acknowledged prepares it may have lost are held by a quorum). Found by
// the metadata simulator (node/metasim_*_test.go). A single node has no
// peer to refill from and still refuses, naming the remedy.

// metaWALDamagedPrefix names a set-aside WAL's directory in metadata/.
const metaWALDamagedPrefix = "journal.damaged-"

// metaDamagedKeep: set-aside damaged WALs kept for inspection.
const metaDamagedKeep = 2

// openMetaStorageSettingAside is openMetaStorage; on a cluster replica
// whose WAL is damaged it sets the WAL aside, marks the storage lost and
// opens again. setAside reports that it did.
func openMetaStorageSettingAside(fsys vfs.FS, dataDir string, id journal.Identity, clustered bool, nowMicros uint64,
	log *slog.Logger) (st *metaStorage, rec recovered, setAside bool, err error) {
	dir := filepath.Join(dataDir, "metadata")
	st, rec, err = openMetaStorage(fsys, dir, id)
	if err == nil || !clustered {
		return st, rec, false, err
	}
	if errors.Is(err, journal.ErrSnapshotDamaged) || errors.Is(err, journal.ErrSuperblockUnreadable) {
		// Without its checkpoint or its superblock (the views it promised)
		// the storage is as good as lost: the whole directory goes aside,
		// and the boot settles with the peers as on a wiped disk
		// (storage_lost.go).
		aside := fmt.Sprintf("%s.damaged-%d", dir, nowMicros)
		log.Error("metadata storage damaged: set aside; the replica settles with its peers as on a replaced disk "+
			"(rejoining without a vote, then state transfer)", "set_aside", aside, "damage", err)
		if rerr := fsys.Rename(dir, aside); rerr != nil {
			return nil, recovered{}, false, fmt.Errorf("%w; setting the metadata directory aside failed: %w", err, rerr)
		}
		if serr := fsys.SyncDir(filepath.Dir(dir)); serr != nil {
			return nil, recovered{}, false, fmt.Errorf("%w; setting the metadata directory aside failed: %w", err, serr)
		}
		pruneSetAside(fsys, dir+".damaged-*")
		st, rec, err = openMetaStorage(fsys, dir, id)
		return st, rec, err == nil, err
	}
	if !errors.Is(err, journal.ErrWALCorrupt) {
		return st, rec, false, err
	}
	aside := filepath.Join(dir, fmt.Sprintf("%s%d", metaWALDamagedPrefix, nowMicros))
	log.Error("metadata WAL damaged: set aside; the replica rejoins without a vote until the view's primary answers, "+
		"then repairs or transfers what it lacks", "set_aside", aside, "damage", err)
	if merr := writeMetadataSettle(fsys, dataDir, metadataLost); merr != nil {
		return nil, recovered{}, false, fmt.Errorf("%w; marking the storage lost to set it aside failed: %w", err, merr)
	}
	if serr := setAsideMetaWAL(fsys, dir, aside); serr != nil {
		return nil, recovered{}, false, fmt.Errorf("%w; setting it aside failed: %w", err, serr)
	}
	st, rec, err = openMetaStorage(fsys, dir, id)
	return st, rec, err == nil, err
}

// setAsideMetaWAL moves every WAL segment of dir into aside (created),
// durably, and prunes older set-aside WALs. A crash midway leaves the
// marker written and part of the WAL in place: the next boot finds it
// damaged (a gap) and moves the rest.
func setAsideMetaWAL(fsys vfs.FS, dir, aside string) error {
	segs, err := vfs.Glob(fsys, filepath.Join(dir, "journal*.wal"))
	if err != nil {
		return err
	}
	if err := vfs.MkdirAllDurable(fsys, aside, 0o755); err != nil {
		return err
	}
	for _, s := range segs {
		if err := fsys.Rename(s, filepath.Join(aside, filepath.Base(s))); err != nil {
			return err
		}
	}
	if err := fsys.SyncDir(aside); err != nil {
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return err
	}
	pruneSetAside(fsys, filepath.Join(dir, metaWALDamagedPrefix+"*"))
	return nil
}

// pruneSetAside keeps the newest metaDamagedKeep set-aside copies matching
// pattern.
func pruneSetAside(fsys vfs.FS, pattern string) {
	older, _ := vfs.Glob(fsys, pattern)
	for len(older) > metaDamagedKeep { // Glob sorts: oldest first (microsecond stamps of one width)
		_ = fsys.RemoveAll(older[0])
		older = older[1:]
	}
}
