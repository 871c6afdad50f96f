package partitions

import (
	"testing"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// TestPollPastARangeSetApartAtTheTail: a synced last batch damaged in place (framing intact) is set
// apart at open. A poll from the offset after it must not answer that range again: it returned the
// same CorruptionError (offsets below the one asked for) forever, also once new batches were
// appended above a reservation hole, so a consumer that skipped the range could never move on. Found
// by TestPowerLossPartitionLog (seed 15).
func TestPollPastARangeSetApartAtTheTail(t *testing.T) {
	m := vfs.NewMem(1)
	memPartitionDir(t, m, "/p")
	if err := writeBootID(m, 1); err != nil {
		t.Fatal(err)
	}
	opts := Options{FS: m, ServeAroundDamage: true, ReserveOffsets: true}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l := openLog(t, "/p", opts)
	var last BatchLocation
	for i := 0; i < 3; i++ {
		loc, err := l.Append(makeBatch(t, l.NextOffset(), 2, 200, 1000+uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		last = loc
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	if err := m.FlipByte(segmentLogPath("/p", 0), int64(last.Position+last.Length-1)); err != nil {
		t.Fatal(err)
	}
	if err := writeBootID(m, 2); err != nil {
		t.Fatal(err)
	}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l = openLog(t, "/p", opts)
	defer l.Close()
	if r := l.DamagedRanges(); len(r) != 1 || r[0].FirstOffset != 4 || r[0].EndOffset != 6 {
		t.Fatalf("damaged ranges %+v, want offsets 4..5", r)
	}
	at := func(offset uint64) (PollResult, error) {
		return l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: offset}, Count: 10})
	}
	if _, err := at(4); err == nil {
		t.Fatal("a poll of the damaged range was served")
	}
	if res, err := at(6); err != nil || res.MessagesCount != 0 {
		t.Fatalf("poll after the range, nothing appended: %d messages, %v", res.MessagesCount, err)
	}
	next := l.NextOffset() // above the reservation hole (the machine rebooted)
	if _, err := l.Append(makeBatch(t, next, 1, 50, 2000)); err != nil {
		t.Fatal(err)
	}
	if res, err := at(6); err != nil || res.MessagesCount != 1 || res.FirstOffset != next {
		t.Fatalf("poll after the range: %d messages from %d, %v; want the batch at %d", res.MessagesCount,
			res.FirstOffset, err, next)
	}
}
