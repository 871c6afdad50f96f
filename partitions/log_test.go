package partitions

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// makeBatch builds a stamped batch of count messages starting at baseOffset. Each payload carries
// its absolute offset (8 bytes) followed by padding to payloadBytes.
func makeBatch(t testing.TB, baseOffset uint64, count int, payloadBytes int, appendTime uint64) []byte {
	t.Helper()
	msgs := make([]wire.BatchMessageInput, count)
	for i := range msgs {
		p := make([]byte, max(payloadBytes, 8))
		binary.LittleEndian.PutUint64(p, baseOffset+uint64(i))
		msgs[i] = wire.BatchMessageInput{OriginTimestamp: appendTime - 5, Payload: p}
		msgs[i].ID[0] = byte(i + 1)
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	if err := wire.StampBatch(b, 0, baseOffset, appendTime); err != nil {
		t.Fatalf("stamp batch: %v", err)
	}
	return b
}

func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// fillLog appends batches of perBatch messages (batch i has append time 1000 + 10·i) until total
// messages are stored.
func fillLog(t testing.TB, l *Log, batches, perBatch, payloadBytes int) {
	t.Helper()
	for i := 0; i < batches; i++ {
		b := makeBatch(t, l.NextOffset(), perBatch, payloadBytes, 1000+10*uint64(i))
		if _, err := l.Append(b); err != nil {
			t.Fatalf("append batch %d: %v", i, err)
		}
	}
}

// decodePoll checks the records the way the strictest client does and returns the polled offsets.
func decodePoll(t *testing.T, res PollResult) []uint64 {
	t.Helper()
	reply := wire.AppendPollMessagesReply(nil, 0, res.CurrentOffset, res.MessagesCount, res.Records)
	r, err := wire.DecodePollMessagesReply(reply)
	if err != nil {
		t.Fatalf("poll records fail the client checks: %v", err)
	}
	offsets := make([]uint64, len(r.Messages))
	for i, m := range r.Messages {
		if got := binary.LittleEndian.Uint64(m.Payload); got != m.Offset {
			t.Fatalf("message at offset %d carries payload of offset %d", m.Offset, got)
		}
		offsets[i] = m.Offset
	}
	return offsets
}

func expectOffsets(t *testing.T, name string, res PollResult, from uint64, n int) {
	t.Helper()
	got := decodePoll(t, res)
	if len(got) != n || int(res.MessagesCount) != n {
		t.Fatalf("%s: %d messages (result says %d), want %d: %v", name, len(got), res.MessagesCount, n, got)
	}
	for i, off := range got {
		if off != from+uint64(i) {
			t.Fatalf("%s: message %d has offset %d, want %d", name, i, off, from+uint64(i))
		}
	}
	if n > 0 && (res.FirstOffset != from || res.LastOffset != from+uint64(n-1) || res.NextOffset != from+uint64(n)) {
		t.Fatalf("%s: first/last/next %d/%d/%d", name, res.FirstOffset, res.LastOffset, res.NextOffset)
	}
}

func poll(t *testing.T, l *Log, kind wire.PollingKind, value uint64, count uint32) PollResult {
	t.Helper()
	res, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: kind, Value: value}, Count: count,
		ConsumerKind: wire.ConsumerKindSingle, ConsumerID: 7})
	if err != nil {
		t.Fatalf("poll kind %d value %d count %d: %v", kind, value, count, err)
	}
	return res
}

