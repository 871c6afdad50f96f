package node

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// reserveTestGroup is a cluster partition group reduced to what stamping
// reads: a primary in a view, the proposals it took (the ops it holds).
// Anything else it is asked panics (the embedded nil group).
type reserveTestGroup struct {
	drivenGroup
	view     uint32
	proposed []consensus.Request
}

func (g *reserveTestGroup) IsPrimary() bool             { return true }
func (g *reserveTestGroup) Status() consensus.Status    { return consensus.StatusNormal }
func (g *reserveTestGroup) View() uint32                { return g.view }
func (g *reserveTestGroup) Op() uint64                  { return uint64(len(g.proposed)) }
func (g *reserveTestGroup) SetNow(uint64)               {}
func (g *reserveTestGroup) Propose(r consensus.Request) { g.proposed = append(g.proposed, r) }

// reserveTestShard is one replica of a 3-replica cluster's shard holding a
// replicated topic's partition, primary of view 0, nothing written yet.
func reserveTestShard(t *testing.T) (*partitionShard, *partitionEntry, *reserveTestGroup) {
	t.Helper()
	s := newPartitionShard(slog.New(slog.NewTextHandler(io.Discard, nil)), partitionGroupConfig{prepareQueueDepth: 8, journalSlots: 32}, nil)
	s.replicaCount = 3
	dir := t.TempDir()
	l, err := partitions.Open(dir, partitions.Options{SegmentSizeBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	g := &reserveTestGroup{}
	e := &partitionEntry{group: g, shard: s, log: l, dir: dir}
	s.groups[e] = struct{}{}
	return s, e, g
}

// commitAll applies every proposal not yet applied as the committed ops of
// the view they were proposed in, as every replica would, and answers them.
func commitAll(t *testing.T, s *partitionShard, e *partitionEntry, g *reserveTestGroup, view uint32) {
	t.Helper()
	for op := e.appliedOp + 1; op <= g.Op(); op++ {
		r := g.proposed[op-1]
		p := consensus.Prepare{Header: consensus.PrepareHeader{Op: op, View: view, Operation: r.Operation}, Body: r.Body}
		if out, _ := s.apply(e, &p); out.code != wire.OK {
			t.Fatalf("op %d (%d) applied with %d", op, r.Operation, out.code)
		}
		e.appliedOp = op
		e.inflight--
	}
}

func sendBatch(t *testing.T, s *partitionShard, e *partitionEntry, count int) {
	t.Helper()
	msgs := make([]wire.BatchMessageInput, count)
	for i := range msgs {
		msgs[i] = wire.BatchMessageInput{Payload: []byte("m")}
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	s.admit(&partitionProposal{entry: e, op: wire.OpSendMessages, body: b})
	if len(e.backlog) != 0 {
		t.Fatal("the send waits in the backlog")
	}
}

// lastReserve decodes the newest reservation op the group was handed.
func lastReserve(t *testing.T, g *reserveTestGroup) (skipTo, upTo uint64) {
	t.Helper()
	for i := len(g.proposed) - 1; i >= 0; i-- {
		if wire.Operation(g.proposed[i].Operation) == partitionOpReserve {
			skipTo, upTo, ok := decodeReserveOp(g.proposed[i].Body)
			if !ok {
				t.Fatal("a malformed reservation op")
			}
			return skipTo, upTo
		}
	}
	t.Fatal("no reservation op proposed")
	return 0, 0
}

// TestReservationPrecedesStampsAndANewViewSkipsPastIt (issue 15 point 5):
// the first batch is proposed behind a reservation op; a primary of a new
// view resumes at the applied reservation, its first reservation op
// carrying the skip every replica applies (a .lost marker); a batch
// stamped beyond the applied reservation is refused on every replica.
func TestReservationPrecedesStampsAndANewViewSkipsPastIt(t *testing.T) {
	s, e, g := reserveTestShard(t)
	sendBatch(t, s, e, 3)
	if len(g.proposed) != 2 || wire.Operation(g.proposed[0].Operation) != partitionOpReserve {
		t.Fatalf("proposals %d, the first %d: want a reservation op, then the batch", len(g.proposed), g.proposed[0].Operation)
	}
	if skip, upTo := lastReserve(t, g); skip != 0 || upTo != 3+reserveChunkMin {
		t.Fatalf("first reservation: skip %d up to %d, want none up to %d", skip, upTo, 3+reserveChunkMin)
	}
	commitAll(t, s, e, g, 0)
	reserved := e.marker.OffsetsReserved
	if reserved != 3+reserveChunkMin || e.log.NextOffset() != 3 {
		t.Fatalf("applied: reservation %d, next offset %d", reserved, e.log.NextOffset())
	}
	if m, ok := readMarker(s.fsys, e.dir); !ok || m.OffsetsReserved != reserved {
		t.Fatalf("partition.meta holds reservation %d (ok %v), want %d", m.OffsetsReserved, ok, reserved)
	}

	// A failover: the primary of view 1 resumes at the reservation.
	g.view, e.stampValid = 1, false
	sendBatch(t, s, e, 2)
	if skip, _ := lastReserve(t, g); skip != reserved {
		t.Fatalf("the new view's first reservation skips to %d, want %d", skip, reserved)
	}
	commitAll(t, s, e, g, 1)
	if next := e.log.NextOffset(); next != reserved+2 {
		t.Fatalf("after the failover the log ends at %d, want %d (the batch at the reservation)", next, reserved+2)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "00000000000000000003.lost")); err != nil {
		t.Fatalf("the skipped offsets are not recorded: %v", err)
	}

	// A batch beyond the applied reservation (its reservation op never
	// committed ahead of it) is refused and changes nothing.
	beyond, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{Payload: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	next := e.log.NextOffset()
	if err := wire.StampBatch(beyond, 0, next, 1); err != nil {
		t.Fatal(err)
	}
	e.marker.OffsetsReserved = next // as if the reservation ended here
	p := consensus.Prepare{Header: consensus.PrepareHeader{Op: e.appliedOp + 1, View: 1, Operation: consensus.Operation(wire.OpSendMessages)}, Body: beyond}
	if out, wrote := s.apply(e, &p); out.code != wire.ErrTransientNotAccepted || wrote || e.log.NextOffset() != next {
		t.Fatalf("a batch beyond the reservation: code %d, wrote %v, next %d", out.code, wrote, e.log.NextOffset())
	}
}

// TestHandOverSettlesTheReservationFirst: before an orderly hand-over the
// primary shrinks its reservation to where its stamp is, holding new
// writes meanwhile, so the next primary resumes with no hole.
func TestHandOverSettlesTheReservationFirst(t *testing.T) {
	s, e, g := reserveTestShard(t)
	sendBatch(t, s, e, 5)
	commitAll(t, s, e, g, 0)
	now := time.Unix(1000, 0)
	if s.reservationSettled(e, now) {
		t.Fatal("settled with the reservation above the log's end")
	}
	if skip, upTo := lastReserve(t, g); skip != 0 || upTo != 5 {
		t.Fatalf("the settling op: skip %d up to %d, want none up to 5", skip, upTo)
	}
	if s.stampReady(e) {
		t.Fatal("the primary stamps while its reservation settles")
	}
	commitAll(t, s, e, g, 0)
	if !s.reservationSettled(e, now) {
		t.Fatal("not settled once the exact reservation applied")
	}
	// The next primary resumes exactly where the log ends.
	e.handoverUntil = 0 // align clears it when it hands over
	g.view, e.stampValid = 1, false
	sendBatch(t, s, e, 1)
	if skip, _ := lastReserve(t, g); skip != 0 {
		t.Fatalf("after a hand-over the new view skips to %d, want no skip", skip)
	}
	commitAll(t, s, e, g, 1)
	if next := e.log.NextOffset(); next != 6 {
		t.Fatalf("after the hand-over the log ends at %d, want 6 (no hole)", next)
	}
}

func TestReserveOpCodec(t *testing.T) {
	for _, c := range []struct{ skip, upTo uint64 }{{0, 64}, {70, 200}, {5, 5}} {
		skip, upTo, ok := decodeReserveOp(encodeReserveOp(c.skip, c.upTo))
		if !ok || skip != c.skip || upTo != c.upTo {
			t.Fatalf("%v: decoded %d %d %v", c, skip, upTo, ok)
		}
	}
	if _, _, ok := decodeReserveOp(encodeReserveOp(9, 3)); ok {
		t.Fatal("a skip above the reservation decoded")
	}
	if _, _, ok := decodeReserveOp(make([]byte, 15)); ok {
		t.Fatal("15 bytes decoded")
	}
}

// TestIdleGroupShrinksItsReservationBeforeResting: a burst grows the
// chunk; before the quiet group rests its primary shrinks the reservation
// to reserveChunkMin above the log's end (an idle partition's failover
// then skips at most that), once, and never before its view reserved.
func TestIdleGroupShrinksItsReservationBeforeResting(t *testing.T) {
	s, e, g := reserveTestShard(t)
	e.primary.Store(true)
	sendBatch(t, s, e, 70)
	sendBatch(t, s, e, 70) // past the first chunk within a second: the next one is 8 times larger
	commitAll(t, s, e, g, 0)
	next := e.log.NextOffset()
	if e.marker.OffsetsReserved <= next+reserveChunkMin {
		t.Fatalf("reservation %d after the burst, want it grown past %d", e.marker.OffsetsReserved, next+reserveChunkMin)
	}
	if !s.shrinkBeforeRest(e) {
		t.Fatal("no shrink before resting")
	}
	commitAll(t, s, e, g, 0)
	if e.marker.OffsetsReserved != next+reserveChunkMin {
		t.Fatalf("reservation %d after the shrink, want %d", e.marker.OffsetsReserved, next+reserveChunkMin)
	}
	if s.shrinkBeforeRest(e) {
		t.Fatal("shrunk again though the reservation is already small")
	}
	// A new view has not reserved yet: its reservation guards offsets the
	// last one handed out, so it is never shrunk.
	g.view, e.stampValid = 1, false
	e.marker.OffsetsReserved = next + 10*reserveChunkMin
	if s.shrinkBeforeRest(e) {
		t.Fatal("a view that reserved nothing shrank the reservation")
	}
}
