package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/transport/bus"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// The crash matrix (issue 9 point 7, docs/crash-tests.md): real processes,
// SIGKILL at a random moment of a produce stream that stays below every
// flush threshold (segments of 1 GiB, no messages_required_to_save), on a
// singleton and on a 3-replica cluster, for a persisted and a replicated
// topic side by side. The stream sends batches and stores consumer
// offsets; after every restart the acknowledged state is checked. Every
// random choice comes from one seed, logged, so a failure reproduces:
//
//	LODESTREAM_CRASH_LOOPS=N   loops per cell (default 1; `make crash LOOPS=N`)
//	LODESTREAM_CRASH_SEED=S    the seed (default: the clock, logged)
//
// TestCrashMatrix logs one totals table at the end.

// crashTopics are the two topics every cell writes: stream 0, topics 0
// and 1, two partitions each.
var crashTopics = []struct {
	name       string
	durability string
}{{"persisted", "persisted"}, {"replicated", "replicated"}}

const crashPartitions = 2

// crashConsumer is the consumer whose offset the stream stores.
var crashConsumer = wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(7)}

// tp names one partition of the crash topics.
type tp struct{ topic, partition uint32 }

func (k tp) String() string { return fmt.Sprintf("%s/p%d", crashTopics[k.topic].name, k.partition) }

func crashKeys() []tp {
	var out []tp
	for t := range crashTopics {
		for p := uint32(0); p < crashPartitions; p++ {
			out = append(out, tp{uint32(t), p})
		}
	}
	return out
}

// crashTally is one cell's totals.
type crashTally struct {
	cell          string
	loops         int
	kills         int // processes SIGKILLed
	batches       int // acknowledged batches
	messages      int // acknowledged messages
	offsetStores  int // acknowledged consumer-offset stores
	tornCut       int // torn tails the restart cut
	lostOffsets   int // acknowledged offsets a simulated power loss took (never handed out again)
	damageReports int // damage to synced data reported at a restart
	elapsed       time.Duration
}

// crashModel is what the stream had acknowledged, across every loop of a
// cell: the payload at each acknowledged offset, the highest offset ever
// acknowledged (lost ones included), the offsets a simulated power loss
// took, and the highest acknowledged stored consumer offset.
type crashModel struct {
	want    map[tp]map[uint64]string
	highest map[tp]uint64
	any     map[tp]bool
	lost    map[tp]map[uint64]bool
	stored  map[tp]uint64
	hasOff  map[tp]bool
}

func newCrashModel() *crashModel {
	m := &crashModel{want: map[tp]map[uint64]string{}, highest: map[tp]uint64{}, any: map[tp]bool{},
		lost: map[tp]map[uint64]bool{}, stored: map[tp]uint64{}, hasOff: map[tp]bool{}}
	for _, k := range crashKeys() {
		m.want[k] = map[uint64]string{}
		m.lost[k] = map[uint64]bool{}
	}
	return m
}

// ack records an acknowledged batch; an offset acknowledged twice with
// another payload is a re-issued offset.
func (m *crashModel) ack(t *testing.T, k tp, base uint64, payloads []string) {
	t.Helper()
	for i, pl := range payloads {
		off := base + uint64(i)
		if prev, dup := m.want[k][off]; dup && prev != pl {
			t.Fatalf("%s offset %d acknowledged twice: %q and %q", k, off, prev, pl)
		}
		if m.lost[k][off] {
			t.Fatalf("%s offset %d handed out again after a power loss took it (new payload %q)", k, off, pl)
		}
		m.want[k][off] = pl
		if !m.any[k] || off > m.highest[k] {
			m.highest[k], m.any[k] = off, true
		}
	}
}

func crashLoops(t *testing.T) int {
	if v := os.Getenv("LODESTREAM_CRASH_LOOPS"); v != "" {
		n, err := strconv.Atoi(v)
		must(t, err)
		return n
	}
	return 1
}

func crashSeed(t *testing.T) int64 {
	if v := os.Getenv("LODESTREAM_CRASH_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		must(t, err)
		return n
	}
	return time.Now().UnixNano()
}