func TestPollEveryStrategyWithCountsAndSlicing(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{IndexIntervalBytes: 1})
	defer l.Close()
	if res := poll(t, l, wire.PollFirst, 0, 10); res.MessagesCount != 0 || len(res.Records) != 0 {
		t.Fatalf("poll of an empty log returned %d messages", res.MessagesCount)
	}
	fillLog(t, l, 10, 5, 16) // offsets 0..49, batch i at append time 1000+10i
	st := l.Stats()
	if st.MessagesCount != 50 || st.CurrentOffset != 49 || st.NextOffset != 50 || st.SegmentsCount != 1 {
		t.Fatalf("stats %+v", st)
	}
	expectOffsets(t, "offset 7 count 10", poll(t, l, wire.PollOffset, 7, 10), 7, 10)
	expectOffsets(t, "offset 7 count 1", poll(t, l, wire.PollOffset, 7, 1), 7, 1)
	expectOffsets(t, "offset 45 count 100", poll(t, l, wire.PollOffset, 45, 100), 45, 5)
	expectOffsets(t, "first count 3", poll(t, l, wire.PollFirst, 0, 3), 0, 3)
	expectOffsets(t, "last count 4", poll(t, l, wire.PollLast, 0, 4), 46, 4)
	expectOffsets(t, "last count 100", poll(t, l, wire.PollLast, 0, 100), 0, 50)
	expectOffsets(t, "next without stored offset", poll(t, l, wire.PollNext, 0, 2), 0, 2)
	if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, 7, 20); err != nil {
		t.Fatal(err)
	}
	expectOffsets(t, "next after stored 20", poll(t, l, wire.PollNext, 0, 6), 21, 6)
	expectOffsets(t, "timestamp 1035", poll(t, l, wire.PollTimestamp, 1035, 7), 20, 7)
	expectOffsets(t, "timestamp exact 1040", poll(t, l, wire.PollTimestamp, 1040, 1), 20, 1)
	expectOffsets(t, "timestamp 0", poll(t, l, wire.PollTimestamp, 0, 3), 0, 3)
	for name, res := range map[string]PollResult{
		"offset past the end":    poll(t, l, wire.PollOffset, 50, 10),
		"timestamp past the end": poll(t, l, wire.PollTimestamp, 5000, 10),
		"count zero":             poll(t, l, wire.PollOffset, 0, 0),
	} {
		if res.MessagesCount != 0 || len(res.Records) != 0 || res.CurrentOffset != 49 {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	if _, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: 9}, Count: 1}); !errors.Is(err, wire.ErrInvalidCommand) {
		t.Fatalf("bad polling kind: %v", err)
	}
}

func TestPollByteBudgetSlicesAndAlwaysReturnsOneMessage(t *testing.T) {
	// A budget smaller than one 1 KiB-payload message still yields one message per poll.
	l := openLog(t, t.TempDir(), Options{PollBytesMax: 2500})
	defer l.Close()
	fillLog(t, l, 3, 4, 1000) // three batches of four ~1 KiB messages
	next := uint64(0)
	for polls := 0; next < 12; polls++ {
		if polls > 12 {
			t.Fatal("polling does not make progress")
		}
		res := poll(t, l, wire.PollOffset, next, 100)
		if res.MessagesCount == 0 || uint64(len(res.Records)) > 2500 {
			t.Fatalf("poll at %d: %d messages in %d bytes", next, res.MessagesCount, len(res.Records))
		}
		expectOffsets(t, "budgeted poll", res, next, int(res.MessagesCount))
		next = res.NextOffset
	}
	tiny := openLog(t, t.TempDir(), Options{PollBytesMax: 400})
	defer tiny.Close()
	fillLog(t, tiny, 1, 2, 1000)
	expectOffsets(t, "budget below one message", poll(t, tiny, wire.PollFirst, 0, 2), 0, 1)
}

func TestAppendRejectsWrongOffsetAndBrokenSeal(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	if _, err := l.Append(makeBatch(t, 5, 1, 8, 1)); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("append at the wrong offset: %v", err)
	}
	b := makeBatch(t, 0, 2, 8, 1)
	b[40] ^= 1
	if _, err := l.Append(b); !errors.Is(err, wire.ErrInvalidBatchChecksum) {
		t.Fatalf("append with a broken seal: %v", err)
	}
	loc, err := l.Append(makeBatch(t, 0, 2, 8, 1))
	if err != nil || loc.Position != 0 || loc.SegmentStartOffset != 0 {
		t.Fatalf("append: %+v %v", loc, err)
	}
	loc, err = l.Append(makeBatch(t, 2, 1, 8, 1))
	if err != nil || loc.Position == 0 || loc.Length == 0 {
		t.Fatalf("second append: %+v %v", loc, err)
	}
}

