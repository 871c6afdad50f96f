package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/wire"
	"github.com/zeebo/xxh3"
)

// flipInPlace flips one byte of a file a running server holds open (same inode).
func flipInPlace(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	var b [1]byte
	_, err = f.ReadAt(b[:], at)
	must(t, err)
	b[0] ^= 0xFF
	_, err = f.WriteAt(b[:], at)
	must(t, err)
}

// TestCorruptSealedBatchIsNeverServedByARunningServer (issue 15 point 6): a
// byte flipped in a sealed segment under a running server is refused with
// 4011 CannotReadMessage and a log line naming the file and offset; the
// intact messages before and after it are still served.
func TestCorruptSealedBatchIsNeverServedByARunningServer(t *testing.T) {
	srv := startServer(t, "", "IGGY_PARTITION_SCRUB_BYTES_PER_SECOND=0")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1, u64Option("segment_size", 1<<20))
	must(t, err)
	fillPartition(t, c, id(0), id(0), 0, 15) // ≈100 KB batches of 10: two segments
	r := pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollFirst}, 1000, false)
	if r.MessagesCount != 150 {
		t.Fatalf("before the damage: %d messages, want 150", r.MessagesCount)
	}

	// Batches are 100 816 bytes (10 × (48 + 10 008) + 256). Offsets 20..29: the third batch of the first (sealed) segment.
	flipInPlace(t, segmentPath(srv.dataDir, 0, 0, "00000000000000000000"), 2*100_816+5000)

	_, err = c.PollMessages(ctx, wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
		Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: 20}, Count: 5})
	expectCode(t, err, wire.ErrCannotReadMessage)
	r = pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollFirst}, 1000, false)
	if r.MessagesCount != 20 || r.Messages[19].Offset != 19 {
		t.Fatalf("poll from the first offset: %d messages, want the 20 before the damage", r.MessagesCount)
	}
	r = pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollOffset, Value: 30}, 1000, false)
	if r.MessagesCount != 120 || r.Messages[0].Offset != 30 {
		t.Fatalf("poll past the damage: %d messages", r.MessagesCount)
	}
	logs := srv.logs.String()
	if !strings.Contains(logs, "corrupt batch in partition log") || !strings.Contains(logs, "00000000000000000000.log") ||
		!strings.Contains(logs, "offset=20") {
		t.Fatalf("no log line naming the file and offset of the damage:\n%s", logs)
	}
}

// TestScrubberReportsDamageNobodyRead (issue 15 point 6): the background
// scrubber finds a flipped byte before any reader reaches it and logs the
// file and offset.
func TestScrubberReportsDamageNobodyRead(t *testing.T) {
	srv := startServer(t, "", "IGGY_PARTITION_SCRUB_BYTES_PER_SECOND=64MiB")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 2, u64Option("segment_size", 1<<20))
	must(t, err)
	fillPartition(t, c, id(0), id(0), 1, 15)
	flipInPlace(t, segmentPath(srv.dataDir, 0, 1, "00000000000000000000"), 4*100_816+300)
	waitForLog(t, srv, "scrubber found a corrupt batch", 1)
	// Rounds go on (one per turn at most), but the place is reported once.
	waitForLog(t, srv, `msg="corrupt batch in partition log`, 1)
	logs := srv.logs.String()
	if n := strings.Count(logs, "scrubber found a corrupt batch"); n != 1 {
		t.Fatalf("the damage was reported %d times, want once", n)
	}
	if !strings.Contains(logs, "offset=40") || !strings.Contains(logs, "partition=1") {
		t.Fatalf("scrubber log line does not name the partition and offset:\n%s", logs)
	}
}

// TestDamagedOlderSuperblockCopyDoesNotStopTheBoot (issue 15 point 7): a
// byte flipped in the older metadata superblock copy is set aside with a
// warning; the node boots from the newer copy with its data.
func TestDamagedOlderSuperblockCopyDoesNotStopTheBoot(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	for _, name := range []string{"s1", "s2", "s3"} {
		_, err := c.CreateStream(ctx, name)
		must(t, err)
	}
	// A single node writes its superblock at checkpoints (every 512 ops): two more copies.
	for i := 0; i < 300; i++ {
		_, err := c.CreateStream(ctx, "tmp")
		must(t, err)
		must(t, c.DeleteStream(ctx, named("tmp")))
	}
	srv.stop(syscall.SIGTERM)
	meta := filepath.Join(srv.dataDir, "metadata")
	a, err := os.ReadFile(filepath.Join(meta, "superblock.a"))
	must(t, err)
	b, err := os.ReadFile(filepath.Join(meta, "superblock.b"))
	must(t, err)
	older := "superblock.a"
	if binary.LittleEndian.Uint64(a[8:]) > binary.LittleEndian.Uint64(b[8:]) {
		older = "superblock.b"
	}
	flipInPlace(t, filepath.Join(meta, older), 28+50) // checkpoint checksum: neither sequence, view nor commit

	srv.start()
	c = rootClient(t, srv.addr)
	streams, err := c.GetStreams(ctx)
	must(t, err)
	if len(streams) != 3 {
		t.Fatalf("after booting past the damaged copy: %d streams, want 3", len(streams))
	}
	if logs := srv.logs.String(); !strings.Contains(logs, "damaged copy was set aside") || !strings.Contains(logs, older) {
		t.Fatalf("no warning naming the damaged copy %s:\n%s", older, logs)
	}
}