// TestCrashMatrix runs every cell of the crash matrix and reports the
// totals (docs/crash-tests.md).
func TestCrashMatrix(t *testing.T) {
	if slices.Contains(serverBuildFlags, "-race") && os.Getenv("LODESTREAM_CRASH_LOOPS") == "" {
		// make test runs the package twice; the plain run covers the matrix
		// (≈ 100 s) and the race run would add ≈ 155 s more.
		t.Skip("under -race the crash matrix runs only with LODESTREAM_CRASH_LOOPS set")
	}
	loops, seed := crashLoops(t), crashSeed(t)
	t.Logf("crash matrix: %d loops per cell, seed %d (LODESTREAM_CRASH_SEED=%d LODESTREAM_CRASH_LOOPS=%d reproduces)", loops, seed, seed, loops)
	var tallies []*crashTally
	cell := func(name string, seedOffset int64, run func(t *testing.T, rng *rand.Rand, tally *crashTally)) {
		tally := &crashTally{cell: name}
		tallies = append(tallies, tally)
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			s := seed + seedOffset
			t.Logf("%s: seed %d", name, s)
			run(t, rand.New(rand.NewSource(s)), tally)
			tally.elapsed = time.Since(start)
		})
	}
	cell("singleton", 0, func(t *testing.T, rng *rand.Rand, tally *crashTally) { singletonCrashLoops(t, rng, loops, tally) })
	cell("cluster", 1, func(t *testing.T, rng *rand.Rand, tally *crashTally) {
		clusterCrashLoops(t, rng, loops, tally)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "crash matrix totals (seed %d, %d loops per cell):\n", seed, loops)
	fmt.Fprintf(&b, "%-34s %5s %5s %8s %8s %7s %5s %5s %6s %8s\n", "cell", "loops", "kills", "batches", "messages", "offsets", "torn", "lost", "damage", "seconds")
	for _, x := range tallies {
		if x.elapsed == 0 && x.kills == 0 {
			continue // filtered out with -run, or failed before its first kill
		}
		fmt.Fprintf(&b, "%-34s %5d %5d %8d %8d %7d %5d %5d %6d %8.1f\n", x.cell, x.loops, x.kills, x.batches, x.messages,
			x.offsetStores, x.tornCut, x.lostOffsets, x.damageReports, x.elapsed.Seconds())
	}
	t.Log(b.String())
}

// crashStream is one produce stream: a producer per partition, each
// sending 10-message batches to its partition's primary and storing the
// consumer offset of every third acknowledged batch. It records every
// acknowledgement. stop ends it; a failed send or store ends that producer.
type crashStream struct {
	mu      sync.Mutex
	batches []crashAck
	stores  []crashStore
	acks    atomic.Int64
	stopped chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

type crashAck struct {
	key      tp
	base     uint64
	payloads []string
}

type crashStore struct {
	key    tp
	offset uint64
}

// startCrashStream starts the producers; addrOf names each partition's
// node. tag makes this loop's payloads unique.
func startCrashStream(t *testing.T, addrOf func(tp) string, tag string) *crashStream {
	t.Helper()
	s := &crashStream{stopped: make(chan struct{})}
	for _, k := range crashKeys() {
		c, err := client.Dial(testCtx(t), addrOf(k), client.WithResponseTimeout(10*time.Second))
		must(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = c.LoginUser(testCtx(t), "iggy", "iggy")
		must(t, err)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-s.stopped:
					return
				default:
				}
				msgs := make([]wire.BatchMessageInput, 10)
				payloads := make([]string, len(msgs))
				for i := range msgs {
					payloads[i] = fmt.Sprintf("%s-%s-seq-%d-msg-%d", tag, k, seq, i)
					msgs[i] = wire.BatchMessageInput{OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: []byte(payloads[i])}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				conf, err := c.SendMessages(ctx, id(0), id(k.topic), partitionID(k.partition), msgs)
				cancel()
				if err != nil {
					return // the node is gone (or the outcome is unknown): this producer stops
				}
				s.mu.Lock()
				s.batches = append(s.batches, crashAck{key: k, base: conf[0].BaseOffset, payloads: payloads})
				s.mu.Unlock()
				s.acks.Add(1)
				if seq%3 != 2 {
					continue
				}
				off := conf[0].BaseOffset + uint64(len(msgs)) - 1
				ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
				err = c.StoreConsumerOffset(ctx, crashConsumer, id(0), id(k.topic), wire.SomePartition(k.partition), off)
				cancel()
				if err != nil {
					return
				}
				s.mu.Lock()
				s.stores = append(s.stores, crashStore{key: k, offset: off})
				s.mu.Unlock()
				s.acks.Add(1)
			}
		}()
	}
	return s
}

// waitAcks waits until the stream holds n acknowledgements (or every
// producer stopped, or 60 s passed).
func (s *crashStream) waitAcks(n int64) {
	deadline := time.Now().Add(60 * time.Second)
	for s.acks.Load() < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}

