package nemesis

import (
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// A small synthetic history: producer A0 sent batches 0..3 to partition 0
// (batch 3 failed once, then acknowledged), all acknowledged at dense
// offsets; a consumer polled offsets 0..2; the group stored offset 2.
func syntheticRun() (*History, *Replicas, map[int]map[uint32]*wire.ConsumerOffset) {
	h := NewHistory(16)
	var log []uint64
	var origins []origin
	for seq := 0; seq < 4; seq++ {
		b := &Batch{Producer: "A0", Seq: seq, N: 2, Kind: LeaderAware}
		h.NewBatch(b)
		if seq == 3 {
			h.Attempt(b, false, 0, 0)
		}
		h.Attempt(b, true, uint64(len(log)), 0)
		for i := 0; i < b.N; i++ {
			log = append(log, hashOf(h.Payload(b, i)))
			origins = append(origins, origin{b: b, i: int32(i)})
		}
	}
	for off := 0; off < 3; off++ {
		o := origins[off]
		h.Polled(0, uint64(off), h.Payload(o.b, int(o.i)))
	}
	h.OffsetStored(0, 2)
	rs := &Replicas{Hashes: map[int]map[uint32][]uint64{}, Origins: map[uint32][]origin{0: origins}}
	offsets := map[int]map[uint32]*wire.ConsumerOffset{}
	for n := 0; n < 3; n++ {
		rs.Hashes[n] = map[uint32][]uint64{0: append([]uint64(nil), log...)}
		offsets[n] = map[uint32]*wire.ConsumerOffset{0: {StoredOffset: 2}}
	}
	return h, rs, offsets
}

// TestCheckerPassesACleanRun and TestCheckerCatches: each checker fails on
// the history or replicas of a deliberately broken run.
func TestCheckerPassesACleanRun(t *testing.T) {
	h, rs, offsets := syntheticRun()
	if r := Check(h, rs, offsets, 1, true); len(r.Violations) != 0 {
		t.Fatalf("clean run: %v", r.Violations)
	}
}

// TestCheckerAcceptsSkippedHoles: a hole a new primary skipped (never
// handed out) between acknowledged batches is no violation.
func TestCheckerAcceptsSkippedHoles(t *testing.T) {
	h, rs, offsets := syntheticRun()
	b := &Batch{Producer: "A0", Seq: 4, N: 2, Kind: LeaderAware}
	h.NewBatch(b)
	base := uint64(len(rs.Hashes[0][0]) + 3)
	h.Attempt(b, true, base, 0)
	for n := range rs.Hashes {
		rs.Hashes[n][0] = append(rs.Hashes[n][0], holeHash, holeHash, holeHash, hashOf(h.Payload(b, 0)), hashOf(h.Payload(b, 1)))
	}
	rs.Origins[0] = append(rs.Origins[0], origin{hole: true}, origin{hole: true}, origin{hole: true}, origin{b: b, i: 0}, origin{b: b, i: 1})
	r := Check(h, rs, offsets, 1, true)
	if len(r.Violations) != 0 {
		t.Fatalf("a run with a skipped hole: %v", r.Violations)
	}
	if r.Messages[0] != 10 {
		t.Fatalf("%d messages counted, want 10 (holes are not messages)", r.Messages[0])
	}
}

func TestCheckerCatches(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(h *History, rs *Replicas, offsets map[int]map[uint32]*wire.ConsumerOffset)
		want   string
	}{
		{"an acknowledged message lost on one replica", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			rs.Hashes[2][0] = rs.Hashes[2][0][:len(rs.Hashes[2][0])-1]
		}, "acknowledged message lost"},
		{"an acknowledged message moved", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			for n := range rs.Hashes {
				l := rs.Hashes[n][0]
				l[0], l[1] = l[1], l[0]
			}
		}, "acknowledged message moved"},
		{"replicas differ", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			rs.Hashes[1][0][3] ^= 1
		}, "replicas differ"},
		{"an offset acknowledged twice", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			b := h.batches[1]
			b.Acks = append(b.Acks, 0)
		}, "offset reused"},
		{"a duplicate without a re-send", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			b := h.batches[0]
			for n := range rs.Hashes {
				rs.Hashes[n][0] = append(rs.Hashes[n][0], hashOf(h.Payload(b, 0)), hashOf(h.Payload(b, 1)))
			}
			rs.Origins[0] = append(rs.Origins[0], origin{b: b, i: 0}, origin{b: b, i: 1})
		}, "duplicate without a re-send"},
		{"a second copy under exactly-once", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			b := h.batches[3] // failed once: a copy is allowed at-least-once, not exactly-once
			for n := range rs.Hashes {
				rs.Hashes[n][0] = append(rs.Hashes[n][0], hashOf(h.Payload(b, 0)), hashOf(h.Payload(b, 1)))
			}
			rs.Origins[0] = append(rs.Origins[0], origin{b: b, i: 0}, origin{b: b, i: 1})
		}, "too many copies"},
		{"a second copy after a 58 (never admitted)", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			b := h.batches[2]
			h.Refused(b)
			for n := range rs.Hashes {
				rs.Hashes[n][0] = append(rs.Hashes[n][0], hashOf(h.Payload(b, 0)), hashOf(h.Payload(b, 1)))
			}
			rs.Origins[0] = append(rs.Origins[0], origin{b: b, i: 0}, origin{b: b, i: 1})
		}, "duplicate without a re-send"},
		{"a copy of a batch never acknowledged and only refused", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			b := &Batch{Producer: "B0", Seq: 0, N: 1, Kind: SDKStyle}
			h.NewBatch(b)
			h.Refused(b)
			for n := range rs.Hashes {
				rs.Hashes[n][0] = append(rs.Hashes[n][0], hashOf(h.Payload(b, 0)))
			}
			rs.Origins[0] = append(rs.Origins[0], origin{b: b, i: 0})
		}, "too many copies"},
		{"an acknowledged message in a skipped hole", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			for n := range rs.Hashes {
				rs.Hashes[n][0][5] = holeHash
			}
			rs.Origins[0][5] = origin{hole: true}
		}, "in a hole"},
		{"a phantom message", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			for n := range rs.Hashes {
				rs.Hashes[n][0] = append(rs.Hashes[n][0], 42)
			}
			rs.Origins[0] = append(rs.Origins[0], origin{})
		}, "phantom message"},
		{"a batch stored in part", func(h *History, rs *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			b := h.batches[3]
			for n := range rs.Hashes {
				rs.Hashes[n][0] = append(rs.Hashes[n][0], hashOf(h.Payload(b, 0)))
			}
			rs.Origins[0] = append(rs.Origins[0], origin{b: b, i: 0})
		}, "batch partially stored"},
		{"a poll of uncommitted data", func(h *History, _ *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			h.polled[0][1] = 7
		}, "poll returned uncommitted data"},
		{"a poll beyond the log", func(h *History, _ *Replicas, _ map[int]map[uint32]*wire.ConsumerOffset) {
			h.polled[0][100] = 7
		}, "not in the log"},
		{"an acknowledged consumer offset lost", func(h *History, _ *Replicas, offsets map[int]map[uint32]*wire.ConsumerOffset) {
			for n := range offsets {
				offsets[n][0] = &wire.ConsumerOffset{StoredOffset: 1}
			}
		}, "acknowledged consumer offset lost"},
		{"consumer offsets differ", func(h *History, _ *Replicas, offsets map[int]map[uint32]*wire.ConsumerOffset) {
			offsets[1][0] = &wire.ConsumerOffset{StoredOffset: 3}
		}, "consumer offset differs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rs, offsets := syntheticRun()
			tc.break_(h, rs, offsets)
			r := Check(h, rs, offsets, 1, true)
			for _, v := range r.Violations {
				if strings.Contains(v, tc.want) {
					return
				}
			}
			t.Fatalf("want a %q violation, got %q", tc.want, r.Violations)
		})
	}
}

// TestHistoryCatchesOffsetRegression: a node's stored offset going back
// within one process's life is a violation; after a restart it is noted.
func TestHistoryCatchesOffsetRegression(t *testing.T) {
	h := NewHistory(16)
	h.OffsetRead(0, 1, 0, 10)
	h.OffsetRead(0, 2, 0, 8)
	if len(h.Violations()) != 0 || len(h.Summary().CrossRestartOffsetDrops) != 1 {
		t.Fatalf("across a restart: violations %v, noted %v", h.Violations(), h.Summary().CrossRestartOffsetDrops)
	}
	h.OffsetRead(0, 2, 0, 7)
	if v := h.Violations(); len(v) != 1 || !strings.Contains(v[0], "went back") {
		t.Fatalf("within one incarnation: %v", v)
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, size := range []int{0, 8, 64} {
		p := payloadOf("B3", 12345, 4, size)
		name, seq, i, ok := parseTag(p)
		if !ok || name != "B3" || seq != 12345 || i != 4 || (size > 12 && len(p) != size) {
			t.Fatalf("size %d: %q -> %q %d %d %v", size, p, name, seq, i, ok)
		}
	}
}