// lastWALSegment is the newest non-empty metadata journal segment
// (metadata/journal-<seq>.wal) of a data directory.
func lastWALSegment(t *testing.T, dataDir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dataDir, "metadata", "journal-*.wal"))
	must(t, err)
	sort.Strings(segs)
	for i := len(segs) - 1; i >= 0; i-- {
		if st, err := os.Stat(segs[i]); err == nil && st.Size() > 0 {
			return segs[i]
		}
	}
	t.Fatalf("no metadata journal segment with records in %s", dataDir)
	return ""
}

// walRecordStarts lists the byte positions of the records of a metadata
// journal ([magic u32 "LWA2", or "LWAL" before batch_back][payload_len u32]
// [op u64][checksum u64] payload).
func walRecordStarts(t *testing.T, data []byte) []int {
	t.Helper()
	var starts []int
	for off := 0; off+24 <= len(data); off += 24 + int(binary.LittleEndian.Uint32(data[off+4:])) {
		if m := string(data[off : off+4]); m != "LWA2" && m != "LWAL" {
			t.Fatalf("journal record at byte %d has no magic", off)
		}
		starts = append(starts, off)
	}
	return starts
}

// TestDamagedAcknowledgedMetadataIsRefusedNotCut (issue 15 point 5):
// flipping bytes in the last two metadata journal records (an acknowledged
// CreateUser among them) used to boot without them, silently. Those records
// were fdatasynced before the reply: the boot is refused with an error
// naming the file and byte, and the file is left as it was.
func TestDamagedAcknowledgedMetadataIsRefusedNotCut(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateUser(ctx, "acked-user", "password1", wire.UserActive, nil)
	must(t, err)
	srv.stop(syscall.SIGKILL)
	path := lastWALSegment(t, srv.dataDir)
	data, err := os.ReadFile(path)
	must(t, err)
	starts := walRecordStarts(t, data)
	if len(starts) < 2 {
		t.Fatalf("journal holds %d records, want ≥ 2", len(starts))
	}
	for _, at := range starts[len(starts)-2:] {
		data[at+24+30] ^= 0xFF // inside each payload
	}
	must(t, os.WriteFile(path, data, 0o644))

	err = srv.startExpectExit()
	if err == nil {
		t.Fatal("the server booted past damaged acknowledged metadata")
	}
	logs := srv.logs.String()
	if !strings.Contains(logs, filepath.Base(path)) || !strings.Contains(logs, "damage to synced data, not a torn tail") {
		t.Fatalf("boot refusal does not name the damage:\n%s", logs)
	}
	if after, _ := os.ReadFile(path); len(after) != len(data) {
		t.Fatalf("the refused boot changed the journal (%d bytes, was %d)", len(after), len(data))
	}
}

// TestDamagedLastBatchOfPersistedTopicIsNeverReissued (issue 15 point 5):
// flipping bytes in the last batch of a persisted topic used to drop its 100
// acknowledged messages as a "torn tail" and hand their offsets out again.
// Now the batch is reported as damaged (file and offsets), refused when read,
// and the next send continues after it.
func TestDamagedLastBatchOfPersistedTopicIsNeverReissued(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1, stringOption("durability", "persisted"))
	must(t, err)
	for b := 0; b < 3; b++ {
		sendOK(t, c, id(0), id(0), partitionID(0), makeMessages("p", b*100, 100))
	}
	srv.stop(syscall.SIGKILL)
	seg := segmentPath(srv.dataDir, 0, 0, "00000000000000000000")
	st, err := os.Stat(seg)
	must(t, err)
	flipInPlace(t, seg, st.Size()-5) // inside the last batch's last message

	srv.start()
	c = rootClient(t, srv.addr)
	if conf := sendOK(t, c, id(0), id(0), partitionID(0), makeMessages("after", 0, 1)); conf.BaseOffset != 300 {
		t.Fatalf("the send after the damage got offset %d, want 300 (200..299 were acknowledged before)", conf.BaseOffset)
	}
	_, err = c.PollMessages(ctx, wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
		Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: 250}, Count: 10})
	expectCode(t, err, wire.ErrCannotReadMessage)
	r := pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollFirst}, 1000, false)
	if r.MessagesCount != 200 {
		t.Fatalf("poll from the first offset: %d messages, want the 200 before the damage", r.MessagesCount)
	}
	logs := srv.logs.String()
	if !strings.Contains(logs, "partition log damaged") || !strings.Contains(logs, "first_offset=200") ||
		strings.Contains(logs, "truncating torn tail") {
		t.Fatalf("the damage is not reported as such:\n%s", logs)
	}
}

