package bus

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/consensus"
)

var sampleFetchNonce = consensus.Uint128{Lo: 0x5A5A_0000_1111_2222, Hi: 0xA5A5_3333_4444_5555}

// sampleRecords stands in for stored batch records: the bus does not parse
// them, so any bytes do.
func sampleRecords(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

type fetchCase struct {
	name  string
	fetch Fetch
	want  func() []byte // built from the documented offsets, independently of the codec
}

func fetchCases() []fetchCase {
	recs := sampleRecords(77)
	return []fetchCase{
		{"fetch_request", Fetch{Kind: FetchRequest, From: 1, Group: partGroup, Nonce: sampleFetchNonce,
			Offset: 1000, EndOffset: 0x0102_0304_0506_0708, BytesMax: 1 << 20, PurgeGeneration: 3},
			func() []byte {
				var s spec
				s.u128(128, sampleFetchNonce.Lo, sampleFetchNonce.Hi)
				s.u64(144, partGroup)
				s.u64(152, 1000)
				s.u64(160, 0x0102_0304_0506_0708)
				s.u32(168, 1<<20)
				s.u64(216, 3)
				s.common(0, 30, 1)
				return s.frame(true, false)
			}},
		{"fetch_reply", Fetch{Kind: FetchReply, From: 2, Group: partGroup, Nonce: sampleFetchNonce,
			Offset: 1000, EndOffset: 1003, FirstOffset: 10, NextOffset: 9000, Status: FetchOK, Records: recs},
			func() []byte {
				s := spec{body: recs}
				s.u128(128, sampleFetchNonce.Lo, sampleFetchNonce.Hi)
				s.u64(144, partGroup)
				s.u64(152, 1000)
				s.u64(160, 1003)
				s.u64(176, 10)
				s.u64(184, 9000)
				s.u8(192, 0)
				s.common(0, 31, 2)
				return s.frame(true, false)
			}},
		{"fetch_reply_empty", Fetch{Kind: FetchReply, From: 0, Group: partGroup, Nonce: sampleFetchNonce,
			Offset: 9000, EndOffset: 9000, FirstOffset: 10, NextOffset: 9000, Status: FetchOK},
			func() []byte {
				var s spec
				s.u128(128, sampleFetchNonce.Lo, sampleFetchNonce.Hi)
				s.u64(144, partGroup)
				s.u64(152, 9000)
				s.u64(160, 9000)
				s.u64(176, 10)
				s.u64(184, 9000)
				s.common(0, 31, 0)
				return s.frame(true, false)
			}},
		{"fetch_reply_below_retained", Fetch{Kind: FetchReply, From: 2, Group: partGroup, Nonce: sampleFetchNonce,
			Offset: 5, EndOffset: 5, FirstOffset: 10, NextOffset: 9000, Status: FetchBelowRetained},
			func() []byte {
				var s spec
				s.u128(128, sampleFetchNonce.Lo, sampleFetchNonce.Hi)
				s.u64(144, partGroup)
				s.u64(152, 5)
				s.u64(160, 5)
				s.u64(176, 10)
				s.u64(184, 9000)
				s.u8(192, 2)
				s.common(0, 31, 2)
				return s.frame(true, false)
			}},
		{"fetch_reply_other_epoch", Fetch{Kind: FetchReply, From: 1, Group: partGroup, Nonce: sampleFetchNonce,
			Offset: 5, EndOffset: 5, FirstOffset: 0, NextOffset: 12, Status: FetchOtherEpoch, PurgeGeneration: 4, PurgeOp: 0x0102_0304},
			func() []byte {
				var s spec
				s.u128(128, sampleFetchNonce.Lo, sampleFetchNonce.Hi)
				s.u64(144, partGroup)
				s.u64(152, 5)
				s.u64(160, 5)
				s.u64(184, 12)
				s.u8(192, 4)
				s.u64(216, 4)
				s.u64(224, 0x0102_0304)
				s.common(0, 31, 1)
				return s.frame(true, false)
			}},
		{"fetch_status", Fetch{Kind: FetchStatus, From: 0, Group: 1 << 63, Nonce: sampleFetchNonce},
			func() []byte {
				var s spec
				s.u128(128, sampleFetchNonce.Lo, sampleFetchNonce.Hi)
				s.u64(144, 1<<63)
				s.common(0, 32, 0)
				return s.frame(true, false)
			}},
		{"fetch_status_reply", Fetch{Kind: FetchStatusReply, From: 2, Group: 1 << 63, Nonce: sampleFetchNonce,
			View: 7, Op: 0x0102_0304_0506_0708, CommitMax: 4242, Newborn: true},
			func() []byte {
				var s spec
				s.u128(128, sampleFetchNonce.Lo, sampleFetchNonce.Hi)
				s.u64(144, 1<<63)
				s.u8(193, 1)
				s.u32(196, 7)
				s.u64(200, 0x0102_0304_0506_0708)
				s.u64(208, 4242)
				s.common(0, 33, 2)
				return s.frame(true, false)
			}},
	}
}

// TestFetchGoldenFrames: each fetch case encodes to the bytes the
// documented offsets give, matches the committed hex in testdata/golden,
// and decodes back to the same Fetch.
func TestFetchGoldenFrames(t *testing.T) {
	c := NewCodec(testCluster)
	kinds := map[FetchKind]bool{}
	for _, tc := range fetchCases() {
		t.Run(tc.name, func(t *testing.T) {
			kinds[tc.fetch.Kind] = true
			got, err := c.EncodeFetch(nil, &tc.fetch)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			want := tc.want()
			if i := firstDiff(want, got); len(got) != len(want) || i >= 0 {
				t.Fatalf("encoded frame differs from the documented layout at byte %d (len got %d want %d)\ngot  %x\nwant %x", i, len(got), len(want), got, want)
			}
			if size := FetchEncodedSize(&tc.fetch); size != len(got) {
				t.Fatalf("FetchEncodedSize %d, frame %d bytes", size, len(got))
			}
			path := filepath.Join("testdata", "golden", tc.name+".hex")
			if *update {
				writeHex(t, path, got)
			}
			if committed := readHex(t, path); !bytes.Equal(committed, got) {
				t.Fatalf("encoded frame differs from %s (run with -update after a deliberate layout change)", path)
			}
			f, err := c.DecodeFetch(got)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(f, tc.fetch) {
				t.Fatalf("decode mismatch\ngot  %+v\nwant %+v", f, tc.fetch)
			}
		})
	}
	for _, k := range []FetchKind{FetchRequest, FetchReply} {
		if !kinds[k] {
			t.Errorf("%s has no golden frame", k)
		}
	}
}

// randomFetch draws a valid fetch frame of kind k carrying only the fields
// that kind carries (the shape DecodeFetch returns).
func randomFetch(r *rand.Rand, k FetchKind) Fetch {
	f := Fetch{Kind: k, From: uint8(r.IntN(32)), Group: r.Uint64(),
		Nonce: consensus.Uint128{Lo: r.Uint64(), Hi: r.Uint64()}, Offset: r.Uint64(), EndOffset: r.Uint64()}
	switch k {
	case FetchRequest:
		f.BytesMax = max(r.Uint32(), 1)
		f.PurgeGeneration = r.Uint64()
	case FetchReply:
		f.FirstOffset, f.NextOffset = r.Uint64(), r.Uint64()
		f.PurgeGeneration, f.PurgeOp = r.Uint64(), r.Uint64()
		f.Status = uint8(r.IntN(int(fetchStatusMax) + 1))
		f.Offset = r.Uint64N(1 << 62)
		f.EndOffset = f.Offset
		if f.Status == FetchOK && r.IntN(3) > 0 {
			f.Records = make([]byte, 1+r.IntN(4096))
			for i := range f.Records {
				f.Records[i] = byte(r.Uint32())
			}
			f.EndOffset += 1 + r.Uint64N(1<<20)
		}
	}
	return f
}

// TestFetchRoundTripRandom: DecodeFetch(EncodeFetch(f)) == f for random
// frames of both kinds, with and without records, and neither the
// consensus nor the forward decoder accepts them.
func TestFetchRoundTripRandom(t *testing.T) {
	c := NewCodec(testCluster)
	r := rand.New(rand.NewPCG(7, 11))
	withRecords := 0
	for i := range 600 {
		for _, k := range []FetchKind{FetchRequest, FetchReply} {
			f := randomFetch(r, k)
			frame, err := c.EncodeFetch([]byte("prefix"), &f)
			if err != nil {
				t.Fatalf("iteration %d %s: encode: %v", i, k, err)
			}
			if string(frame[:6]) != "prefix" || len(frame) != 6+HeaderBytes+len(f.Records) {
				t.Fatalf("iteration %d %s: encode did not append one frame", i, k)
			}
			frame = frame[6:]
			got, err := c.DecodeFetch(frame)
			if err != nil {
				t.Fatalf("iteration %d %s: decode: %v", i, k, err)
			}
			if !reflect.DeepEqual(got, f) {
				t.Fatalf("iteration %d %s: round trip\ngot  %+v\nwant %+v", i, k, got, f)
			}
			if len(f.Records) > 0 {
				withRecords++
			}
			if _, err := c.Decode(frame); !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("iteration %d %s: consensus Decode accepted a fetch frame (err %v)", i, k, err)
			}
			if _, err := c.DecodeForward(frame); !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("iteration %d %s: DecodeForward accepted a fetch frame (err %v)", i, k, err)
			}
		}
	}
	if withRecords < 50 {
		t.Fatalf("only %d replies with records", withRecords)
	}
	// The fetch decoder refuses the other codecs' frames.
	for _, tc := range goldenCases() {
		frame, err := c.Encode(nil, &tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.DecodeFetch(frame); !errors.Is(err, ErrInvalidFrame) {
			t.Fatalf("%s: DecodeFetch accepted a consensus frame (err %v)", tc.name, err)
		}
	}
	for _, tc := range forwardCases() {
		frame, err := c.EncodeForward(nil, &tc.fwd)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.DecodeFetch(frame); !errors.Is(err, ErrInvalidFrame) {
			t.Fatalf("%s: DecodeFetch accepted a forward frame (err %v)", tc.name, err)
		}
	}
}