func TestRolloverBySegmentSize(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	fillLog(t, l, 12, 2, 700) // ~1.8 KiB batches: a segment rolls every third batch
	st := l.Stats()
	if st.SegmentsCount < 4 || st.MessagesCount != 24 {
		t.Fatalf("stats after rollover %+v", st)
	}
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.sizeBytes < 4096 || s.indexFile != nil {
			t.Fatalf("sealed segment %d: %d bytes, index open %v", s.startOffset, s.sizeBytes, s.indexFile != nil)
		}
		if _, err := os.Stat(filepath.Join(dir, segmentBaseName(s.startOffset)+".log")); err != nil {
			t.Fatalf("segment file: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000006.log")); err != nil {
		t.Fatalf("second segment is not named by its start offset: %v", err)
	}
	expectOffsets(t, "poll across segments", poll(t, l, wire.PollOffset, 3, 20), 3, 20)
	expectOffsets(t, "timestamp across segments", poll(t, l, wire.PollTimestamp, 1075, 30), 16, 8)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	again := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	defer again.Close()
	if got := again.Stats(); got != st {
		t.Fatalf("stats after reopen %+v, before %+v", got, st)
	}
}

func TestRetentionByExpiryAndSize(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096})
	defer l.Close()
	fillLog(t, l, 12, 2, 700) // batch i appended at 1000 + 10i
	before := l.Stats()
	// Nothing is old enough yet: the first segment's newest batch is at 1020.
	res, err := l.ApplyRetention(1100, 100, 0)
	if err != nil || res.SegmentsDeleted != 0 {
		t.Fatalf("early retention: %+v %v", res, err)
	}
	res, err = l.ApplyRetention(1120, 100, 0) // batches up to 1020 are expired
	if err != nil || res.SegmentsDeleted != 1 || res.MessagesDeleted != 6 {
		t.Fatalf("expiry retention: %+v %v", res, err)
	}
	st := l.Stats()
	if st.FirstOffset != 6 || st.NextOffset != before.NextOffset || st.MessagesCount != 18 {
		t.Fatalf("stats after expiry %+v", st)
	}
	expectOffsets(t, "first after expiry", poll(t, l, wire.PollFirst, 0, 2), 6, 2)
	expectOffsets(t, "offset below retention", poll(t, l, wire.PollOffset, 0, 2), 6, 2)
	// Never-expire sentinel and a huge clock leave everything alone.
	if res, err := l.ApplyRetention(1<<62, ^uint64(0), 0); err != nil || res.SegmentsDeleted != 0 {
		t.Fatalf("never-expire: %+v %v", res, err)
	}
	res, err = l.ApplyRetention(0, 0, 6000)
	if err != nil || res.SegmentsDeleted == 0 {
		t.Fatalf("size retention: %+v %v", res, err)
	}
	st = l.Stats()
	if st.SizeBytes > 6000 && st.SegmentsCount > 1 {
		t.Fatalf("size retention left %d bytes in %d segments", st.SizeBytes, st.SegmentsCount)
	}
	if st.SegmentsCount < 1 || st.NextOffset != before.NextOffset {
		t.Fatalf("size retention removed the active segment or moved offsets: %+v", st)
	}
}

