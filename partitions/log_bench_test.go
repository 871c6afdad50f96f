package partitions

import (
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// BenchmarkAppend appends 1000 × 1000-byte batches (one ~1 MB record per op) without syncing; the log
// is purged every 256 appends to bound disk use, so the re-stamp is part of each op.
func BenchmarkAppend(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{SegmentSizeBytes: 64 << 20})
	defer l.Close()
	batch := makeBatch(b, 0, 1000, 1000, 1)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	appended := 0
	for b.Loop() {
		if appended == 256 {
			if _, err := l.Purge(); err != nil {
				b.Fatal(err)
			}
			appended = 0
		}
		if err := wire.StampBatch(batch, 0, l.NextOffset(), 1); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		appended++
	}
}

// BenchmarkAppendSync is BenchmarkAppend with the persisted-durability barrier after every batch.
func BenchmarkAppendSync(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{SegmentSizeBytes: 64 << 20})
	defer l.Close()
	batch := makeBatch(b, 0, 100, 1000, 1)
	b.SetBytes(int64(len(batch)))
	appended := 0
	for b.Loop() {
		if appended == 1024 {
			if _, err := l.Purge(); err != nil {
				b.Fatal(err)
			}
			appended = 0
		}
		if err := wire.StampBatch(batch, 0, l.NextOffset(), 1); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			b.Fatal(err)
		}
		appended++
	}
}

// BenchmarkPoll polls 1000 messages of 1000 bytes at an offset that forces a sliced first record.
func BenchmarkPoll(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{SegmentSizeBytes: 16 << 20})
	defer l.Close()
	for i := 0; i < 64; i++ {
		if _, err := l.Append(makeBatch(b, l.NextOffset(), 100, 1000, uint64(i))); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 0, 2<<20)
	var bytesPolled int
	b.ReportAllocs()
	start := uint64(0)
	for b.Loop() {
		res, err := l.PollInto(buf[:0], PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: start},
			Count: 1000})
		if err != nil || res.MessagesCount != 1000 {
			b.Fatalf("poll: %d messages, %v", res.MessagesCount, err)
		}
		bytesPolled = len(res.Records)
		start = (start + 1037) % 5000
	}
	b.SetBytes(int64(bytesPolled))
}

// BenchmarkAppendSmall appends one 100-byte message per op (fixed costs dominate; no sync).
func BenchmarkAppendSmall(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{SegmentSizeBytes: 64 << 20})
	defer l.Close()
	batch := makeBatch(b, 0, 1, 100, 1)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	appended := 0
	for b.Loop() {
		if appended == 100_000 {
			if _, err := l.Purge(); err != nil {
				b.Fatal(err)
			}
			appended = 0
		}
		if err := wire.StampBatch(batch, 0, l.NextOffset(), 1); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		appended++
	}
}

// BenchmarkPollSmall polls 10 messages of 100 bytes (fixed costs dominate).
func BenchmarkPollSmall(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{SegmentSizeBytes: 16 << 20})
	defer l.Close()
	for i := 0; i < 1000; i++ {
		if _, err := l.Append(makeBatch(b, l.NextOffset(), 10, 100, uint64(i))); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	start := uint64(0)
	for b.Loop() {
		res, err := l.PollInto(buf[:0], PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: start},
			Count: 10})
		if err != nil || res.MessagesCount != 10 {
			b.Fatalf("poll: %d messages, %v", res.MessagesCount, err)
		}
		start = (start + 10) % 9990
	}
}