// TestFetchEncodeIgnoresFieldsTheKindDoesNotCarry: To and the fields of the
// other kind never reach the wire (a request carries no records).
func TestFetchEncodeIgnoresFieldsTheKindDoesNotCarry(t *testing.T) {
	c := NewCodec(testCluster)
	req := Fetch{Kind: FetchRequest, From: 1, To: 2, Group: 3, Nonce: sampleFetchNonce, Offset: 4, EndOffset: 5, BytesMax: 6,
		FirstOffset: 7, NextOffset: 8, Status: 9, PurgeOp: 10, Records: []byte("not sent")}
	frame, err := c.EncodeFetch(nil, &req)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) != HeaderBytes || FetchEncodedSize(&req) != HeaderBytes {
		t.Fatalf("request frame of %d bytes (encoded size %d)", len(frame), FetchEncodedSize(&req))
	}
	got, err := c.DecodeFetch(frame)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Fetch{Kind: FetchRequest, From: 1, Group: 3, Nonce: sampleFetchNonce, Offset: 4, EndOffset: 5, BytesMax: 6}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
	rep := Fetch{Kind: FetchReply, From: 1, To: 2, Group: 3, Nonce: sampleFetchNonce, Offset: 4, EndOffset: 4, BytesMax: 6,
		FirstOffset: 7, NextOffset: 8, Status: FetchUnavailable, Records: []byte{}}
	if frame, err = c.EncodeFetch(nil, &rep); err != nil {
		t.Fatal(err)
	}
	if got, err = c.DecodeFetch(frame); err != nil {
		t.Fatal(err)
	}
	if want := (Fetch{Kind: FetchReply, From: 1, Group: 3, Nonce: sampleFetchNonce, Offset: 4, EndOffset: 4,
		FirstOffset: 7, NextOffset: 8, Status: FetchUnavailable}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
}

