package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// peerLog is a fake recordSource: one peer per log; a peer with fail set
// never answers.
type peerLogs struct {
	logs  map[uint8]*partitions.Log
	fail  map[uint8]bool
	asked []uint8
}

func (s *peerLogs) fetchRecords(ctx context.Context, peer uint8, group, _, from, end uint64, bytesMax uint32) (fetchedRecords, error) {
	s.asked = append(s.asked, peer)
	if s.fail[peer] {
		return fetchedRecords{}, context.DeadlineExceeded
	}
	l := s.logs[peer]
	st := l.Stats()
	recs, next, err := l.ReadRecords(nil, from, end, uint64(bytesMax))
	if errors.Is(err, partitions.ErrBelowRetained) {
		return fetchedRecords{status: fetchBelowRetained, first: st.FirstOffset, next: l.NextOffset()}, nil
	}
	if err != nil {
		return fetchedRecords{status: fetchUnavailable}, nil
	}
	return fetchedRecords{status: fetchOK, first: st.FirstOffset, next: l.NextOffset(), records: recs, end: next}, nil
}

func transferTestLog(t *testing.T, batches int) *partitions.Log {
	t.Helper()
	l, err := partitions.Open(t.TempDir(), partitions.Options{SegmentSizeBytes: 8192, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	for i := 0; i < batches; i++ {
		appendTestBatch(t, l, 3, uint64(1000+i))
	}
	return l
}

func appendTestBatch(t *testing.T, l *partitions.Log, count int, ts uint64) {
	t.Helper()
	msgs := make([]wire.BatchMessageInput, count)
	for i := range msgs {
		msgs[i] = wire.BatchMessageInput{Payload: make([]byte, 600)}
		msgs[i].ID[0] = byte(i + 1)
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.StampBatch(b, 0, l.NextOffset(), ts); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
}

var quietTransferLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestTransferFetchesToTheFrontierInChunks: a lagging log is brought to the
// frontier (not beyond) from a peer in bounded chunks, skipping a dead
// peer, byte-identical to the source.
func TestTransferFetchesToTheFrontierInChunks(t *testing.T) {
	source := transferTestLog(t, 40) // 120 messages, several segments
	lagging := transferTestLog(t, 5)
	src := &peerLogs{logs: map[uint8]*partitions.Log{2: source}, fail: map[uint8]bool{1: true}}
	frontier := uint64(90)
	if err := fetchUntilFrontier(context.Background(), src, lagging, 7, 0, frontier, []uint8{1, 2}, quietTransferLog); err != nil {
		t.Fatal(err)
	}
	if lagging.NextOffset() != frontier {
		t.Fatalf("next offset %d, want the frontier %d", lagging.NextOffset(), frontier)
	}
	want, _, _ := source.ReadRecords(nil, 0, frontier, 1<<30)
	got, _, _ := lagging.ReadRecords(nil, 0, frontier, 1<<30)
	if string(got) != string(want) {
		t.Fatal("transferred records differ from the source's")
	}
	if src.asked[0] != 1 || src.asked[1] != 2 {
		t.Fatalf("peers asked %v: the dead one first, then the next", src.asked)
	}
}

// TestTransferCopiesSkippedHoles: a source whose group skipped offsets
// after primary changes (partition_reserve.go), in the middle and at its
// end, is copied with the same holes: the same next offset, the same
// records and markers, whatever chunk size splits the reads.
func TestTransferCopiesSkippedHoles(t *testing.T) {
	source := transferTestLog(t, 10) // 0..29
	if err := source.SkipTo(500); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		appendTestBatch(t, source, 3, uint64(2000+i)) // 500..529
	}
	if err := source.SkipTo(900); err != nil { // a trailing hole
		t.Fatal(err)
	}
	for _, have := range []int{0, 4, 10} {
		lagging := transferTestLog(t, have)
		src := &peerLogs{logs: map[uint8]*partitions.Log{2: source}}
		if err := fetchUntilFrontier(context.Background(), src, lagging, 7, 0, 900, []uint8{2}, quietTransferLog); err != nil {
			t.Fatalf("from %d batches: %v", have, err)
		}
		if lagging.NextOffset() != 900 {
			t.Fatalf("from %d batches: next offset %d, want 900", have, lagging.NextOffset())
		}
		for _, from := range []uint64{0, 30, 500} {
			want, _, _ := source.ReadRecords(nil, from, 900, 1<<30)
			got, _, _ := lagging.ReadRecords(nil, from, 900, 1<<30)
			if len(want) == 0 || string(got) != string(want) {
				t.Fatalf("from %d batches: records from %d differ from the source's", have, from)
			}
		}
		for _, marker := range []string{"00000000000000000030.lost", "00000000000000000530.lost"} {
			if _, err := os.Stat(filepath.Join(lagging.Dir(), marker)); err != nil {
				t.Fatalf("from %d batches: hole marker %s: %v", have, marker, err)
			}
		}
	}
}

// TestTransferRestartsBelowRetention: when the source's retention removed
// what the replica lacks, the replica's log restarts at the source's first
// offset and continues from there.
func TestTransferRestartsBelowRetention(t *testing.T) {
	source := transferTestLog(t, 40)
	if _, err := source.DeleteSegmentsBefore(60); err != nil {
		t.Fatal(err)
	}
	first := source.Stats().FirstOffset
	if first == 0 {
		t.Fatal("retention removed nothing")
	}
	lagging := transferTestLog(t, 2)
	src := &peerLogs{logs: map[uint8]*partitions.Log{0: source}}
	if err := fetchUntilFrontier(context.Background(), src, lagging, 7, 0, 120, []uint8{0}, quietTransferLog); err != nil {
		t.Fatal(err)
	}
	if st := lagging.Stats(); st.FirstOffset != first || lagging.NextOffset() != 120 {
		t.Fatalf("after transfer: %+v, want first %d next 120", st, first)
	}
}

// TestTransferToACheckpointTheRetentionPassed: the target checkpoint's
// frontier is below the source's first offset (committed cuts above the
// checkpoint removed all it names): the transfer ends with the log empty
// at the source's first offset, and what the later ops append continues
// the source's files (whole-node simulator seed 19456: the transfer asked
// again forever).
func TestTransferToACheckpointTheRetentionPassed(t *testing.T) {
	source := transferTestLog(t, 40) // 0..119
	if _, err := source.DeleteSegmentsBefore(90); err != nil {
		t.Fatal(err)
	}
	first := source.Stats().FirstOffset
	if first <= 30 {
		t.Fatalf("retention kept offset %d, the test needs it past the frontier 30", first)
	}
	lagging := transferTestLog(t, 2) // 0..5
	src := &peerLogs{logs: map[uint8]*partitions.Log{0: source}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fetchUntilFrontier(ctx, src, lagging, 7, 0, 30, []uint8{0}, quietTransferLog); err != nil {
		t.Fatalf("transfer to a frontier below the source's first offset: %v", err)
	}
	if st := lagging.Stats(); st.FirstOffset != first || lagging.NextOffset() != first {
		t.Fatalf("after the transfer: first %d next %d, want both %d", st.FirstOffset, lagging.NextOffset(), first)
	}
	// The ops above the checkpoint bring the rest (here fetched as records).
	if err := fetchUntilFrontier(ctx, src, lagging, 7, 0, source.NextOffset(), []uint8{0}, quietTransferLog); err != nil {
		t.Fatal(err)
	}
	if want, got := logFileNames(t, source), logFileNames(t, lagging); !slices.Equal(want, got) {
		t.Fatalf("the replica's files %v, the source's %v", got, want)
	}
}

// TestTransferRefusesCorruptRecords: a record whose checksum fails is not
// appended; the job keeps trying (until cancelled) and the log is intact.
func TestTransferRefusesCorruptRecords(t *testing.T) {
	source := transferTestLog(t, 10)
	recs, _, _ := source.ReadRecords(nil, 0, 30, 1<<30)
	recs[300] ^= 0xFF
	lagging := transferTestLog(t, 0)
	n, err := appendFetched(lagging, recs, 30)
	if err == nil || n != 0 || lagging.NextOffset() != 0 {
		t.Fatalf("corrupt first record: appended %d, err %v, next %d", n, err, lagging.NextOffset())
	}
	if errors.Is(err, errLocalLog) {
		t.Fatalf("a bad peer record was reported as a local failure: %v", err)
	}
}

func TestInstallConsumerOffsetsReplacesTheSet(t *testing.T) {
	l := transferTestLog(t, 1)
	for _, o := range []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindSingle, ID: 1, Offset: 5}, {Kind: wire.ConsumerKindGroup, ID: 3, Offset: 1}} {
		if err := l.StoreConsumerOffset(o.Kind, o.ID, o.Offset); err != nil {
			t.Fatal(err)
		}
	}
	want := []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindSingle, ID: 1, Offset: 9}, {Kind: wire.ConsumerKindSingle, ID: 2, Offset: 4}}
	if err := installConsumerOffsets(l, want); err != nil {
		t.Fatal(err)
	}
	got := l.ConsumerOffsets()
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("offsets %v, want %v", got, want)
	}
}