func TestDeleteSegmentsAndPurgeAndDelete(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	fillLog(t, l, 6, 2, 700) // two full segments of six messages and an empty active one
	res, err := l.DeleteSegments(1)
	if err != nil || res.SegmentsDeleted != 1 || l.Stats().FirstOffset != 6 {
		t.Fatalf("delete one segment: %+v %v %+v", res, err, l.Stats())
	}
	fillLog(t, l, 1, 1, 8) // offset 12 in the active segment
	res, err = l.DeleteSegments(10)
	if err != nil || l.Stats().MessagesCount != 0 || l.NextOffset() != 13 {
		t.Fatalf("delete all segments: %+v %v %+v", res, err, l.Stats())
	}
	fillLog(t, l, 1, 1, 8)
	expectOffsets(t, "after deleting every segment", poll(t, l, wire.PollFirst, 0, 5), 13, 1)

	if err := l.StoreConsumerOffset(wire.ConsumerKindGroup, 3, 13); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Purge(); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if st := l.Stats(); st.MessagesCount != 0 || st.NextOffset != 0 || st.SegmentsCount != 1 {
		t.Fatalf("stats after purge %+v", st)
	}
	if _, ok := l.ConsumerOffset(wire.ConsumerKindGroup, 3); ok {
		t.Fatal("purge kept a consumer offset")
	}
	fillLog(t, l, 1, 3, 8)
	expectOffsets(t, "after purge", poll(t, l, wire.PollFirst, 0, 5), 0, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{SegmentSizeBytes: 4096})
	if l.NextOffset() != 3 {
		t.Fatalf("next offset after purge and reopen: %d", l.NextOffset())
	}
	if err := l.Delete(); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("partition directory survives Delete: %v", err)
	}
	if _, err := l.Append(makeBatch(t, 3, 1, 8, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after delete: %v", err)
	}
}

func TestConsumerOffsetsPersistAndQuarantineCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SyncOffsets: true})
	for id, off := range map[uint32]uint64{1: 10, 2: 20} {
		if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, id, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.StoreConsumerOffset(wire.ConsumerKindGroup, 1, 99); err != nil {
		t.Fatal(err)
	}
	if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, 1, 11); err != nil { // overwrite
		t.Fatal(err)
	}
	if err := l.DeleteConsumerOffset(wire.ConsumerKindSingle, 2); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteConsumerOffset(wire.ConsumerKindSingle, 2); !errors.Is(err, wire.ErrConsumerOffsetNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := l.StoreConsumerOffset(9, 1, 1); err == nil {
		t.Fatal("stored an offset for consumer kind 9")
	}
	l.Close()
	raw, err := os.ReadFile(filepath.Join(dir, "offsets", "consumers", "1"))
	if err != nil || len(raw) != 16 || binary.LittleEndian.Uint64(raw) != 11 {
		t.Fatalf("offset file bytes %x, %v", raw, err)
	}
	// A corrupt file is moved aside and ignored; the others load.
	if err := os.WriteFile(filepath.Join(dir, "offsets", "consumers", "5"), []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{})
	defer l.Close()
	if off, ok := l.ConsumerOffset(wire.ConsumerKindSingle, 1); !ok || off != 11 {
		t.Fatalf("consumer 1 offset %d %v", off, ok)
	}
	if off, ok := l.ConsumerOffset(wire.ConsumerKindGroup, 1); !ok || off != 99 {
		t.Fatalf("group 1 offset %d %v", off, ok)
	}
	if _, ok := l.ConsumerOffset(wire.ConsumerKindSingle, 2); ok {
		t.Fatal("deleted offset came back")
	}
	if _, ok := l.ConsumerOffset(wire.ConsumerKindSingle, 5); ok {
		t.Fatal("corrupt offset file was loaded")
	}
	if _, err := os.Stat(filepath.Join(dir, "offsets", "consumers", "5.corrupt")); err != nil {
		t.Fatalf("corrupt offset file not quarantined: %v", err)
	}
}

func TestRecordsAreByteIdenticalToAppendedBatches(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	var all []byte
	for i := 0; i < 4; i++ {
		b := makeBatch(t, l.NextOffset(), 3, 20, uint64(i))
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	res := poll(t, l, wire.PollFirst, 0, 12)
	if !bytes.Equal(res.Records, all) {
		t.Fatal("a whole-log poll does not return the appended bytes unchanged")
	}
	prefix := make([]byte, wire.PollMessagesReplyPrefixSize)
	out, err := l.PollInto(prefix, PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 12})
	if err != nil || !bytes.Equal(out.Records, all) || len(out.Appended) != len(prefix)+len(all) {
		t.Fatalf("PollInto: %v", err)
	}
	wire.PutPollMessagesReplyPrefix(out.Appended, 0, out.CurrentOffset, out.MessagesCount)
	if r, err := wire.DecodePollMessagesReply(out.Appended); err != nil || len(r.Messages) != 12 {
		t.Fatalf("reply built in place: %v", err)
	}
}

