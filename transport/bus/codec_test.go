package bus

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/consensus"
)

var update = flag.Bool("update", false, "rewrite testdata/golden and the committed fuzz seeds")

var testCluster = consensus.Uint128{Lo: 0x0807060504030201, Hi: 0x100f0e0d0c0b0a09}

const (
	metaGroup = uint64(1) << 63
	partGroup = uint64(1)<<32 | 2<<20 | 3 // stream 1, topic 2, partition 3
	testTS    = uint64(1_700_000_000_123_456)
)

// spec builds an expected frame byte by byte from server-design §2 offsets,
// independently of the codec.
type spec struct {
	h    [HeaderBytes]byte
	body []byte
}

func (s *spec) u8(off int, v uint8)   { s.h[off] = v }
func (s *spec) u32(off int, v uint32) { le.PutUint32(s.h[off:], v) }
func (s *spec) u64(off int, v uint64) { le.PutUint64(s.h[off:], v) }
func (s *spec) u128(off int, lo, hi uint64) {
	le.PutUint64(s.h[off:], lo)
	le.PutUint64(s.h[off+8:], hi)
}

// common writes cluster (32), size (48), view (52), command (60), replica (61).
func (s *spec) common(view uint32, cmd uint8, replica uint8) {
	s.u128(32, testCluster.Lo, testCluster.Hi)
	s.u32(48, uint32(HeaderBytes+len(s.body)))
	s.u32(52, view)
	s.u8(60, cmd)
	s.u8(61, replica)
}

// frame stamps checksum_body (16) and, for sealed frames, the seal at 0 =
// XXH3-64(bytes 16..256).
func (s *spec) frame(sealedFrame, stampEmptyBody bool) []byte {
	if len(s.body) > 0 || stampEmptyBody {
		s.u128(16, xxh3.Hash(s.body), 0)
	}
	if sealedFrame {
		s.u128(0, xxh3.Hash(s.h[16:]), 0)
	}
	return append(s.h[:], s.body...)
}

// prepareFields writes a prepare header's fields at the §2.2 Prepare offsets
// plus ours (228 prepare view, 232 session).
func (s *spec) prepareFields(p *consensus.PrepareHeader, group uint64) {
	s.u128(0, p.Checksum, 0)
	s.u128(128, p.Client.Lo, p.Client.Hi)
	s.u128(144, p.Parent, 0)
	s.u128(160, p.ReqSum, 0)
	s.u64(176, p.Op)
	s.u64(184, p.Commit)
	s.u64(192, p.Timestamp)
	s.u64(200, p.Request)
	s.u8(208, uint8(p.Operation))
	s.u64(216, group)
	s.u32(224, p.UserID)
	s.u32(228, p.View)
	s.u64(232, p.Session)
}

// suffixEntry is a DVC/StartView suffix entry: the prepare's header with its
// own view at 52 and 228, command 6, cluster and group; the rest zero.
func suffixEntry(p *consensus.PrepareHeader, group uint64) []byte {
	var e spec
	e.prepareFields(p, group)
	e.u128(32, testCluster.Lo, testCluster.Hi)
	e.u32(52, p.View)
	e.u8(60, 6)
	return e.h[:]
}

func samplePrepare() consensus.Prepare {
	return consensus.Prepare{
		Header: consensus.PrepareHeader{
			View: 5, Op: 42, Commit: 40, Timestamp: testTS, Parent: 0xAAAA_BBBB_CCCC_DDDD,
			Checksum: 0x1111_2222_3333_4444, Client: consensus.Uint128{Lo: 0xC1, Hi: 0xC2},
			Session: 9, Request: 10, ReqSum: 0xBEEF, Operation: 128, UserID: 3,
		},
		Body: []byte("hello"),
	}
}

var (
	sampleNonce       = consensus.Uint128{Lo: 0x0123_4567_89AB_CDEF, Hi: 0xFEDC_BA98_7654_3210}
	sampleIncarnation = consensus.Uint128{Lo: 0x1C, Hi: 0x2C}
)

type goldenCase struct {
	name string
	msg  consensus.Message
	want func() []byte
}

