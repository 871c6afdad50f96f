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