func TestConcurrentPollsDuringAppendsAndRetention(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096})
	defer l.Close()
	const batches = 150
	done := make(chan struct{})
	errs := make(chan error, 4)
	for w := 0; w < 3; w++ {
		go func(kind wire.PollingKind) {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				res, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: kind}, Count: 50})
				if err != nil {
					errs <- err
					return
				}
				reply := wire.AppendPollMessagesReply(nil, 0, res.CurrentOffset, res.MessagesCount, res.Records)
				if _, err := wire.DecodePollMessagesReply(reply); err != nil {
					errs <- err
					return
				}
			}
		}([]wire.PollingKind{wire.PollFirst, wire.PollLast, wire.PollTimestamp}[w])
	}
	for i := 0; i < batches; i++ {
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 3, 200, uint64(i))); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			if _, err := l.ApplyRetention(0, 0, 8192); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for w := 0; w < 3; w++ {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent poll: %v", err)
		}
	}
	if l.NextOffset() != 3*batches {
		t.Fatalf("next offset %d", l.NextOffset())
	}
}

func TestReopenedFullSegmentRollsBeforeTheNextAppend(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	fillLog(t, l, 4, 2, 700) // ~7 KiB in one segment under the default size
	l.Close()
	l = openLog(t, dir, Options{SegmentSizeBytes: 4096})
	defer l.Close()
	if got := l.Stats().SegmentsCount; got != 1 {
		t.Fatalf("%d segments before the append", got)
	}
	fillLog(t, l, 1, 1, 8)
	if st := l.Stats(); st.SegmentsCount != 2 || l.segments[1].startOffset != 8 || l.segments[1].messages != 1 {
		t.Fatalf("the full segment was not rolled before the append: %+v", st)
	}
}

func TestReadBatchByLocation(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096})
	defer l.Close()
	var locs []BatchLocation
	var batches [][]byte
	for i := 0; i < 6; i++ {
		b := makeBatch(t, l.NextOffset(), 2, 700, uint64(i))
		loc, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		locs, batches = append(locs, loc), append(batches, b)
	}
	for i, loc := range locs {
		got, err := l.ReadBatch(loc)
		if err != nil || !bytes.Equal(got, batches[i]) {
			t.Fatalf("batch %d at %+v: %v", i, loc, err)
		}
	}
	bad := locs[1]
	bad.Position++
	if _, err := l.ReadBatch(bad); err == nil {
		t.Fatal("ReadBatch accepted a misplaced location")
	}
	if _, err := l.DeleteSegments(1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadBatch(locs[0]); err == nil {
		t.Fatal("ReadBatch served a deleted segment")
	}
	if _, err := os.Stat(l.SegmentLogPath(locs[5].SegmentStartOffset)); err != nil {
		t.Fatalf("SegmentLogPath: %v", err)
	}
}

func TestMaxTopicSizeCountsSealedBytesPerPartition(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096})
	defer l.Close()
	fillLog(t, l, 12, 2, 700)
	sealed := func() uint64 {
		l.mu.RLock()
		defer l.mu.RUnlock()
		return l.sealedBytesLocked()
	}
	if l.Stats().SegmentsCount < 3 {
		t.Fatalf("want at least 3 segments, have %+v", l.Stats())
	}
	// A limit equal to the sealed bytes deletes nothing, whatever the active segment holds.
	if res, err := l.ApplyRetention(0, 0, sealed()); err != nil || res.SegmentsDeleted != 0 {
		t.Fatalf("limit = sealed bytes: %+v %v", res, err)
	}
	oldest := l.segments[0].sizeBytes
	if res, err := l.ApplyRetention(0, 0, sealed()-1); err != nil || res.SegmentsDeleted != 1 || res.BytesDeleted != oldest {
		t.Fatalf("one byte over: %+v %v", res, err)
	}
	if res, err := l.ApplyRetention(0, 0, 1); err != nil || l.Stats().SegmentsCount != 1 {
		t.Fatalf("shrinking to one byte must stop at the active segment: %+v %v (%+v)", res, err, l.Stats())
	}
}