// stop ends the stream and folds its acknowledgements into the model.
func (s *crashStream) stop(t *testing.T, m *crashModel, tally *crashTally) {
	t.Helper()
	s.once.Do(func() { close(s.stopped) })
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.batches {
		m.ack(t, a.key, a.base, a.payloads)
		tally.batches++
		tally.messages += len(a.payloads)
	}
	for _, st := range s.stores {
		if !m.hasOff[st.key] || st.offset > m.stored[st.key] {
			m.stored[st.key], m.hasOff[st.key] = st.offset, true
		}
		tally.offsetStores++
	}
}

// createCrashTopics creates stream 0 with the two crash topics through c.
func createCrashTopics(t *testing.T, c *client.Client) {
	t.Helper()
	_, err := c.CreateStream(testCtx(t), "s")
	must(t, err)
	for _, ct := range crashTopics {
		_, err = c.CreateTopic(testCtx(t), id(0), ct.name, crashPartitions, stringOption("durability", ct.durability),
			stringOption("consumer_offset_durability", ct.durability))
		must(t, err)
	}
}

// crashPartitionDir is a node's directory of one crash partition.
func crashPartitionDir(dataDir string, k tp) string {
	return filepath.Join(dataDir, "streams", "0", "topics", fmt.Sprint(k.topic), "partitions", fmt.Sprint(k.partition))
}

// pollEverything reads every stored message of a partition through cl.
// Offsets in refused are skipped (a known damaged range).
func pollEverything(t *testing.T, cl *client.Client, k tp) (map[uint64]string, error) {
	t.Helper()
	out := map[uint64]string{}
	for next := uint64(0); ; {
		r, err := cl.PollMessages(testCtx(t), wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(k.topic),
			Partition: wire.SomePartition(k.partition), Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: next}, Count: 1000})
		if err != nil {
			return out, err
		}
		if r.MessagesCount == 0 {
			return out, nil
		}
		for _, m := range r.Messages {
			if _, dup := out[m.Offset]; dup {
				t.Fatalf("%s: offset %d polled twice", k, m.Offset)
			}
			out[m.Offset] = string(m.Payload)
			next = m.Offset + 1
		}
	}
}

// expectAcked checks that a node's messages hold every acknowledged one
// at its offset and none of the offsets a power loss took.
func expectAcked(t *testing.T, what string, k tp, got map[uint64]string, m *crashModel) error {
	for off, want := range m.want[k] {
		if g, ok := got[off]; !ok || g != want {
			return fmt.Errorf("%s %s offset %d: stored %q (present %v), want the acknowledged %q", what, k, off, g, ok, want)
		}
	}
	for off := range m.lost[k] {
		if g, ok := got[off]; ok {
			return fmt.Errorf("%s %s offset %d was lost with an unsynced tail, yet it is stored again: %q", what, k, off, g)
		}
	}
	return nil
}

// storedOffset is a node's stored consumer offset of a partition.
func storedOffset(t *testing.T, cl *client.Client, k tp) (uint64, bool, error) {
	off, err := cl.GetConsumerOffset(testCtx(t), crashConsumer, id(0), id(k.topic), wire.SomePartition(k.partition))
	if err != nil || off == nil {
		return 0, false, err
	}
	return off.StoredOffset, true, nil
}

// segmentBatch is one stored batch record of a segment file.
type segmentBatch struct {
	pos, length uint64
	base        uint64
	count       uint32
}

// segmentBatches walks a segment file's records (a 256-byte header each:
// base_offset at 8, batch_length at 32, message_count at 48). A single
// node's batch staged and not yet adopted when the server was killed has
// batch_length 0 (partitions.Options.StageUnsealed): the walk ends there,
// as the restart's does (it cuts the rest).
func segmentBatches(t *testing.T, path string) []segmentBatch {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var out []segmentBatch
	for pos := uint64(0); pos+256 <= uint64(len(b)); {
		length := binary.LittleEndian.Uint64(b[pos+32:])
		if length == 0 {
			break
		}
		if length < 256 || pos+length > uint64(len(b)) {
			t.Fatalf("%s: record at byte %d has length %d (file %d bytes)", path, pos, length, len(b))
		}
		out = append(out, segmentBatch{pos: pos, length: length, base: binary.LittleEndian.Uint64(b[pos+8:]),
			count: binary.LittleEndian.Uint32(b[pos+48:])})
		pos += length
	}
	return out
}

// lastSegment is the newest segment file of a partition directory.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	must(t, err)
	if len(paths) == 0 {
		t.Fatalf("no segment in %s", dir)
	}
	sort.Strings(paths)
	return paths[len(paths)-1]
}

// ---- singleton ----