func goldenCases() []goldenCase {
	p := samplePrepare()
	blank := consensus.PrepareHeader{Op: 41} // released op: Checksum 0
	suffix := []consensus.PrepareHeader{p.Header, blank}
	return []goldenCase{
		{"prepare", consensus.Message{Kind: consensus.MsgPrepare, Group: metaGroup, From: 2, View: 7, Prepare: &p},
			func() []byte {
				s := spec{body: []byte("hello")}
				s.prepareFields(&p.Header, metaGroup)
				s.common(7, 6, 2)
				return s.frame(false, true)
			}},
		{"repair_prepare", consensus.Message{Kind: consensus.MsgRepairPrepare, Group: partGroup, From: 0, View: 7, Prepare: &p, Nonce: sampleNonce},
			func() []byte {
				s := spec{body: []byte("hello")}
				s.prepareFields(&p.Header, partGroup)
				s.u128(240, sampleNonce.Lo, sampleNonce.Hi)
				s.common(7, 19, 0)
				return s.frame(false, true)
			}},
		{"prepare_ok", consensus.Message{Kind: consensus.MsgPrepareOk, Group: metaGroup, From: 1, View: 7, CommitMax: 39,
			Prepare: &consensus.Prepare{Header: consensus.PrepareHeader{Op: 42, Checksum: p.Header.Checksum,
				Parent: p.Header.Parent, Timestamp: testTS, Request: 10, Operation: 128}}},
			func() []byte {
				var s spec
				s.u128(128, p.Header.Parent, 0)
				s.u128(144, p.Header.Checksum, 0)
				s.u64(160, 42)
				s.u64(168, 39)
				s.u64(176, testTS)
				s.u64(184, 10)
				s.u8(192, 128)
				s.u64(200, metaGroup)
				s.common(7, 7, 1)
				return s.frame(true, false)
			}},
		{"commit", consensus.Message{Kind: consensus.MsgCommit, Group: partGroup, From: 0, View: 7, CommitMin: 41, HeartbeatCounter: 77},
			func() []byte {
				var s spec
				s.u64(144, 77)
				s.u64(152, 41)
				s.u64(168, partGroup)
				s.common(7, 9, 0)
				return s.frame(true, false)
			}},
		{"start_view_change", consensus.Message{Kind: consensus.MsgStartViewChange, Group: metaGroup, From: 2, View: 8},
			func() []byte {
				var s spec
				s.u64(128, metaGroup)
				s.common(8, 10, 2)
				return s.frame(true, false)
			}},
		{"start_view_change_repairing", consensus.Message{Kind: consensus.MsgStartViewChange, Group: partGroup, From: 2, View: 8, RepairProgress: 37},
			func() []byte {
				var s spec
				s.u64(128, partGroup)
				s.u64(144, 37)
				s.common(8, 10, 2)
				return s.frame(true, false)
			}},
		{"do_view_change", consensus.Message{Kind: consensus.MsgDoViewChange, Group: metaGroup, From: 2, View: 8,
			HeadOp: 42, CommitOp: 40, LogView: 7, Suffix: suffix,
			Nack: consensus.Uint128{Lo: 0b10}, Present: consensus.Uint128{Lo: 0b01}},
			func() []byte {
				s := spec{body: append(suffixEntry(&p.Header, metaGroup), suffixEntry(&blank, metaGroup)...)}
				s.u64(128, 42)
				s.u64(136, 40)
				s.u64(144, metaGroup)
				s.u32(152, 7)
				s.u128(224, 0b10, 0)
				s.u128(240, 0b01, 0)
				s.common(8, 11, 2)
				return s.frame(true, false)
			}},
		{"start_view", consensus.Message{Kind: consensus.MsgStartView, Group: metaGroup, From: 1, View: 9,
			HeadOp: 42, CommitOp: 42, Suffix: suffix[:1], Incarnation: sampleIncarnation},
			func() []byte {
				s := spec{body: suffixEntry(&p.Header, metaGroup)}
				s.u64(128, 42)
				s.u64(136, 42)
				s.u64(144, metaGroup)
				s.u128(240, sampleIncarnation.Lo, sampleIncarnation.Hi)
				s.common(9, 12, 1)
				return s.frame(true, false)
			}},
		{"request_start_view", consensus.Message{Kind: consensus.MsgRequestStartView, Group: partGroup, From: 2, View: 9, Incarnation: sampleIncarnation},
			func() []byte {
				var s spec
				s.u64(128, partGroup)
				s.u128(240, sampleIncarnation.Lo, sampleIncarnation.Hi)
				s.common(9, 17, 2)
				return s.frame(true, false)
			}},
		{"request_prepares", consensus.Message{Kind: consensus.MsgRequestPrepares, Group: metaGroup, From: 2, View: 9, FromOp: 10, ToOp: 20, Nonce: sampleNonce},
			func() []byte {
				var s spec
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, 10)
				s.u64(152, 20)
				s.u64(160, metaGroup)
				s.common(9, 18, 2)
				return s.frame(true, false)
			}},
		{"repair_done", consensus.Message{Kind: consensus.MsgRepairDone, Group: metaGroup, From: 0, View: 9, LastServedOp: 20, Nonce: sampleNonce},
			func() []byte {
				var s spec
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, 20)
				s.u64(152, metaGroup)
				s.common(9, 20, 0)
				return s.frame(true, false)
			}},
		{"range_evicted", consensus.Message{Kind: consensus.MsgRangeEvicted, Group: metaGroup, From: 0, View: 9, FirstRetainedOp: 15, Nonce: sampleNonce},
			func() []byte {
				var s spec
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, 15)
				s.u64(152, metaGroup)
				s.common(9, 21, 0)
				return s.frame(true, false)
			}},
		{"request_state_transfer", consensus.Message{Kind: consensus.MsgRequestStateTransfer, Group: partGroup, From: 2, View: 9, Nonce: sampleNonce},
			func() []byte {
				var s spec
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, partGroup)
				s.common(9, 22, 2)
				return s.frame(true, false)
			}},
		{"state_transfer_target", consensus.Message{Kind: consensus.MsgStateTransferTarget, Group: partGroup, From: 0, View: 9,
			Nonce: sampleNonce, Available: true, SnapshotOp: 30, SnapshotSizeBytes: 4096, SnapshotChecksum: 0x5A5A, AnchorTimestamp: testTS,
			Prepare: &consensus.Prepare{Header: consensus.PrepareHeader{Op: 30, Checksum: 0x7777, Timestamp: testTS}}},
			func() []byte {
				var manifest [32]byte
				le.PutUint64(manifest[0:], 4096)
				le.PutUint64(manifest[8:], 0x5A5A)
				le.PutUint64(manifest[16:], testTS)
				le.PutUint64(manifest[24:], 0x7777)
				s := spec{body: manifest[:]}
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, 30)
				s.u64(152, partGroup)
				s.u8(160, 1)
				s.common(9, 23, 0)
				return s.frame(true, false)
			}},
		{"state_transfer_target_unavailable", consensus.Message{Kind: consensus.MsgStateTransferTarget, Group: partGroup, From: 0, View: 9, Nonce: sampleNonce},
			func() []byte {
				var s spec
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(152, partGroup)
				s.common(9, 23, 0)
				return s.frame(true, false)
			}},
		{"request_state_chunk", consensus.Message{Kind: consensus.MsgRequestStateChunk, Group: partGroup, From: 2, View: 9,
			Nonce: sampleNonce, SnapshotOp: 30, ChunkOffset: 1024, ChunkLengthBytes: 512},
			func() []byte {
				var s spec
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, 1024)
				s.u64(152, partGroup)
				s.u32(160, 512)
				s.u64(168, 30)
				s.common(9, 24, 2)
				return s.frame(true, false)
			}},
		{"state_chunk", consensus.Message{Kind: consensus.MsgStateChunk, Group: partGroup, From: 0, View: 9,
			Nonce: sampleNonce, SnapshotOp: 30, ChunkOffset: 1024, Available: true, ChunkData: []byte("chunk")},
			func() []byte {
				s := spec{body: []byte("chunk")}
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, 1024)
				s.u64(152, partGroup)
				s.u8(164, 1)
				s.u64(168, 30)
				s.common(9, 25, 0)
				return s.frame(true, false)
			}},
		{"state_chunk_unavailable", consensus.Message{Kind: consensus.MsgStateChunk, Group: partGroup, From: 0, View: 9,
			Nonce: sampleNonce, SnapshotOp: 30, ChunkOffset: 1024},
			func() []byte {
				var s spec
				s.u128(128, sampleNonce.Lo, sampleNonce.Hi)
				s.u64(144, 1024)
				s.u64(152, partGroup)
				s.u64(168, 30)
				s.common(9, 25, 0)
				return s.frame(true, false)
			}},
	}
}