func TestRetentionKeepsSegmentsAConsumerHasNotPassed(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096})
	defer l.Close()
	fillLog(t, l, 12, 2, 700) // batch i appended at 1000 + 10i; first segment holds offsets 0..5
	firstEnd := l.segments[0].nextOffset - 1
	if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, 7, firstEnd-1); err != nil {
		t.Fatal(err)
	}
	if err := l.StoreConsumerOffset(wire.ConsumerKindGroup, 3, l.NextOffset()-1); err != nil {
		t.Fatal(err)
	}
	// Everything is expired, but the lowest stored offset sits inside the first segment.
	if res, err := l.ApplyRetention(1<<40, 1, 0); err != nil || res.SegmentsDeleted != 0 {
		t.Fatalf("barrier inside the oldest segment: %+v %v", res, err)
	}
	// Once the consumer reaches the segment's end offset, that segment (and only the segments it
	// has passed) may go.
	if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, 7, firstEnd); err != nil {
		t.Fatal(err)
	}
	res, err := l.ApplyRetention(1<<40, 1, 0)
	if err != nil || res.SegmentsDeleted != 1 || l.Stats().FirstOffset != firstEnd+1 {
		t.Fatalf("barrier at the segment end: %+v %v (%+v)", res, err, l.Stats())
	}
	// Without stored offsets there is no barrier.
	for _, c := range []struct {
		kind wire.ConsumerKind
		id   uint32
	}{{wire.ConsumerKindSingle, 7}, {wire.ConsumerKindGroup, 3}} {
		if err := l.DeleteConsumerOffset(c.kind, c.id); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := l.ApplyRetention(1<<40, 1, 0); err != nil || l.Stats().SegmentsCount != 1 {
		t.Fatalf("no barrier: %+v %v (%+v)", res, err, l.Stats())
	}
}

// TestResetToStartsEmptyAtAnOffset: a reset drops every message, keeps the
// consumer offsets (a state transfer installs the peers' when it ends; a
// purge clears them), and the next append must carry the new start offset;
// it survives a reopen.
func TestResetToStartsEmptyAtAnOffset(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	fillLog(t, l, 6, 2, 700)
	if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, 7, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ResetTo(500); err != nil {
		t.Fatal(err)
	}
	if l.NextOffset() != 500 || l.Stats().MessagesCount != 0 || len(l.ConsumerOffsets()) != 1 {
		t.Fatalf("after reset: next %d stats %+v offsets %v", l.NextOffset(), l.Stats(), l.ConsumerOffsets())
	}
	if _, err := l.Append(makeBatch(t, 0, 1, 10, 9000)); err == nil {
		t.Fatal("an append at offset 0 after ResetTo(500) was accepted")
	}
	if _, err := l.Append(makeBatch(t, 500, 2, 10, 9000)); err != nil {
		t.Fatalf("append at the new start: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	again := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	defer again.Close()
	if st := again.Stats(); again.NextOffset() != 502 || st.FirstOffset != 500 || st.MessagesCount != 2 {
		t.Fatalf("reopened: next %d stats %+v", again.NextOffset(), st)
	}
}

func TestConsumerOffsetsListedInOrder(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	for _, e := range []ConsumerOffsetEntry{{wire.ConsumerKindGroup, 2, 9}, {wire.ConsumerKindSingle, 5, 1}, {wire.ConsumerKindSingle, 1, 4}} {
		if err := l.StoreConsumerOffset(e.Kind, e.ID, e.Offset); err != nil {
			t.Fatal(err)
		}
	}
	got := l.ConsumerOffsets()
	want := []ConsumerOffsetEntry{{wire.ConsumerKindSingle, 1, 4}, {wire.ConsumerKindSingle, 5, 1}, {wire.ConsumerKindGroup, 2, 9}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}
}