// TestLostTailOffsetsAreNeverHandedOutAgain (issue 15 point 5): a power
// loss that loses a replicated topic's unsynced tail (simulated: SIGKILL,
// the segment cut back as the lost page cache would leave it, and the
// reservation marked as written in another boot) must not hand the lost
// offsets out again.
func TestLostTailOffsetsAreNeverHandedOutAgain(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1)
	must(t, err)
	var last uint64
	for b := 0; b < 5; b++ {
		last = sendOK(t, c, id(0), id(0), partitionID(0), makeMessages("x", b*10, 10)).BaseOffset + 9
	}
	srv.stop(syscall.SIGKILL)
	seg := segmentPath(srv.dataDir, 0, 0, "00000000000000000000")
	st, err := os.Stat(seg)
	must(t, err)
	must(t, os.Truncate(seg, st.Size()*2/5)) // the page cache never reached the disk past here
	// ... because the machine lost power: the reservation was written in another boot.
	rewriteReservationBoot(t, filepath.Join(filepath.Dir(seg), "offsets.reserved"), "00000000-0000-0000-0000-000000000001")

	srv.start()
	c = rootClient(t, srv.addr)
	if conf := sendOK(t, c, id(0), id(0), partitionID(0), makeMessages("after", 0, 1)); conf.BaseOffset <= last {
		t.Fatalf("after the crash the send got offset %d; offsets up to %d were already handed out", conf.BaseOffset, last)
	}
}

// runOffline runs `iggy-server <args>` on a stopped server's data directory.
func runOffline(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(serverBinary, args...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run iggy-server %v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestOfflineCheckAndRepair (issue 15 point 7): `iggy-server check` verifies
// a data directory without changing it and names each damaged file and
// position (exit 3); `repair` does nothing without an explicit choice, then
// salvages what it is told to, after which the server boots and serves.
func TestOfflineCheckAndRepair(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1, u64Option("segment_size", 1<<20))
	must(t, err)
	fillPartition(t, c, id(0), id(0), 0, 15)
	srv.stop(syscall.SIGTERM)

	if out, code := runOffline(t, "check", "--path", srv.dataDir); code != 0 || !strings.Contains(out, "sound") {
		t.Fatalf("check of a sound directory: exit %d\n%s", code, out)
	}
	seg := segmentPath(srv.dataDir, 0, 0, "00000000000000000000")
	flipInPlace(t, seg, 2*100_816+5000)
	before, err := os.ReadFile(seg)
	must(t, err)
	wal := lastWALSegment(t, srv.dataDir)
	walData, err := os.ReadFile(wal)
	must(t, err)
	starts := walRecordStarts(t, walData)
	walData[starts[len(starts)-1]+24+30] ^= 0xFF
	must(t, os.WriteFile(wal, walData, 0o644))

	out, code := runOffline(t, "check", "--path", srv.dataDir)
	if code != 3 || !strings.Contains(out, "00000000000000000000.log: bytes 201632..302447 damaged, offsets 20..29 refused") ||
		!strings.Contains(out, "metadata/"+filepath.Base(wal)) {
		t.Fatalf("check of a damaged directory: exit %d\n%s", code, out)
	}
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, before) {
		t.Fatal("check changed a segment")
	}
	if out, code := runOffline(t, "repair", "--path", srv.dataDir); code != 2 || !strings.Contains(out, "choose") {
		t.Fatalf("repair without a choice: exit %d\n%s", code, out)
	}
	if out, code := runOffline(t, "repair", "--path", srv.dataDir, "--truncate-metadata-wal", "--cut-partition-damage"); code != 0 {
		t.Fatalf("repair: exit %d\n%s", code, out)
	}
	if out, code := runOffline(t, "check", "--path", srv.dataDir); code != 0 {
		t.Fatalf("check after the repair: exit %d\n%s", code, out)
	}
	srv.start()
	c = rootClient(t, srv.addr)
	r := pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollFirst}, 1000, false)
	if r.MessagesCount != 20 {
		t.Fatalf("after the cut: %d messages, want the 20 before the damage", r.MessagesCount)
	}
	if conf := sendOK(t, c, id(0), id(0), partitionID(0), makeMessages("z", 0, 1)); conf.BaseOffset < 150 {
		t.Fatalf("after the cut a send got offset %d: offsets up to 149 were handed out", conf.BaseOffset)
	}
}

// rewriteReservationBoot rewrites a partition's offsets.reserved
// ([reserved u64][boot id 36 B][synced below u64][XXH3-64]) as if written
// in another boot.
func rewriteReservationBoot(t *testing.T, path, boot string) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	n := len(b)
	if n != 60 {
		t.Fatalf("%s is %d bytes, want 60", path, n)
	}
	copy(b[8:44], boot)
	binary.LittleEndian.PutUint64(b[n-8:], xxh3.Hash(b[:n-8]))
	must(t, os.WriteFile(path, b, 0o644))
}
