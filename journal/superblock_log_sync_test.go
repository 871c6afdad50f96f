package journal

import (
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// TestSuperblockLogCreationIsDurable: the first open creates
// superblocks.log; a batch appended (and fdatasynced) right after must
// survive a power loss. Before the fix the open never fsynced the
// directory, so the file's name, and every synced record with it, could
// vanish (15 of these 40 crashes).
func TestSuperblockLogCreationIsDurable(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		m := vfs.NewMem(seed)
		l, err := OpenSuperblockLog("/groups", sbLogID, 0, nil, WithFS(m))
		must(t, err)
		must(t, l.Append([]SuperblockLogEntry{sbEntry(1, 1, 5)}))
		m.Crash()
		l, err = OpenSuperblockLog("/groups", sbLogID, 0, nil, WithFS(m))
		must(t, err)
		seq, st, ok, err := l.Latest(sbKey(1))
		if err != nil || !ok || seq != 1 || st.View != 5 {
			t.Fatalf("seed %d: after the crash: seq %d ok %v err %v", seed, seq, ok, err)
		}
	}
}

// TestSuperblockLogOpenMakesWhatAFailedSyncLeftDurable: a process's
// fdatasync of the log fails (fsyncgate: the pages may be dropped while
// reads still show them) and it stops; the next process opens the log and
// appends synced records after what it read; then the power goes. The open
// must have made what it read durable, or the next open finds a hole
// followed by valid records and refuses (ErrSuperblockLogDamaged).
func TestSuperblockLogOpenMakesWhatAFailedSyncLeftDurable(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		m := vfs.NewMem(seed)
		m.SetCrashModel(vfs.CrashModel{Keep: 0.3, Torn: 0.3})
		l, err := OpenSuperblockLog("/groups", sbLogID, 0, nil, WithFS(m))
		must(t, err)
		must(t, l.Append([]SuperblockLogEntry{sbEntry(1, 1, 5)}))
		must(t, m.InjectSyncFailure("/groups/"+superblockLogName))
		if err := l.Append([]SuperblockLogEntry{sbEntry(2, 1, 6)}); err == nil {
			t.Fatalf("seed %d: the append whose fdatasync failed succeeded", seed)
		}
		m.ProcessDied()

		l, err = OpenSuperblockLog("/groups", sbLogID, 0, nil, WithFS(m))
		must(t, err)
		must(t, l.Append([]SuperblockLogEntry{sbEntry(3, 1, 7)}))
		m.Crash()

		l, err = OpenSuperblockLog("/groups", sbLogID, 0, nil, WithFS(m))
		if err != nil {
			t.Fatalf("seed %d: open after the power loss: %v", seed, err)
		}
		for key, view := range map[int]uint32{1: 5, 2: 6, 3: 7} {
			if _, st, ok, err := l.Latest(sbKey(key)); err != nil || !ok || st.View != view {
				t.Fatalf("seed %d: group %d after the power loss: %v ok %v err %v", seed, key, st, ok, err)
			}
		}
	}
}

// TestSuperblockLogCutsALastBatchTornWithHoles: a batch's fdatasync fails
// after writing back some of its sectors, not a prefix (pages reach the
// disk in any order), and the power goes before a restart could write them
// again: the file holds a hole before valid records of that same batch.
// Nothing of it was acknowledged, so the open cuts it as a torn tail and
// keeps every earlier batch (metadata simulator seed 33332, M18: the node
// refused to boot, calling the hole damage to synced state).
func TestSuperblockLogCutsALastBatchTornWithHoles(t *testing.T) {
	holes := 0
	for seed := uint64(1); seed <= 40; seed++ {
		m := vfs.NewMem(seed)
		m.SetCrashModel(vfs.CrashModel{Keep: 0, Torn: 1})
		l, err := OpenSuperblockLog("/groups", sbLogID, 0, nil, WithFS(m))
		must(t, err)
		var first, second []SuperblockLogEntry
		for i := range 8 {
			first = append(first, sbEntry(i, 1, 5))
			second = append(second, sbEntry(i, 2, 6))
		}
		must(t, l.Append(first))
		synced := l.Size()
		must(t, m.InjectSyncFailure("/groups/"+superblockLogName))
		if err := l.Append(second); err == nil {
			t.Fatalf("seed %d: the append whose fdatasync failed succeeded", seed)
		}
		m.Crash()
		if b, err := m.ReadFile("/groups/" + superblockLogName); err == nil && int64(len(b)) > synced && b[synced] == 0 {
			holes++ // the batch's first record lost, some later sector kept
		}

		l, err = OpenSuperblockLog("/groups", sbLogID, 0, nil, WithFS(m))
		if err != nil {
			t.Fatalf("seed %d: open after the failed sync and the power loss: %v", seed, err)
		}
		for i := range 8 {
			if _, st, ok, err := l.Latest(sbKey(i)); err != nil || !ok || (st.View != 5 && st.View != 6) {
				t.Fatalf("seed %d: group %d: %v ok %v err %v", seed, i, st, ok, err)
			}
		}
		must(t, l.Close())
	}
	if holes == 0 {
		t.Fatal("no seed left a hole before the batch's later records: the test proves nothing")
	}
}
