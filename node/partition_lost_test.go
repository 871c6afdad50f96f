package node

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
)

// TestStorageLostOutlivesARestart: a replica restarted with StorageLost
// keeps it at the next restart until it has rejoined (whole-node simulator:
// the second restart, with the damaged WAL set aside, voted with a log
// ending at its checkpoint and a view change dropped committed ops).
func TestStorageLostOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	defaults, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := newPartitionPlane(log, dir, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 32},
		topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
	e := &partitionEntry{dir: dir, shard: p.shards[0]}
	if err := p.noteStorageLost(e, &consensus.Restored{StorageLost: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, storageLostMarkerFile)); err != nil {
		t.Fatalf("no marker after a StorageLost restart: %v", err)
	}
	again := consensus.Restored{}
	e2 := &partitionEntry{dir: dir, shard: p.shards[0]}
	if err := p.noteStorageLost(e2, &again); err != nil {
		t.Fatal(err)
	}
	if !again.StorageLost || !e2.storageLost {
		t.Fatal("the next restart, not rejoined yet, did not keep StorageLost")
	}
	// Rejoined: Normal in a view its durable superblock records as log_view.
	cfg := consensus.DefaultConfig(0, 1)
	g, err := consensus.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e2.group = g
	p.shards[0].rejoinedAfterLoss(e2)
	if _, err := os.Stat(filepath.Join(dir, storageLostMarkerFile)); !os.IsNotExist(err) || e2.storageLost {
		t.Fatalf("the marker outlived the rejoin: %v (storageLost %v)", err, e2.storageLost)
	}
}

// TestDamagedWALIsSetAsideOnlyOnceTheLossIsRecorded: the restart that
// finds its prepare WAL damaged is cut at every file operation (a SIGKILL,
// or the I/O error of whole-node simulator finding 16, seed 21897). After
// each cut, the next restart must still see the loss: either the damaged
// WAL is still in place or storage.lost is recorded. Before the fix the
// WAL was set aside first, and a cut before the marker left an empty WAL
// that the next restart took for an intact one.
func TestDamagedWALIsSetAsideOnlyOnceTheLossIsRecorded(t *testing.T) {
	defaults, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const dir = "/p"
	setUp := func() (*vfs.Mem, *partitionPlane) {
		m := vfs.NewMem(7)
		if err := m.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := newPartitionPlane(log, dir, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 32},
			topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
		p.fsys = m
		wal, _, err := journal.OpenPrepareLog(partitionWALPath(dir), 0, journal.WithFS(m))
		if err != nil {
			t.Fatal(err)
		}
		var entries []consensus.Prepare
		for op := uint64(1); op <= 4; op++ {
			entries = append(entries, consensus.Prepare{Header: consensus.PrepareHeader{View: 1, Op: op, Commit: op - 1,
				Timestamp: op, Checksum: op * 31, Operation: 130}, Body: bytes.Repeat([]byte{byte(op)}, 200)})
		}
		if err := wal.Write(0, entries); err != nil {
			t.Fatal(err)
		}
		if err := wal.Sync(); err != nil {
			t.Fatal(err)
		}
		wal.Close()
		files, err := vfs.Glob(m, filepath.Join(partitionWALPath(dir), "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("WAL files: %v, %v", files, err)
		}
		if err := m.FlipByte(files[0], 100); err != nil { // inside op 1's record, with records after it
			t.Fatal(err)
		}
		return m, p
	}
	lossSeen := func(m *vfs.Mem, p *partitionPlane) bool {
		if _, err := m.Stat(filepath.Join(dir, storageLostMarkerFile)); err == nil {
			return true
		}
		wal, _, err := journal.OpenPrepareLog(partitionWALPath(dir), 0, journal.WithFS(m))
		if wal != nil {
			wal.Close()
		}
		return errors.Is(err, journal.ErrPrepareLogDamaged)
	}
	cuts := 0
	for n := 0; ; n++ {
		m, p := setUp()
		e := &partitionEntry{dir: dir, shard: p.shards[0]}
		m.KillAfter(n)
		_, damaged, err := p.openPartitionWAL(e, 0, false)
		m.ProcessDied()
		if err == nil {
			if !damaged {
				t.Fatal("the damaged WAL was not reported damaged")
			}
			if !lossSeen(m, p) {
				t.Fatal("set aside without storage.lost")
			}
			break
		}
		cuts++
		if !lossSeen(m, p) {
			t.Fatalf("cut after %d file operations (%v): the next restart sees neither the damage nor storage.lost", n, err)
		}
	}
	if cuts < 3 {
		t.Fatalf("only %d cuts inside the set-aside: the test no longer reaches it", cuts)
	}
}

// TestAmnesiacRestartTakesBackRecordsPastItsCheckpoint (whole-node
// simulator finding 26, seed 29146): a replica that lost its page cache
// may hold, in a segment it synced, records of ops whose prepares no WAL
// kept; a rack election drops those ops and the group appends other
// records at their offsets. So an amnesiac restart cuts its log back to
// its checkpoint's frontier and applies the ops above it again. Since
// segment references (partition_stage.go) an intact restart from the WAL
// does the same: the log past the checkpoint may hold batches staged for
// ops a view change drops.
func TestAmnesiacRestartTakesBackRecordsPastItsCheckpoint(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	key := partitionKey{1, 1, 0}
	for _, tc := range []struct {
		name     string
		amnesiac bool
		frontier uint64 // 6: two batches of three below the checkpoint, one above
		wantNext uint64
	}{
		{"amnesiac", true, 6, 6},
		{"intact", false, 6, 6},
		// A checkpoint where the log starts (taken after a purge, or before
		// any send): every record is past it. Kept, the records of ops an
		// election dropped outlived the group's ops (metadata simulator
		// finding M7).
		{"amnesiac, checkpoint at the log's start", true, 0, 0},
		{"intact, checkpoint at the log's start", false, 0, 0},
	} {
		frontier := tc.frontier
		t.Run(tc.name, func(t *testing.T) {
			defaults, err := config.Defaults()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			plane := func() *partitionPlane {
				p := newPartitionPlane(log, dir, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8},
					topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
				close(p.shards[0].stopped) // no loop: controls run inline
				return p
			}
			p := plane()
			e := p.open(key, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 7}, live: true})
			if e.group == nil {
				t.Fatalf("group did not start: %v", e.quarantine)
			}
			for i := range 3 {
				appendTestBatch(t, e.log.(*partitions.Log), 3, uint64(1000+i))
			}
			if err := e.superblock.Write(journal.SuperblockState{Identity: p.identity, OffsetFrontier: frontier,
				VsrState: consensus.VsrState{View: 1, LogView: 1, CommitMax: 3, CheckpointOp: 2, Amnesiac: tc.amnesiac}}); err != nil {
				t.Fatal(err)
			}
			_ = e.closeWAL()
			if err := e.log.Close(); err != nil {
				t.Fatal(err)
			}

			e2 := plane().open(key, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 7}})
			if e2.group == nil {
				t.Fatalf("group did not restart: %v", e2.quarantine)
			}
			t.Cleanup(func() { _ = e2.closeWAL(); _ = e2.log.Close() })
			if got := e2.log.NextOffset(); got != tc.wantNext {
				t.Fatalf("log ends at %d after the restart, want %d", got, tc.wantNext)
			}
			if e2.appliedNext != frontier {
				t.Fatalf("applied up to %d, want the checkpoint's frontier %d", e2.appliedNext, frontier)
			}
		})
	}
}