// TestGoldenFrames: every kind encodes to the bytes the spec's offsets give
// (built independently above), matches the committed hex in
// testdata/golden, and decodes back to the message.
func TestGoldenFrames(t *testing.T) {
	c := NewCodec(testCluster)
	kinds := map[consensus.MessageKind]bool{}
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			kinds[tc.msg.Kind] = true
			got, err := c.Encode(nil, &tc.msg)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			want := tc.want()
			if i := firstDiff(want, got); len(got) != len(want) || i >= 0 {
				t.Fatalf("encoded frame differs from the spec layout at byte %d (len got %d want %d)\ngot  %x\nwant %x", i, len(got), len(want), got, want)
			}
			path := filepath.Join("testdata", "golden", tc.name+".hex")
			if *update {
				writeHex(t, path, got)
			}
			committed := readHex(t, path)
			if !bytes.Equal(committed, got) {
				t.Fatalf("encoded frame differs from %s (run with -update after a deliberate layout change)", path)
			}
			checkSplit(t, c, &tc.msg, got)
			m, err := c.Decode(got)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(m, tc.msg) {
				t.Fatalf("decode mismatch\ngot  %+v\nwant %+v", m, tc.msg)
			}
		})
	}
	for _, k := range allKinds {
		if !kinds[k] {
			t.Errorf("kind %d has no golden frame", k)
		}
	}
}