// TestFetchEncodeRejects: the encoder refuses what the decoder would.
func TestFetchEncodeRejects(t *testing.T) {
	c := NewCodec(testCluster)
	for name, f := range map[string]Fetch{
		"kind 0":                     {},
		"forward kind":               {Kind: FetchKind(ForwardLogoutResult), BytesMax: 1},
		"kind 34":                    {Kind: 34, BytesMax: 1},
		"request bytes_max 0":        {Kind: FetchRequest},
		"reply status 5":             {Kind: FetchReply, Status: 5},
		"reply status 255":           {Kind: FetchReply, Status: 255},
		"reply end below offset":     {Kind: FetchReply, Offset: 10, EndOffset: 9},
		"reply empty, end != offset": {Kind: FetchReply, Offset: 10, EndOffset: 11},
		"reply records, end==offset": {Kind: FetchReply, Offset: 10, EndOffset: 10, Records: []byte{1}},
		"records on a non-ok reply":  {Kind: FetchReply, Offset: 10, EndOffset: 11, Status: FetchUnavailable, Records: []byte{1}},
	} {
		if out, err := c.EncodeFetch([]byte("x"), &f); err == nil || string(out) != "x" {
			t.Errorf("%s: encoded (err %v)", name, err)
		}
	}
}

// TestFetchDecodeRejectsInvalidFrames: each malformed fetch frame is
// refused with ErrInvalidFrame.
func TestFetchDecodeRejectsInvalidFrames(t *testing.T) {
	c := NewCodec(testCluster)
	enc := func(name string) []byte {
		for _, tc := range fetchCases() {
			if tc.name == name {
				f, err := c.EncodeFetch(nil, &tc.fetch)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatalf("no fetch case %q", name)
		return nil
	}
	// rebody replaces the body and restamps size, checksum_body and seal.
	rebody := func(f []byte, body []byte) []byte {
		f = append(f[:HeaderBytes:HeaderBytes], body...)
		le.PutUint32(f[offSize:], uint32(len(f)))
		if len(body) > 0 {
			putWide(f[offChecksumBody:], xxh3.Hash(body))
		} else {
			putWide(f[offChecksumBody:], 0)
		}
		reseal(f)
		return f
	}
	set := func(name string, mutate func(f []byte)) func() []byte {
		return func() []byte {
			f := enc(name)
			mutate(f)
			reseal(f)
			return f
		}
	}
	cases := []struct {
		name   string
		frame  func() []byte
		reason string
	}{
		{"short", func() []byte { return enc("fetch_request")[:200] }, "shorter than"},
		{"size mismatch (truncated body)", func() []byte { f := enc("fetch_reply"); return f[:len(f)-1] }, "size field 333 does not match the 332-byte frame"},
		{"size mismatch (declared)", set("fetch_request", func(f []byte) { le.PutUint32(f[offSize:], 300) }), "size field 300"},
		{"consensus command", func() []byte {
			f, err := c.Encode(nil, &consensus.Message{Kind: consensus.MsgCommit, From: 1, View: 2, CommitMin: 3})
			if err != nil {
				t.Fatal(err)
			}
			return f
		}, "command 9 is not a fetch frame"},
		{"forward command", set("fetch_request", func(f []byte) { f[offCommand] = 29 }), "command 29 is not a fetch frame"},
		{"command 34", set("fetch_request", func(f []byte) { f[offCommand] = 34 }), "command 34 is not a fetch frame"},
		{"request as status", set("fetch_request", func(f []byte) { f[offCommand] = 32 }), "not canonical"},
		{"cluster mismatch", set("fetch_reply", func(f []byte) { f[offCluster+3]++ }), "fetch_reply: cluster id mismatch"},
		{"flipped header bit", func() []byte { f := enc("fetch_request"); f[offFetchOffset] ^= 1; return f }, "header checksum mismatch"},
		{"unsealed", func() []byte { f := enc("fetch_reply"); clear(f[offChecksum : offChecksum+16]); return f }, "header checksum mismatch"},
		{"checksum high half", func() []byte { f := enc("fetch_request"); f[offChecksum+8] = 1; return f }, "high 64 bits"},
		{"body checksum mismatch", func() []byte { f := enc("fetch_reply"); f[HeaderBytes+40] ^= 1; return f }, "fetch_reply: body checksum mismatch"},
		{"body checksum on an empty reply", set("fetch_reply_empty", func(f []byte) { putWide(f[offChecksumBody:], 1) }), "body checksum mismatch"},
		{"checksum_body high half", set("fetch_reply", func(f []byte) { f[offChecksumBody+8] = 1 }), "checksum_body: high 64 bits"},
		{"body on a request", func() []byte { return rebody(enc("fetch_request"), []byte{1, 2, 3}) }, "fetch_request: header-only frame carries 3 body bytes"},
		{"bad status", set("fetch_reply_below_retained", func(f []byte) { f[offFetchStatus] = 5 }), "fetch_reply: status 5 (max 4)"},
		{"status 255", set("fetch_reply_empty", func(f []byte) { f[offFetchStatus] = 255 }), "status 255 (max 4)"},
		{"request purge_op slot", set("fetch_request", func(f []byte) { f[offFetchPurgeOp] = 1 }), "fetch_request: header byte 224 is not canonical"},
		{"zero bytes_max", set("fetch_request", func(f []byte) { clear(f[offFetchBytesMax : offFetchBytesMax+4]) }), "fetch_request: bytes_max 0"},
		{"reply end below offset", set("fetch_reply_empty", func(f []byte) { le.PutUint64(f[offFetchEndOffset:], 8999) }), "end_offset 8999 below offset 9000"},
		{"empty reply end above offset", set("fetch_reply_empty", func(f []byte) { le.PutUint64(f[offFetchEndOffset:], 9001) }), "no records but end_offset 9001 != offset 9000"},
		{"records with end == offset", set("fetch_reply", func(f []byte) { le.PutUint64(f[offFetchEndOffset:], 1000) }), "77 record bytes but end_offset == offset 1000"},
		{"records on a non-ok reply", set("fetch_reply", func(f []byte) { f[offFetchStatus] = FetchUnavailable }), "status 3 carries 77 record bytes"},
		{"request status slot", set("fetch_request", func(f []byte) { f[offFetchStatus] = 1 }), "fetch_request: header byte 192 is not canonical"},
		{"request first_offset slot", set("fetch_request", func(f []byte) { f[offFetchFirstOffset] = 1 }), "header byte 176 is not canonical"},
		{"reply bytes_max slot", set("fetch_reply", func(f []byte) { f[offFetchBytesMax] = 1 }), "fetch_reply: header byte 168 is not canonical"},
		{"request pad after bytes_max", set("fetch_request", func(f []byte) { f[offFetchBytesMax+4] = 1 }), "header byte 172 is not canonical"},
		{"pad after status", set("fetch_reply", func(f []byte) { f[offFetchStatus+1] = 1 }), "header byte 193 is not canonical"},
		{"last header byte", set("fetch_reply_empty", func(f []byte) { f[HeaderBytes-1] = 1 }), "header byte 255 is not canonical"},
		{"view nonzero", set("fetch_request", func(f []byte) { le.PutUint32(f[offView:], 7) }), "header byte 52 is not canonical"},
		{"release nonzero", set("fetch_reply", func(f []byte) { f[offRelease] = 1 }), "header byte 56 is not canonical"},
		{"reserved_frame byte", set("fetch_request", func(f []byte) { f[offReservedFrame+65] = 1 }), "header byte 127 is not canonical"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.DecodeFetch(tc.frame())
			if !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("err = %v, want ErrInvalidFrame", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %q, want it to mention %q", err, tc.reason)
			}
		})
	}
	// A different cluster's codec refuses every golden fetch frame.
	other := NewCodec(consensus.Uint128{Lo: 1})
	for _, tc := range fetchCases() {
		if _, err := other.DecodeFetch(enc(tc.name)); err == nil || !strings.Contains(err.Error(), "cluster id mismatch") {
			t.Errorf("%s: other cluster: %v", tc.name, err)
		}
	}
}

func TestFetchNames(t *testing.T) {
	for _, tc := range []struct {
		f    Fetch
		want string
	}{
		{Fetch{Kind: FetchReply, Status: FetchOK}, "ok"},
		{Fetch{Kind: FetchReply, Status: FetchNoSuchGroup}, "no_such_group"},
		{Fetch{Kind: FetchReply, Status: FetchBelowRetained}, "below_retained"},
		{Fetch{Kind: FetchReply, Status: FetchUnavailable}, "unavailable"},
		{Fetch{Kind: FetchReply, Status: FetchOtherEpoch}, "other_epoch"},
		{Fetch{Kind: FetchReply, Status: 9}, "status(9)"},
		{Fetch{Kind: FetchRequest, Status: 1}, ""},
	} {
		if got := tc.f.StatusName(); got != tc.want {
			t.Errorf("%s status %d: %q, want %q", tc.f.Kind, tc.f.Status, got, tc.want)
		}
	}
	if FetchRequest.String() != "fetch_request" || FetchReply.String() != "fetch_reply" || FetchKind(5).String() != "fetch_kind(5)" {
		t.Fatal("FetchKind.String")
	}
	if FetchStatus.String() != "fetch_status" || FetchStatusReply.String() != "fetch_status_reply" {
		t.Fatal("FetchKind.String of the status kinds")
	}
	if !reflect.DeepEqual([]bool{IsFetchCommand(29), IsFetchCommand(30), IsFetchCommand(31), IsFetchCommand(32), IsFetchCommand(33), IsFetchCommand(34)},
		[]bool{false, true, true, true, true, false}) || CommandFetchRequest != 30 || CommandFetchReply != 31 ||
		CommandFetchStatus != 32 || CommandFetchStatusReply != 33 {
		t.Fatal("IsFetchCommand / command numbers")
	}
	if IsForwardCommand(CommandFetchRequest) || IsFetchCommand(CommandForwardLogoutResult) {
		t.Fatal("forward and fetch commands overlap")
	}
	for _, tc := range []struct{ max, want uint64 }{{0, 0}, {HeaderBytes, 0}, {HeaderBytes + 1, 1}, {1 << 20, 1<<20 - HeaderBytes},
		{1 << 40, 1<<32 - 1 - HeaderBytes}} {
		if got := FetchRecordsMax(tc.max); got != tc.want {
			t.Errorf("FetchRecordsMax(%d) = %d, want %d", tc.max, got, tc.want)
		}
	}
}

// TestWriteFetchFuzzSeeds keeps testdata/fuzz/FuzzDecodeFetch in step with
// the golden fetch frames (-update rewrites them) and checks each seed file
// holds its golden frame.
func TestWriteFetchFuzzSeeds(t *testing.T) {
	c := NewCodec(testCluster)
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeFetch")
	for _, tc := range fetchCases() {
		frame, err := c.EncodeFetch(nil, &tc.fetch)
		if err != nil {
			t.Fatal(err)
		}
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