func TestPartitionCheckpointRoundTripAndRefusals(t *testing.T) {
	cp := partitionCheckpoint{frontier: 90, first: 12, offsets: []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindGroup, ID: 4, Offset: 50}}}
	got, err := decodePartitionCheckpoint(cp.encode())
	if err != nil || got.frontier != 90 || got.first != 12 || len(got.offsets) != 1 || got.offsets[0] != cp.offsets[0] {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if got.hasPurge || cp.encode()[0] != 3 {
		t.Fatalf("a checkpoint without its purge state encoded as version %d, decoded with one: %v", cp.encode()[0], got.hasPurge)
	}
	withPurge := cp
	withPurge.hasReserved, withPurge.reserved = true, 128
	withPurge.hasPurge, withPurge.purge = true, purgeState{generation: 3, op: 77}
	if got, err := decodePartitionCheckpoint(withPurge.encode()); err != nil || !got.hasPurge || got.purge != withPurge.purge ||
		got.reserved != 128 || got.frontier != 90 {
		t.Fatalf("round trip with the purge state: %+v %v", got, err)
	}
	b := cp.encode()
	for name, bad := range map[string][]byte{
		"short":        b[:10],
		"version":      append([]byte{9}, b[1:]...),
		"count":        b[:len(b)-1],
		"first above":  partitionCheckpoint{frontier: 1, first: 2}.encode(),
		"unknown kind": append(append([]byte(nil), b[:21]...), append([]byte{7}, b[22:]...)...),
	} {
		if _, err := decodePartitionCheckpoint(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if p := transferPeers(1, 3, 4); len(p) != 2 || p[0] != 0 || p[1] != 2 {
		t.Fatalf("peers of replica 1 in view 4 of 3: %v (the primary, replica 1, is self: 0 then 2)", p)
	}
	if p := transferPeers(0, 3, 2); len(p) != 2 || p[0] != 2 || p[1] != 1 {
		t.Fatalf("peers of replica 0 in view 2: %v, want the primary 2 first", p)
	}
}

// TestTransferCopiesConsecutiveHolesOneByOne: two holes with an empty
// segment between them (two failovers with no write between) are copied
// as two holes, so the replica's files are the source's, name for name
// (found by the whole-node simulator: a transfer skipped both at once).
func TestTransferCopiesConsecutiveHolesOneByOne(t *testing.T) {
	source := transferTestLog(t, 10) // 0..29
	for _, to := range []uint64{500, 700} {
		if err := source.SkipTo(to); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		appendTestBatch(t, source, 3, uint64(3000+i)) // 700..711
	}
	lagging := transferTestLog(t, 0)
	src := &peerLogs{logs: map[uint8]*partitions.Log{2: source}}
	if err := fetchUntilFrontier(context.Background(), src, lagging, 7, 0, 712, []uint8{2}, quietTransferLog); err != nil {
		t.Fatal(err)
	}
	if want, got := logFileNames(t, source), logFileNames(t, lagging); !slices.Equal(want, got) {
		t.Fatalf("the replica's files %v, the source's %v", got, want)
	}
}

// TestTransferToAFrontierInsideAHole: a checkpoint taken between two
// skips with no record between them names a frontier inside what the
// source's files hold as one hole (partitions.Log.SkipTo). The transfer
// skips up to that frontier; the second skip, replayed after the
// checkpoint, extends the hole, and the files end as the source's
// (whole-node simulator seed 17064: the transfer failed for good).
func TestTransferToAFrontierInsideAHole(t *testing.T) {
	source := transferTestLog(t, 10) // 0..29
	for _, to := range []uint64{500, 700} {
		if err := source.SkipTo(to); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		appendTestBatch(t, source, 3, uint64(3000+i)) // 700..711
	}
	lagging := transferTestLog(t, 4) // 0..11
	src := &peerLogs{logs: map[uint8]*partitions.Log{2: source}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fetchUntilFrontier(ctx, src, lagging, 7, 0, 500, []uint8{2}, quietTransferLog); err != nil {
		t.Fatalf("transfer to a frontier inside the source's hole: %v", err)
	}
	if lagging.NextOffset() != 500 {
		t.Fatalf("next offset %d after the transfer, want 500", lagging.NextOffset())
	}
	if err := lagging.SkipTo(700); err != nil { // the group's second skip, replayed
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		appendTestBatch(t, lagging, 3, uint64(3000+i))
	}
	if want, got := logFileNames(t, source), logFileNames(t, lagging); !slices.Equal(want, got) {
		t.Fatalf("the replica's files %v, the source's %v", got, want)
	}
}

// logFileNames lists a log's segment, index and hole-marker files.
func logFileNames(t *testing.T, l *partitions.Log) []string {
	t.Helper()
	entries, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".lost") || strings.HasSuffix(n, ".index") {
			out = append(out, n)
		}
	}
	return out
}