var allKinds = []consensus.MessageKind{
	consensus.MsgPrepare, consensus.MsgPrepareOk, consensus.MsgCommit, consensus.MsgStartViewChange,
	consensus.MsgDoViewChange, consensus.MsgStartView, consensus.MsgRequestStartView, consensus.MsgRequestPrepares,
	consensus.MsgRepairPrepare, consensus.MsgRepairDone, consensus.MsgRangeEvicted, consensus.MsgRequestStateTransfer,
	consensus.MsgStateTransferTarget, consensus.MsgRequestStateChunk, consensus.MsgStateChunk,
}

func writeHex(t *testing.T, path string, b []byte) {
	t.Helper()
	var sb strings.Builder
	for i := 0; i < len(b); i += 32 {
		sb.WriteString(hex.EncodeToString(b[i:min(i+32, len(b))]))
		sb.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readHex(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden: %v (run with -update to create it)", err)
	}
	b, err := hex.DecodeString(strings.ReplaceAll(string(raw), "\n", ""))
	if err != nil {
		t.Fatalf("golden %s: %v", path, err)
	}
	return b
}

// randomMessage draws a message of kind k carrying only the fields that
// kind carries (the shape Decode returns).
func randomMessage(r *rand.Rand, k consensus.MessageKind) consensus.Message {
	u128 := func() consensus.Uint128 { return consensus.Uint128{Lo: r.Uint64(), Hi: r.Uint64()} }
	bytesN := func(n int) []byte {
		if n == 0 {
			return nil
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	header := func() consensus.PrepareHeader {
		return consensus.PrepareHeader{View: r.Uint32(), Op: r.Uint64(), Commit: r.Uint64(), Timestamp: r.Uint64(),
			Parent: r.Uint64(), Checksum: r.Uint64(), Client: u128(), Session: r.Uint64(), Request: r.Uint64(),
			ReqSum: r.Uint64(), Operation: consensus.Operation(r.Uint32()), UserID: r.Uint32()}
	}
	suffix := func() []consensus.PrepareHeader {
		n := r.IntN(6)
		if r.IntN(20) == 0 {
			n = SuffixHeadersMax
		}
		if n == 0 {
			return nil
		}
		hs := make([]consensus.PrepareHeader, n)
		for i := range hs {
			hs[i] = header()
		}
		return hs
	}
	m := consensus.Message{Kind: k, Group: r.Uint64(), From: uint8(r.IntN(32)), View: r.Uint32()}
	switch k {
	case consensus.MsgPrepare, consensus.MsgRepairPrepare:
		h := header()
		h.Op = max(h.Op, 1)
		m.Prepare = &consensus.Prepare{Header: h, Body: bytesN(r.IntN(64))}
		if k == consensus.MsgRepairPrepare {
			m.Nonce = u128()
		}
	case consensus.MsgPrepareOk:
		m.Prepare = &consensus.Prepare{Header: consensus.PrepareHeader{Op: r.Uint64(), Checksum: r.Uint64(),
			Parent: r.Uint64(), Timestamp: r.Uint64(), Request: r.Uint64(), Operation: consensus.Operation(r.Uint32())}}
		m.CommitMax = r.Uint64()
	case consensus.MsgCommit:
		m.CommitMin, m.HeartbeatCounter = r.Uint64(), r.Uint64()
	case consensus.MsgStartViewChange:
	case consensus.MsgDoViewChange:
		m.HeadOp = r.Uint64()
		m.CommitOp = r.Uint64N(m.HeadOp + 1)
		m.LogView = r.Uint32N(m.View + 1)
		if m.View == ^uint32(0) {
			m.LogView = m.View
		}
		m.Suffix = suffix()
		mask := bitsFrom(len(m.Suffix))
		m.Nack = consensus.Uint128{Lo: r.Uint64() &^ mask.Lo, Hi: r.Uint64() &^ mask.Hi}
		m.Present = consensus.Uint128{Lo: r.Uint64() &^ mask.Lo, Hi: r.Uint64() &^ mask.Hi}
	case consensus.MsgStartView:
		m.HeadOp = r.Uint64()
		m.CommitOp = r.Uint64N(m.HeadOp + 1)
		if m.HeadOp == ^uint64(0) {
			m.CommitOp = m.HeadOp
		}
		m.Suffix = suffix()
		m.Incarnation = u128()
	case consensus.MsgRequestStartView:
		m.Incarnation = u128()
		m.ViewUnknown, m.ProbeAnswer = r.IntN(2) == 0, r.IntN(2) == 0
	case consensus.MsgRequestStateTransfer:
		m.Nonce = u128()
	case consensus.MsgRequestPrepares:
		m.Nonce = u128()
		m.FromOp = 1 + r.Uint64N(1<<40)
		m.ToOp = m.FromOp + r.Uint64N(1<<20)
	case consensus.MsgRepairDone:
		m.Nonce, m.LastServedOp = u128(), r.Uint64()
	case consensus.MsgRangeEvicted:
		m.Nonce, m.FirstRetainedOp = u128(), r.Uint64()
	case consensus.MsgStateTransferTarget:
		m.Nonce, m.SnapshotOp, m.Available = u128(), r.Uint64(), r.IntN(2) == 0
		if m.Available {
			m.SnapshotSizeBytes, m.SnapshotChecksum, m.AnchorTimestamp = r.Uint64(), r.Uint64(), r.Uint64()
			m.Prepare = &consensus.Prepare{Header: consensus.PrepareHeader{Op: m.SnapshotOp, Checksum: r.Uint64(), Timestamp: m.AnchorTimestamp}}
		}
	case consensus.MsgRequestStateChunk:
		m.Nonce, m.SnapshotOp, m.ChunkOffset, m.ChunkLengthBytes = u128(), r.Uint64(), r.Uint64(), 1+r.Uint32N(1<<20)
	case consensus.MsgStateChunk:
		m.Nonce, m.SnapshotOp, m.ChunkOffset, m.Available = u128(), r.Uint64(), r.Uint64(), r.IntN(2) == 0
		if m.Available {
			m.ChunkData = bytesN(r.IntN(64))
		}
	}
	return m
}

// TestRoundTripRandom: for random messages of every kind, Decode(Encode(m))
// == m and re-encoding the decoded message gives the same bytes.
func TestRoundTripRandom(t *testing.T) {
	c := NewCodec(testCluster)
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 300 {
		for _, k := range allKinds {
			m := randomMessage(r, k)
			frame, err := c.Encode(nil, &m)
			if err != nil {
				t.Fatalf("iteration %d kind %d: encode: %v", i, k, err)
			}
			if len(frame) != EncodedSize(&m) {
				t.Fatalf("kind %d: EncodedSize %d, frame %d", k, EncodedSize(&m), len(frame))
			}
			checkSplit(t, c, &m, frame)
			got, err := c.Decode(frame)
			if err != nil {
				t.Fatalf("iteration %d kind %d: decode: %v", i, k, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("iteration %d kind %d: round trip\ngot  %+v\nwant %+v", i, k, got, m)
			}
			again, err := c.Encode([]byte("prefix"), &got)
			if err != nil || !bytes.Equal(again[len("prefix"):], frame) || string(again[:6]) != "prefix" {
				t.Fatalf("iteration %d kind %d: re-encode differs (err %v)", i, k, err)
			}
		}
	}
}

// TestEncodeIgnoresFieldsTheKindDoesNotCarry: To and fields of other kinds
// never reach the wire.
func TestEncodeIgnoresFieldsTheKindDoesNotCarry(t *testing.T) {
	c := NewCodec(testCluster)
	m := consensus.Message{Kind: consensus.MsgCommit, Group: 1, From: 1, To: 2, View: 3, CommitMin: 4, HeartbeatCounter: 5,
		CommitMax: 100, HeadOp: 99, CommitOp: 99, FromOp: 98, ToOp: 98, LastServedOp: 98, FirstRetainedOp: 98, LogView: 97,
		SnapshotOp: 96, SnapshotSizeBytes: 96, SnapshotChecksum: 96, AnchorTimestamp: 96, ChunkOffset: 96,
		ChunkLengthBytes: 95, Available: true, ChunkData: []byte("x"),
		Nonce: sampleNonce, Incarnation: sampleIncarnation, Suffix: []consensus.PrepareHeader{{Op: 1}}}
	frame, err := c.Encode(nil, &m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	want := consensus.Message{Kind: consensus.MsgCommit, Group: 1, From: 1, View: 3, CommitMin: 4, HeartbeatCounter: 5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
}

func TestEncodeRejects(t *testing.T) {
	c := NewCodec(testCluster)
	for name, m := range map[string]consensus.Message{
		"unknown kind":        {Kind: 99},
		"handshake kind":      {Kind: consensus.MessageKind(CommandReplicaHello)},
		"prepare without one": {Kind: consensus.MsgPrepare},
		"suffix over 128":     {Kind: consensus.MsgStartView, Suffix: make([]consensus.PrepareHeader, SuffixHeadersMax+1)},
	} {
		if _, err := c.Encode(nil, &m); err == nil {
			t.Errorf("%s: encoded", name)
		}
		if _, _, err := c.EncodeSplit(&m); err == nil {
			t.Errorf("%s: EncodeSplit encoded", name)
		}
	}
}

// reseal recomputes the seal after a mutation, so a test reaches the rule
// behind the checksum.
func reseal(f []byte) {
	putWide(f[offChecksum:], frameChecksum(f[:HeaderBytes]))
}

// TestDecodeRejectsInvalidFrames: each malformed frame is refused with
// ErrInvalidFrame (the bus logs and drops it and keeps the connection).
func TestDecodeRejectsInvalidFrames(t *testing.T) {
	c := NewCodec(testCluster)
	enc := func(name string) []byte {
		for _, tc := range goldenCases() {
			if tc.name == name {
				f, err := c.Encode(nil, &tc.msg)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatalf("no golden case %q", name)
		return nil
	}
	cases := []struct {
		name   string
		frame  func() []byte
		reason string
	}{
		{"short", func() []byte { return enc("commit")[:100] }, "shorter than"},
		{"size mismatch", func() []byte { f := enc("prepare"); return f[:len(f)-1] }, "size field"},
		{"unknown command", func() []byte { f := enc("commit"); f[offCommand] = 30; reseal(f); return f }, "unknown command 30"},
		{"handshake command", func() []byte { f := enc("commit"); f[offCommand] = 14; reseal(f); return f }, "unknown command 14"},
		{"cluster mismatch", func() []byte { f := enc("commit"); f[offCluster]++; reseal(f); return f }, "cluster id mismatch"},
		{"flipped header bit", func() []byte { f := enc("commit"); f[152] ^= 1; return f }, "header checksum mismatch"},
		{"checksum high half", func() []byte { f := enc("commit"); f[offChecksum+8] = 1; return f }, "high 64 bits"},
		{"flipped body bit (sealed)", func() []byte { f := enc("do_view_change"); f[HeaderBytes+200] ^= 1; return f }, "body checksum mismatch"},
		{"flipped prepare body bit", func() []byte { f := enc("prepare"); f[HeaderBytes] ^= 1; return f }, "body checksum mismatch"},
		{"prepare body checksum zero", func() []byte { f := enc("prepare"); clear(f[offChecksumBody : offChecksumBody+16]); return f }, "body checksum mismatch"},
		{"prepare op 0", func() []byte { f := enc("prepare"); clear(f[offPrepOp : offPrepOp+8]); return f }, "op 0"},
		{"prepare reserved byte", func() []byte { f := enc("prepare"); f[250] = 1; return f }, "not canonical"},
		{"reserved_frame byte", func() []byte { f := enc("commit"); f[offReservedFrame+3] = 1; reseal(f); return f }, "byte 65 is not canonical"},
		{"release nonzero", func() []byte { f := enc("commit"); f[offRelease] = 1; reseal(f); return f }, "byte 56 is not canonical"},
		{"commit unused checkpoint_op", func() []byte { f := enc("commit"); f[offCommitCkptOp] = 1; reseal(f); return f }, "not canonical"},
		{"header-only kind with body", func() []byte {
			f := append(enc("commit"), 1, 2, 3)
			le.PutUint32(f[offSize:], uint32(len(f)))
			putWide(f[offChecksumBody:], xxh3.Hash(f[HeaderBytes:]))
			reseal(f)
			return f
		}, "header-only"},
		{"dvc log_view above view", func() []byte { f := enc("do_view_change"); le.PutUint32(f[offDvcLogView:], 9); reseal(f); return f }, "log_view 9 exceeds view 8"},
		{"dvc commit above op", func() []byte { f := enc("do_view_change"); le.PutUint64(f[offVcCommit:], 43); reseal(f); return f }, "commit 43 exceeds op 42"},
		{"dvc nack past suffix", func() []byte { f := enc("do_view_change"); f[offDvcNack] = 0b100; reseal(f); return f }, "past the 2-entry suffix"},
		{"dvc partial header", func() []byte {
			f := enc("do_view_change")[:HeaderBytes+300]
			le.PutUint32(f[offSize:], uint32(len(f)))
			putWide(f[offChecksumBody:], xxh3.Hash(f[HeaderBytes:]))
			reseal(f)
			return f
		}, "not a whole number of headers"},
		{"suffix entry wrong group", func() []byte {
			f := enc("start_view")
			f[HeaderBytes+offPrepGroup] ^= 1
			putWide(f[offChecksumBody:], xxh3.Hash(f[HeaderBytes:]))
			reseal(f)
			return f
		}, "suffix entry 0 byte 216 is not canonical"},
		{"request_prepares from 0", func() []byte {
			f := enc("request_prepares")
			clear(f[offRpFromOp : offRpFromOp+8])
			reseal(f)
			return f
		}, "need 1 <= from <= to"},
		{"request_prepares from > to", func() []byte { f := enc("request_prepares"); le.PutUint64(f[offRpFromOp:], 21); reseal(f); return f }, "need 1 <= from <= to"},
		{"stt available 2", func() []byte { f := enc("state_transfer_target"); f[offSttAvailable] = 2; reseal(f); return f }, "must be 0 or 1"},
		{"stt unavailable_transient", func() []byte {
			f := enc("state_transfer_target_unavailable")
			f[offSttTransient] = 1
			reseal(f)
			return f
		}, "not canonical"},
		{"stt short manifest", func() []byte {
			f := enc("state_transfer_target")[:HeaderBytes+16]
			le.PutUint32(f[offSize:], uint32(len(f)))
			putWide(f[offChecksumBody:], xxh3.Hash(f[HeaderBytes:]))
			reseal(f)
			return f
		}, "16-byte manifest"},
		{"request_state_chunk length 0", func() []byte {
			f := enc("request_state_chunk")
			clear(f[offRscLength : offRscLength+4])
			reseal(f)
			return f
		}, "length 0"},
		{"unavailable chunk with data", func() []byte { f := enc("state_chunk"); f[offScAvailable] = 0; reseal(f); return f }, "unavailable chunk carries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Decode(tc.frame())
			if !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("err = %v, want ErrInvalidFrame", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %q, want it to mention %q", err, tc.reason)
			}
		})
	}
}

// TestWriteFuzzSeeds keeps testdata/fuzz/FuzzDecodeReplicaFrame in step
// with the golden frames of both codecs (-update rewrites them) and checks
// each seed file holds its golden frame.
func TestWriteFuzzSeeds(t *testing.T) {
	c := NewCodec(testCluster)
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeReplicaFrame")
	type seed struct {
		name  string
		frame []byte
	}
	var seeds []seed
	for _, tc := range goldenCases() {
		frame, err := c.Encode(nil, &tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, seed{tc.name, frame})
	}
	for _, tc := range forwardCases() {
		frame, err := c.EncodeForward(nil, &tc.fwd)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, seed{tc.name, frame})
	}
	for _, tc := range seeds {
		frame := tc.frame
		for _, fix := range []bool{false, true} {
			content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(frame)) + ")\nbool(" + strconv.FormatBool(fix) + ")\n"
			path := filepath.Join(dir, "golden_"+tc.name)
			if fix {
				path += "_fix"
			}
			checkSeed(t, path, content)
		}
	}
}

func checkSeed(t *testing.T, path, content string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fuzz seed %s: %v (run with -update)", path, err)
	}
	if string(got) != content {
		t.Fatalf("fuzz seed %s is stale (run with -update)", path)
	}
}

// checkSplit: EncodeSplit's head and body are, end to end, exactly the
// frame Encode produced; a large body is not copied (it aliases m).
func checkSplit(t *testing.T, c *Codec, m *consensus.Message, frame []byte) {
	t.Helper()
	head, body, err := c.EncodeSplit(m)
	if err != nil {
		t.Fatalf("kind %d: EncodeSplit: %v", m.Kind, err)
	}
	if got := append(append([]byte(nil), head...), body...); !bytes.Equal(got, frame) {
		t.Fatalf("kind %d: EncodeSplit head+body differ from Encode's frame at byte %d", m.Kind, firstDiff(got, frame))
	}
	var src []byte
	switch {
	case m.Kind == consensus.MsgStateChunk:
		src = m.ChunkData
	case m.Prepare != nil && (m.Kind == consensus.MsgPrepare || m.Kind == consensus.MsgRepairPrepare):
		src = m.Prepare.Body
	}
	if len(body) > 0 && (len(src) == 0 || &body[0] != &src[0]) {
		t.Fatalf("kind %d: EncodeSplit copied the body", m.Kind)
	}
}

// TestAmnesiacFlagRoundTrip: consensus.Message.Amnesiac (power-loss
// amnesia) travels on RequestStartView, StartViewChange and DoViewChange
// as a 0/1 byte in a header byte upstream leaves reserved; any other value
// is refused.
func TestAmnesiacFlagRoundTrip(t *testing.T) {
	c := NewCodec(testCluster)
	for _, tc := range []struct {
		msg consensus.Message
		off int
	}{
		{consensus.Message{Kind: consensus.MsgRequestStartView, Group: partGroup, From: 2, View: 9, Incarnation: sampleIncarnation, Amnesiac: true}, offRsvAmnesiac},
		{consensus.Message{Kind: consensus.MsgStartViewChange, Group: partGroup, From: 1, View: 9, Amnesiac: true}, offSvcAmnesiac},
		{consensus.Message{Kind: consensus.MsgDoViewChange, Group: partGroup, From: 0, View: 9, LogView: 8, HeadOp: 5, CommitOp: 3, Amnesiac: true}, offDvcAmnesiac},
	} {
		frame, err := c.Encode(nil, &tc.msg)
		if err != nil {
			t.Fatalf("kind %d: %v", tc.msg.Kind, err)
		}
		if frame[tc.off] != 1 {
			t.Fatalf("kind %d: byte %d is %d, want 1", tc.msg.Kind, tc.off, frame[tc.off])
		}
		got, err := c.Decode(frame)
		if err != nil || !reflect.DeepEqual(got, tc.msg) {
			t.Fatalf("kind %d: decoded %+v err %v, want %+v", tc.msg.Kind, got, err, tc.msg)
		}
		bad := append([]byte(nil), frame...)
		bad[tc.off] = 2
		reseal(bad)
		if _, err := c.Decode(bad); err == nil || !strings.Contains(err.Error(), "amnesiac") {
			t.Fatalf("kind %d: amnesiac byte 2: %v, want refused", tc.msg.Kind, err)
		}
	}
}

// TestRequestStartViewFlagsRoundTrip: ViewUnknown (a wiped replica's
// probe) and ProbeAnswer (a backup's answer to it) travel as bits of one
// header byte upstream leaves reserved; unknown bits are refused.
func TestRequestStartViewFlagsRoundTrip(t *testing.T) {
	c := NewCodec(testCluster)
	for _, msg := range []consensus.Message{
		{Kind: consensus.MsgRequestStartView, Group: partGroup, From: 2, View: 0, Incarnation: sampleIncarnation, ViewUnknown: true},
		{Kind: consensus.MsgRequestStartView, Group: partGroup, From: 1, View: 7, ProbeAnswer: true},
	} {
		frame, err := c.Encode(nil, &msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(frame)
		if err != nil || !reflect.DeepEqual(got, msg) {
			t.Fatalf("decoded %+v err %v, want %+v", got, err, msg)
		}
		bad := append([]byte(nil), frame...)
		bad[offRsvFlags] |= 0x04
		reseal(bad)
		if _, err := c.Decode(bad); err == nil || !strings.Contains(err.Error(), "flags") {
			t.Fatalf("unknown flag bit: %v, want refused", err)
		}
	}
}

// TestDoViewChangeStorageLostRoundTrip: byte 157 of a DoViewChange
// carries StorageLost (0/1); any other value is refused.
func TestDoViewChangeStorageLostRoundTrip(t *testing.T) {
	c := NewCodec(testCluster)
	msg := consensus.Message{Kind: consensus.MsgDoViewChange, Group: partGroup, From: 2, To: 1, View: 4, LogView: 3,
		Amnesiac: true, StorageLost: true}
	frame, err := c.Encode(nil, &msg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(frame)
	if err != nil || !got.StorageLost || !got.Amnesiac {
		t.Fatalf("decoded %+v err %v, want StorageLost and Amnesiac", got, err)
	}
	bad := append([]byte(nil), frame...)
	bad[offDvcLost] = 2
	reseal(bad)
	if _, err := c.Decode(bad); err == nil || !strings.Contains(err.Error(), "storage_lost") {
		t.Fatalf("storage_lost byte 2: %v, want refused", err)
	}
}