// singletonCrashLoops: one server; each loop runs the stream on both
// topics, SIGKILLs the server at a random moment, damages the files as
// the loop's kind says, restarts and checks. Kinds, in turn:
//   - crash: nothing else; every acknowledged message and stored offset is
//     back, and the next offset continues above them;
//   - torn: a partial batch (a prefix of a real record, or garbage) is
//     appended to every partition's last segment, as a write the crash
//     tore; the restart cuts it (logged) and keeps everything acknowledged;
//   - power-loss: the replicated topic's unsynced tail is cut inside a
//     random acknowledged batch of one partition (the page cache a power
//     loss takes; synced data of the persisted topic stays), and every
//     reservation is marked as written in another boot; the torn part is
//     cut, the lost acknowledged offsets are never handed out again (the
//     next send lands above every offset ever acknowledged) and never
//     reappear.
func singletonCrashLoops(t *testing.T, rng *rand.Rand, loops int, tally *crashTally) {
	srv := startServer(t, "", "IGGY_PARTITION_SCRUB_BYTES_PER_SECOND=0")
	createCrashTopics(t, rootClient(t, srv.addr))
	m := newCrashModel()
	kinds := []string{"crash", "torn", "power-loss"}
	round := 0
	for loop := 0; loop < loops; loop++ {
		for _, kind := range kinds {
			round++
			killAfter := int64(20 + rng.Intn(150))
			delay := time.Duration(rng.Intn(20_000)) * time.Microsecond
			t.Logf("loop %d %s: kill after %d acknowledgements + %s", loop, kind, killAfter, delay)
			s := startCrashStream(t, func(tp) string { return srv.addr }, fmt.Sprintf("l%d-%s", loop, kind))
			s.waitAcks(killAfter)
			time.Sleep(delay)
			_ = srv.cmd.Process.Signal(syscall.SIGKILL)
			<-srv.exited
			tally.kills++
			s.stop(t, m, tally)

			tornBefore := strings.Count(srv.logs.String(), "truncating torn tail")
			tornWant := 0
			switch kind {
			case "torn":
				for _, k := range crashKeys() {
					if appendTornRecord(t, rng, lastSegment(t, crashPartitionDir(srv.dataDir, k))) {
						tornWant++
					}
				}
			case "power-loss":
				k := tp{1, uint32(rng.Intn(crashPartitions))} // the replicated topic
				lost, torn := cutUnsyncedTail(t, rng, crashPartitionDir(srv.dataDir, k), m, k)
				if torn {
					tornWant++
				}
				tally.lostOffsets += lost
				for _, k := range crashKeys() {
					rewriteReservationBoot(t, filepath.Join(crashPartitionDir(srv.dataDir, k), "offsets.reserved"),
						fmt.Sprintf("00000000-0000-0000-0000-%012d", round))
				}
			}

			srv.start()
			checkSingleton(t, srv, m, fmt.Sprintf("loop %d %s", loop, kind)) // opens every partition
			tornGot := strings.Count(srv.logs.String(), "truncating torn tail") - tornBefore
			// A SIGKILL can stop a write(2) part way, between two pages
			// (Linux checks for a fatal signal per page copied), or find a
			// batch staged and not adopted yet (unsealed: cut at the
			// restart), so a torn tail more than the test made is possible;
			// one fewer is not.
			if tornGot < tornWant {
				t.Fatalf("loop %d %s: %d torn tails cut at the restart, want %d", loop, kind, tornGot, tornWant)
			}
			if tornGot > tornWant {
				t.Logf("loop %d %s: %d torn tails cut at the restart, %d made by the test (the kill stopped a write part way, or a staged batch)",
					loop, kind, tornGot, tornWant)
			}
			tally.tornCut += tornGot
			if kind == "power-loss" {
				// The first append above the hole wrote its marker.
				markers := 0
				for _, k := range crashKeys()[crashPartitions:] {
					found, err := filepath.Glob(filepath.Join(crashPartitionDir(srv.dataDir, k), "*.lost"))
					must(t, err)
					markers += len(found)
				}
				if markers == 0 {
					t.Fatalf("loop %d: no .lost marker after the power loss", loop)
				}
			}
		}
		tally.loops++
	}
}

// appendTornRecord appends what a torn append leaves: a prefix of a real
// record (its own bytes, shorter than its length) or plain garbage. It
// reports whether it appended anything.
func appendTornRecord(t *testing.T, rng *rand.Rand, seg string) bool {
	t.Helper()
	b, err := os.ReadFile(seg)
	must(t, err)
	var tail []byte
	if batches := segmentBatches(t, seg); len(batches) > 0 && rng.Intn(2) == 0 {
		last := batches[len(batches)-1]
		n := 1 + rng.Intn(int(last.length)-1)
		tail = append(tail, b[last.pos:last.pos+uint64(n)]...)
	} else {
		tail = make([]byte, 1+rng.Intn(400))
		rng.Read(tail)
	}
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.Write(tail)
	must(t, err)
	must(t, f.Close())
	return true
}

