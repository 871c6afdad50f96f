package partitions

import (
	"encoding/binary"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// ackBeforeSyncOpts is a single node's replicated topic: served around
// damage, offsets reserved, acknowledged from the page cache.
var ackBeforeSyncOpts = Options{ServeAroundDamage: true, ReserveOffsets: true, AckBeforeSync: true}

// powerLossAfterUnsyncedAppends: 10 batches closed cleanly (synced, the
// frontier recorded), 30 more appended unsynced, then the power goes and
// the machine reboots. It returns the file system to reopen.
func powerLossAfterUnsyncedAppends(t *testing.T, seed uint64) *vfs.Mem {
	t.Helper()
	m := vfs.NewMem(seed)
	if err := writeBootID(m, 1); err != nil {
		t.Fatal(err)
	}
	memPartitionDir(t, m, "/p")
	l := memLog(t, m, ackBeforeSyncOpts)
	appendN(t, l, 10)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = memLog(t, m, ackBeforeSyncOpts)
	appendN(t, l, 30)
	m.Crash() // l's files are stale now: it is not closed
	if err := writeBootID(m, 2); err != nil {
		t.Fatal(err)
	}
	return m
}

// After a reboot, an AckBeforeSync log cuts whatever the power loss tore
// in its unsynced tail (holes included) instead of refusing it as damage,
// keeps everything synced, and hands out no offset twice. Without
// AckBeforeSync the same disks show refused ranges, so the test tells the
// two behaviours apart.
func TestAckBeforeSyncCutsATornUnsyncedTailAfterAReboot(t *testing.T) {
	refusedWithout := 0
	for seed := uint64(1); seed <= 60; seed++ {
		m := powerLossAfterUnsyncedAppends(t, seed)
		plain := memLog(t, m, Options{ServeAroundDamage: true, ReserveOffsets: true})
		refusedWithout += len(plain.DamagedRanges())
		plain.Close()

		m = powerLossAfterUnsyncedAppends(t, seed)
		l := memLog(t, m, ackBeforeSyncOpts)
		if r := l.DamagedRanges(); len(r) != 0 {
			t.Fatalf("seed %d: the torn unsynced tail was refused as damage: %+v", seed, r)
		}
		if next := l.NextOffset(); next < 80 {
			t.Fatalf("seed %d: next offset %d after a reboot, 80 were handed out", seed, next)
		}
		res, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: 0}, Count: 100})
		if err != nil || res.MessagesCount < 20 || res.FirstOffset != 0 {
			t.Fatalf("seed %d: the synced 20 messages: poll gave %d from %d, %v", seed, res.MessagesCount, res.FirstOffset, err)
		}
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 1, 10, 5000)); err != nil {
			t.Fatalf("seed %d: append after the reboot: %v", seed, err)
		}
		l.Close()
	}
	if refusedWithout == 0 {
		t.Fatal("no seed tore the unsynced tail into a refused range without AckBeforeSync: the test proves nothing")
	}
}

// Damage below the synced frontier is corruption even after a reboot: it
// stays refused, never cut as a torn tail.
func TestAckBeforeSyncStillRefusesDamageToSyncedBatches(t *testing.T) {
	m := vfs.NewMem(7)
	if err := writeBootID(m, 1); err != nil {
		t.Fatal(err)
	}
	memPartitionDir(t, m, "/p")
	l := memLog(t, m, ackBeforeSyncOpts)
	appendN(t, l, 10)
	if err := l.Close(); err != nil { // synced, frontier 20
		t.Fatal(err)
	}
	if err := m.FlipByte(segmentLogPath("/p", 0), 700); err != nil { // inside the third batch
		t.Fatal(err)
	}
	m.Crash()
	if err := writeBootID(m, 2); err != nil {
		t.Fatal(err)
	}
	l = memLog(t, m, ackBeforeSyncOpts)
	defer l.Close()
	if len(l.DamagedRanges()) == 0 {
		t.Fatal("a damaged synced batch was cut as an unsynced tail")
	}
	if next := l.NextOffset(); next != 20 {
		t.Fatalf("next offset %d, want 20 (nothing cut)", next)
	}
}

// A reservation file written before the synced frontier existed still
// reads, with the frontier unknown (0).
func TestReservationWithoutFrontierStillReads(t *testing.T) {
	v2 := encodeReservationFrontier(123, "00000000-0000-0000-0000-000000000001", 77)
	v1 := append([]byte(nil), v2[:8+bootIDBytes]...)
	v1 = binary.LittleEndian.AppendUint64(v1, xxh3.Hash(v1))
	for _, c := range []struct {
		data   []byte
		synced uint64
	}{{v2, 77}, {v1, 0}} {
		reserved, boot, synced, ok := decodeReservationFrontier(c.data)
		if !ok || reserved != 123 || boot != "00000000-0000-0000-0000-000000000001" || synced != c.synced {
			t.Fatalf("%d-byte file: %d %q %d %v", len(c.data), reserved, boot, synced, ok)
		}
	}
	if _, _, _, ok := decodeReservationFrontier(v2[:len(v2)-1]); ok {
		t.Fatal("a short file decoded")
	}
}