// cutUnsyncedTail cuts a replicated partition's last segment inside (or at
// the start of) a random one of its last batches, as a power loss that
// took the page cache would leave it. The acknowledged offsets at and
// above the cut batch move from want to lost. It returns how many
// acknowledged offsets were lost and whether a partial record remains
// (a torn tail the restart must cut).
func cutUnsyncedTail(t *testing.T, rng *rand.Rand, dir string, m *crashModel, k tp) (int, bool) {
	t.Helper()
	seg := lastSegment(t, dir)
	batches := segmentBatches(t, seg)
	if len(batches) == 0 {
		return 0, false
	}
	cut := batches[len(batches)-1-rng.Intn(min(len(batches), 8))]
	keep := uint64(0)
	if rng.Intn(3) > 0 {
		keep = 1 + uint64(rng.Intn(int(cut.length)-1))
	}
	must(t, os.Truncate(seg, int64(cut.pos+keep)))
	lost := 0
	for off := range m.want[k] {
		if off >= cut.base {
			delete(m.want[k], off)
			m.lost[k][off] = true
			lost++
		}
	}
	t.Logf("power loss on %s: %s cut at byte %d (batch at offset %d, %d bytes of it kept), %d acknowledged offsets lost",
		k, filepath.Base(seg), cut.pos+keep, cut.base, keep, lost)
	return lost, keep > 0
}

// checkSingleton checks a restarted singleton against the model: every
// acknowledged message at its offset, no lost offset stored again, every
// stored consumer offset at least the acknowledged one, and a new send per
// partition above every offset ever acknowledged.
func checkSingleton(t *testing.T, srv *server, m *crashModel, what string) {
	t.Helper()
	c := rootClient(t, srv.addr)
	for _, k := range crashKeys() {
		got, err := pollEverything(t, c, k)
		must(t, err)
		if err := expectAcked(t, what, k, got, m); err != nil {
			t.Fatal(err)
		}
		if m.hasOff[k] {
			off, ok, err := storedOffset(t, c, k)
			must(t, err)
			if !ok || off < m.stored[k] {
				t.Fatalf("%s %s: stored consumer offset %d (present %v), acknowledged %d: it went backwards", what, k, off, ok, m.stored[k])
			}
		}
		msgs := makeMessages(fmt.Sprintf("%s-after-%s", strings.ReplaceAll(what, " ", "-"), k), 0, 1)
		conf := sendOK(t, c, id(0), id(k.topic), partitionID(k.partition), msgs)
		if m.any[k] && conf.BaseOffset <= m.highest[k] {
			t.Fatalf("%s %s: offset %d handed out again (offsets up to %d were acknowledged)", what, k, conf.BaseOffset, m.highest[k])
		}
		m.ack(t, k, conf.BaseOffset, []string{string(msgs[0].Payload)})
	}
}

// ---- cluster ----

// clusterCrashLoops: a 3-replica cluster; each loop runs the stream
// through each partition's primary and SIGKILLs, at a random moment:
//   - backup: one node that is no partition's primary (the stream goes on
//     2 of 3), restarted;
//   - primary: the primary of the first partition (the stream stops; the
//     survivors elect), restarted;
//   - all: every node, back to back, all restarted;
//   - damaged-backup: a backup, and before its restart one byte is flipped
//     inside a synced batch (not the last) of a persisted partition's
//     segment: the restart or the first read reports the damage (file and
//     offset) and the replica repairs the batch with a peer's copy.
//
// After each: every node serves every acknowledged message at its offset;
// the next send per partition lands above every acknowledged offset; every
// node's stored consumer offset is at least the acknowledged one; the
// segment files of all three nodes are byte-identical.
func clusterCrashLoops(t *testing.T, rng *rand.Rand, loops int, tally *crashTally) {
	c := startCluster(t, 3, "IGGY_PARTITION_SCRUB_BYTES_PER_SECOND=0")
	createCrashTopics(t, rootClient(t, c.addr(0)))
	for i := range c.nodes {
		for _, k := range crashKeys() {
			c.waitPartitionCountOf(i, k, 0, 30*time.Second)
		}
	}
	m := newCrashModel()
	for loop := 0; loop < loops; loop++ {
		for _, kind := range []string{"backup", "primary", "all", "damaged-backup"} {
			what := fmt.Sprintf("loop %d %s", loop, kind)
			roundStart := time.Now()
			primaries := c.crashPrimaries(m)
			var victims []int
			switch kind {
			case "backup", "damaged-backup":
				victims = []int{c.crashBackup(rng, primaries)}
			case "primary":
				victims = []int{primaries[crashKeys()[0]]}
			case "all":
				victims = []int{0, 1, 2}
			}
			killAfter := int64(20 + rng.Intn(150))
			delay := time.Duration(rng.Intn(20_000)) * time.Microsecond
			t.Logf("%s: primaries %v, kill %v after %d acknowledgements + %s", what, primaries, victims, killAfter, delay)
			s := startCrashStream(t, func(k tp) string { return c.addr(primaries[k]) }, fmt.Sprintf("l%d-%s", loop, kind))
			s.waitAcks(killAfter)
			time.Sleep(delay)
			for _, v := range victims {
				_ = c.nodes[v].cmd.Process.Signal(syscall.SIGKILL)
			}
			for _, v := range victims {
				<-c.nodes[v].exited
				tally.kills++
			}
			if kind == "backup" || kind == "damaged-backup" {
				// The stream goes on with 2 of 3 for a little while.
				s.waitAcks(s.acks.Load() + int64(10+rng.Intn(60)))
			}
			s.stop(t, m, tally)

			var damage string
			if kind == "damaged-backup" {
				damage = c.flipSyncedByte(t, rng, victims[0])
			}
			reportsBefore := damageReports(c.nodes[victims[0]].logs.String())
			for _, v := range victims {
				c.nodes[v].start()
			}
			for i := range c.nodes {
				c.waitCaughtUp(i, 60*time.Second)
			}
			c.checkCrashRound(t, m, what)
			if kind == "damaged-backup" {
				logs := c.nodes[victims[0]].logs.String()
				if damageReports(logs) <= reportsBefore {
					t.Fatalf("%s: node %d did not report the damage it was given (%s)", what, victims[0], damage)
				}
				if !strings.Contains(logs, damage) {
					t.Fatalf("%s: node %d's damage report does not name %s", what, victims[0], damage)
				}
				for _, line := range strings.Split(logs, "\n") {
					if strings.Contains(line, damage) {
						t.Logf("%s: node %d reported: %s", what, victims[0], line)
					}
				}
				tally.damageReports++
			}
			t.Logf("%s: checked in %.1f s", what, time.Since(roundStart).Seconds())
		}
		tally.loops++
	}
}

// damageReports counts a node's reports of damage it found and mended:
// a read that repaired a batch from a peer, or a partition open whose
// scan set the damage aside to refill it from the other replicas (a flip
// in the tail that the open scans).
func damageReports(logs string) int {
	return strings.Count(logs, "corrupt batch repaired from a peer") +
		strings.Count(logs, "partition log damaged: setting the damage aside")
}

// crashPrimaries finds each partition's primary: the node that accepts a
// send (recorded in the model as acknowledged).
func (c *testCluster) crashPrimaries(m *crashModel) map[tp]int {
	c.t.Helper()
	out := map[tp]int{}
	for _, k := range crashKeys() {
		msgs := makeMessages("probe-"+k.String(), 0, 1)
		node, conf := c.sendAnywhereTopic(k, msgs, 60*time.Second)
		m.ack(c.t, k, conf.BaseOffset, []string{string(msgs[0].Payload)})
		out[k] = node
	}
	return out
}

// crashBackup picks a node that is no partition's primary (random among
// them), or else a random node that is not the first partition's primary.
func (c *testCluster) crashBackup(rng *rand.Rand, primaries map[tp]int) int {
	var free, notFirst []int
	for i := range c.nodes {
		isPrimary := false
		for _, p := range primaries {
			isPrimary = isPrimary || p == i
		}
		if !isPrimary {
			free = append(free, i)
		}
		if i != primaries[crashKeys()[0]] {
			notFirst = append(notFirst, i)
		}
	}
	if len(free) > 0 {
		return free[rng.Intn(len(free))]
	}
	return notFirst[rng.Intn(len(notFirst))]
}

// flipSyncedByte flips one byte inside the payload of a batch of a
// persisted partition's segment on stopped node i: not the segment's last
// batch, so a verified batch follows and the damage is interior (what a
// synced byte gone bad looks like). It returns the log fragment that must
// name it (file and offset).
func (c *testCluster) flipSyncedByte(t *testing.T, rng *rand.Rand, i int) string {
	t.Helper()
	k := tp{0, uint32(rng.Intn(crashPartitions))} // the persisted topic
	seg := lastSegment(t, crashPartitionDir(c.nodes[i].dataDir, k))
	batches := segmentBatches(t, seg)
	if len(batches) < 2 {
		t.Fatalf("%s on node %d holds %d batches; want at least 2", k, i, len(batches))
	}
	b := batches[rng.Intn(len(batches)-1)]
	at := int64(b.pos + 256 + 48 + uint64(rng.Intn(8))) // the first message's payload
	flipInPlace(t, seg, at)
	t.Logf("damage: node %d %s %s byte %d (batch at offset %d)", i, k, filepath.Base(seg), at, b.base)
	return fmt.Sprintf("file=%s position=%d offset=%d", filepath.Base(seg), b.pos, b.base)
}

// checkCrashRound checks every node against the model after a round.
func (c *testCluster) checkCrashRound(t *testing.T, m *crashModel, what string) {
	t.Helper()
	// No offset re-issued: the next send per partition lands above every
	// acknowledged one (through whichever node is primary now).
	primaries := map[tp]int{}
	for _, k := range crashKeys() {
		msgs := makeMessages(fmt.Sprintf("%s-after-%s", strings.ReplaceAll(what, " ", "-"), k), 0, 1)
		node, conf := c.sendAnywhereTopic(k, msgs, 60*time.Second)
		if m.any[k] && conf.BaseOffset <= m.highest[k] {
			t.Fatalf("%s %s: offset %d handed out again (acknowledged up to %d)", what, k, conf.BaseOffset, m.highest[k])
		}
		m.ack(t, k, conf.BaseOffset, []string{string(msgs[0].Payload)})
		primaries[k] = node
	}
	for _, k := range crashKeys() {
		for i := range c.nodes {
			// A replica applies in order: wait until it holds everything
			// acknowledged (a missing one after 60 s fails).
			cl := rootClient(t, c.addr(i))
			deadline := time.Now().Add(60 * time.Second)
			for {
				got, err := pollEverything(t, cl, k)
				if err == nil {
					err = expectAcked(t, fmt.Sprintf("%s node %d", what, i), k, got, m)
				}
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			var err error
			if m.hasOff[k] {
				// The primary answers at once; a backup may still be applying.
				var off uint64
				var ok bool
				deadline := time.Now().Add(30 * time.Second)
				for {
					off, ok, err = storedOffset(t, cl, k)
					must(t, err)
					if (ok && off >= m.stored[k]) || i == primaries[k] || time.Now().After(deadline) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if !ok || off < m.stored[k] {
					t.Fatalf("%s node %d %s: stored consumer offset %d (present %v), acknowledged %d: it went backwards", what, i, k, off, ok, m.stored[k])
				}
			}
			cl.Close()
		}
		ref := primaries[k]
		for i := range c.nodes {
			if i == ref {
				continue
			}
			waitFor(t, fmt.Sprintf("%s: %s's segment files on node %d to match node %d's", what, k, i, ref), 60*time.Second,
				func() bool {
					return sameSegments(crashSegmentFiles(t, c.nodes[ref].dataDir, k), crashSegmentFiles(t, c.nodes[i].dataDir, k))
				})
		}
	}
}

// crashSegmentFiles reads a partition's segment files by name (nil when
// one vanished while reading).
func crashSegmentFiles(t *testing.T, dataDir string, k tp) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(crashPartitionDir(dataDir, k), "*.log"))
	must(t, err)
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// waitPartitionCountOf waits until node i serves at least want messages
// of a crash partition (0: until it serves the partition at all).
func (c *testCluster) waitPartitionCountOf(i int, k tp, want int, within time.Duration) {
	c.t.Helper()
	cl := rootClient(c.t, c.addr(i))
	defer cl.Close()
	deadline := time.Now().Add(within)
	for {
		got, err := pollEverything(c.t, cl, k)
		if err == nil && len(got) >= want {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d %s: %d messages after %s, want %d (last error %v)", i, k, len(got), within, want, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sendAnywhereTopic is sendAnywhere for a crash partition.
func (c *testCluster) sendAnywhereTopic(k tp, msgs []wire.BatchMessageInput, within time.Duration) (int, wire.SendConfirmation) {
	c.t.Helper()
	return c.sendAnywhereIn(k.topic, k.partition, msgs, -1, within, 5*time.Second, 5*time.Second)
}

// durableFrontier is the highest offset frontier a partition's durable
// state records: its superblock slots or its records in the node's
// superblock log (read without changing it, beside the running server).
func durableFrontier(t *testing.T, dataDir, pdir string, id journal.Identity) uint64 {
	t.Helper()
	var frontier uint64
	if _, st, err := journal.OpenSuperblock(pdir, id); err == nil && st != nil {
		frontier = st.OffsetFrontier
	}
	// .../streams/<s>/topics/<t>/partitions/<p>
	parts := strings.Split(filepath.ToSlash(pdir), "/")
	var want [3]uint32
	for i, name := range []string{parts[len(parts)-5], parts[len(parts)-3], parts[len(parts)-1]} {
		v, err := strconv.ParseUint(name, 10, 32)
		if err != nil {
			t.Fatalf("partition dir %s: %v", pdir, err)
		}
		want[i] = uint32(v)
	}
	states, _, err := journal.ReadSuperblockLog(filepath.Join(dataDir, "partition_groups"))
	if err != nil {
		t.Fatal(err)
	}
	for key, st := range states {
		if binary.LittleEndian.Uint32(key[0:]) == want[0] && binary.LittleEndian.Uint32(key[4:]) == want[1] &&
			binary.LittleEndian.Uint32(key[8:]) == want[2] && st.Identity == id {
			frontier = max(frontier, st.OffsetFrontier)
		}
	}
	return frontier
}

// TestClusterDamagedLastSyncedBatchIsReportedAsCorruption: the matrix's
// damaged-backup cell flips a byte in a synced batch that is not the last
// of its segment. Here it is the last. A cluster replica of a persisted
// topic syncs its segments before each checkpoint's superblock (the WAL
// holds what is above it), so a batch below the checkpoint's frontier was
// synced: a byte gone bad in it is damage to synced data, not a torn
// append, and must be reported as such (file and offset), never cut as a
// torn tail; the replica then repairs it with a peer's copy and ends
// byte-identical. 32 sends make op 32 a checkpoint (every 16 ops), whose
// frontier is the log's end. (Found by the crash matrix: before the
// replica opened its logs with the frontier, partitions/recovery.go cut
// such a batch as a torn tail.)
func TestClusterDamagedLastSyncedBatchIsReportedAsCorruption(t *testing.T) {
	c := startCluster(t, 3, "IGGY_PARTITION_SCRUB_BYTES_PER_SECOND=0")
	leader := rootClient(t, c.addr(0))
	createCrashTopics(t, leader)
	k := tp{0, 0} // persisted
	for i := 0; i < 32; i++ {
		sendOK(t, leader, id(0), id(k.topic), partitionID(k.partition), makeMessages("synced", 10*i, 10))
	}
	c.waitPartitionCountOf(2, k, 320, 30*time.Second)
	// Node 2 learns op 32 committed from the next commit heartbeat, then
	// checkpoints it (segments synced, superblock written with the frontier).
	pdir := crashPartitionDir(c.nodes[2].dataDir, k)
	id2 := journal.Identity{Cluster: bus.ClusterID("it-cluster"), ReplicaID: 2, ReplicaCount: 3}
	waitFor(t, "node 2's checkpoint to cover every batch", 60*time.Second, func() bool {
		return durableFrontier(t, c.nodes[2].dataDir, pdir, id2) >= 320
	})
	c.nodes[2].stop(syscall.SIGKILL)
	seg := lastSegment(t, crashPartitionDir(c.nodes[2].dataDir, k))
	batches := segmentBatches(t, seg)
	last := batches[len(batches)-1]
	flipInPlace(t, seg, int64(last.pos+256+48+2)) // the first message's payload
	c.nodes[2].start()
	c.waitCaughtUp(2, 60*time.Second)
	c.waitPartitionCountOf(2, k, 320, 60*time.Second)
	waitFor(t, "node 2's segment files to match node 0's", 60*time.Second, func() bool {
		return sameSegments(crashSegmentFiles(t, c.nodes[0].dataDir, k), crashSegmentFiles(t, c.nodes[2].dataDir, k))
	})
	logs := c.nodes[2].logs.String()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "torn tail") || strings.Contains(line, "damage") {
			t.Logf("node 2: %s", line)
		}
	}
	if strings.Contains(logs, "truncating torn tail") {
		t.Errorf("node 2 cut the damaged synced batch at offset %d of %s as a torn tail instead of reporting it as corruption", last.base, filepath.Base(seg))
	}
	if !strings.Contains(logs, fmt.Sprintf("offset=%d", last.base)) || !strings.Contains(logs, "corrupt batch repaired from a peer") {
		t.Errorf("node 2 did not report the damaged synced batch at offset %d as corruption", last.base)
	}
}
