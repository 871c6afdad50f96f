package bus

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/consensus"
)

var (
	sampleClient   = consensus.Uint128{Lo: 0xC1C1_C1C1_0000_0001, Hi: 0xC2C2_C2C2_0000_0002}
	sampleFwdNonce = consensus.Uint128{Lo: 0x0F0E_0D0C_0B0A_0908, Hi: 0x1716_1514_1312_1110}
)

type forwardCase struct {
	name string
	fwd  Forward
	want func() []byte // built from server-design §2.2 offsets, independently of the codec
}

func forwardCases() []forwardCase {
	return []forwardCase{
		{"forward_register", Forward{Kind: ForwardRegister, From: 2, View: 7, Client: sampleClient, Nonce: sampleFwdNonce, UserID: 0xA1B2C3D4},
			func() []byte {
				var s spec
				s.u128(128, sampleClient.Lo, sampleClient.Hi)
				s.u128(144, sampleFwdNonce.Lo, sampleFwdNonce.Hi)
				s.u32(160, 0xA1B2C3D4)
				s.common(7, 26, 2)
				return s.frame(true, false)
			}},
		{"forward_register_result", Forward{Kind: ForwardRegisterResult, From: 0, View: 7, Client: sampleClient, Nonce: sampleFwdNonce,
			Epoch: 0x1122_3344_5566_7788, Watermark: 0x99AA_BBCC_DDEE_FF00, Outcome: RegisterOutcomeOk},
			func() []byte {
				var s spec
				s.u128(128, sampleFwdNonce.Lo, sampleFwdNonce.Hi)
				s.u128(144, sampleClient.Lo, sampleClient.Hi)
				s.u64(160, 0x1122_3344_5566_7788)
				s.u64(168, 0x99AA_BBCC_DDEE_FF00)
				s.u8(255, 0)
				s.common(7, 27, 0)
				return s.frame(true, false)
			}},
		{"forward_register_result_terminal", Forward{Kind: ForwardRegisterResult, From: 0, View: 8, Client: sampleClient, Nonce: sampleFwdNonce,
			Outcome: RegisterOutcomeClientIDOwnedByAnotherUser},
			func() []byte {
				var s spec
				s.u128(128, sampleFwdNonce.Lo, sampleFwdNonce.Hi)
				s.u128(144, sampleClient.Lo, sampleClient.Hi)
				s.u8(255, 6)
				s.common(8, 27, 0)
				return s.frame(true, false)
			}},
		{"forward_logout", Forward{Kind: ForwardLogout, From: 1, View: 9, Client: sampleClient, Nonce: sampleFwdNonce,
			Session: 0x0102_0304_0506_0708, Request: ^uint64(0)},
			func() []byte {
				var s spec
				s.u128(128, sampleClient.Lo, sampleClient.Hi)
				s.u128(144, sampleFwdNonce.Lo, sampleFwdNonce.Hi)
				s.u64(160, 0x0102_0304_0506_0708)
				s.u64(168, ^uint64(0))
				s.common(9, 28, 1)
				return s.frame(true, false)
			}},
		{"forward_logout_result", Forward{Kind: ForwardLogoutResult, From: 0, View: 9, Client: sampleClient, Nonce: sampleFwdNonce,
			Commit: 0x0A0B_0C0D_0E0F_1011, Outcome: LogoutOutcomeCanceled},
			func() []byte {
				var s spec
				s.u128(128, sampleFwdNonce.Lo, sampleFwdNonce.Hi)
				s.u128(144, sampleClient.Lo, sampleClient.Hi)
				s.u64(160, 0x0A0B_0C0D_0E0F_1011)
				s.u8(255, 4)
				s.common(9, 29, 0)
				return s.frame(true, false)
			}},
	}
}

// TestForwardGoldenFrames: each forward kind encodes to the bytes the
// spec's offsets give, matches the committed hex in testdata/golden, and
// decodes back to the same Forward.
func TestForwardGoldenFrames(t *testing.T) {
	c := NewCodec(testCluster)
	kinds := map[ForwardKind]bool{}
	for _, tc := range forwardCases() {
		t.Run(tc.name, func(t *testing.T) {
			kinds[tc.fwd.Kind] = true
			got, err := c.EncodeForward(nil, &tc.fwd)
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
			if committed := readHex(t, path); !bytes.Equal(committed, got) {
				t.Fatalf("encoded frame differs from %s (run with -update after a deliberate layout change)", path)
			}
			f, err := c.DecodeForward(got)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if f != tc.fwd {
				t.Fatalf("decode mismatch\ngot  %+v\nwant %+v", f, tc.fwd)
			}
		})
	}
	for k := ForwardRegister; k <= ForwardLogoutResult; k++ {
		if !kinds[k] {
			t.Errorf("%s has no golden frame", k)
		}
	}
}

// randomForward draws a forward frame of kind k carrying only the fields
// that kind carries (the shape DecodeForward returns).
func randomForward(r *rand.Rand, k ForwardKind) Forward {
	u128 := func() consensus.Uint128 { return consensus.Uint128{Lo: r.Uint64(), Hi: r.Uint64()} }
	f := Forward{Kind: k, From: uint8(r.IntN(32)), View: r.Uint32(), Client: u128(), Nonce: u128()}
	switch k {
	case ForwardRegister:
		f.UserID = r.Uint32()
	case ForwardRegisterResult:
		f.Epoch, f.Watermark, f.Outcome = r.Uint64(), r.Uint64(), uint8(r.IntN(int(registerOutcomeMax)+1))
	case ForwardLogout:
		f.Session, f.Request = r.Uint64(), r.Uint64()
	case ForwardLogoutResult:
		f.Commit, f.Outcome = r.Uint64(), uint8(r.IntN(int(logoutOutcomeMax)+1))
	}
	return f
}

// TestForwardRoundTripRandom: DecodeForward(EncodeForward(f)) == f for
// random frames of every kind, and the consensus decoder refuses them.
func TestForwardRoundTripRandom(t *testing.T) {
	c := NewCodec(testCluster)
	r := rand.New(rand.NewPCG(3, 5))
	for i := range 500 {
		for k := ForwardRegister; k <= ForwardLogoutResult; k++ {
			f := randomForward(r, k)
			frame, err := c.EncodeForward([]byte("prefix"), &f)
			if err != nil {
				t.Fatalf("iteration %d %s: encode: %v", i, k, err)
			}
			if string(frame[:6]) != "prefix" || len(frame) != 6+HeaderBytes {
				t.Fatalf("iteration %d %s: encode did not append one header", i, k)
			}
			frame = frame[6:]
			got, err := c.DecodeForward(frame)
			if err != nil {
				t.Fatalf("iteration %d %s: decode: %v", i, k, err)
			}
			if got != f {
				t.Fatalf("iteration %d %s: round trip\ngot  %+v\nwant %+v", i, k, got, f)
			}
			if _, err := c.Decode(frame); !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("iteration %d %s: consensus Decode accepted a forward frame (err %v)", i, k, err)
			}
		}
	}
}

// TestForwardEncodeIgnoresFieldsTheKindDoesNotCarry: To and the fields of
// other kinds never reach the wire.
func TestForwardEncodeIgnoresFieldsTheKindDoesNotCarry(t *testing.T) {
	c := NewCodec(testCluster)
	f := Forward{Kind: ForwardRegister, From: 1, To: 2, View: 3, Client: sampleClient, Nonce: sampleFwdNonce, UserID: 4,
		Session: 5, Request: 6, Epoch: 7, Watermark: 8, Commit: 9}
	frame, err := c.EncodeForward(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DecodeForward(frame)
	if err != nil {
		t.Fatal(err)
	}
	want := Forward{Kind: ForwardRegister, From: 1, View: 3, Client: sampleClient, Nonce: sampleFwdNonce, UserID: 4}
	if got != want {
		t.Fatalf("got %+v want %+v", got, want)
	}
}

func TestForwardEncodeRejects(t *testing.T) {
	c := NewCodec(testCluster)
	for name, f := range map[string]Forward{
		"kind 0":               {},
		"consensus kind":       {Kind: ForwardKind(consensus.MsgCommit)},
		"kind 30":              {Kind: 30},
		"register outcome 7":   {Kind: ForwardRegisterResult, Outcome: 7},
		"logout outcome 5":     {Kind: ForwardLogoutResult, Outcome: 5},
		"logout outcome 255":   {Kind: ForwardLogoutResult, Outcome: 255},
		"register outcome 255": {Kind: ForwardRegisterResult, Outcome: 255},
	} {
		if out, err := c.EncodeForward([]byte("x"), &f); err == nil || string(out) != "x" {
			t.Errorf("%s: encoded (err %v)", name, err)
		}
	}
	// An outcome on a request kind is not carried, so it is ignored.
	if _, err := c.EncodeForward(nil, &Forward{Kind: ForwardLogout, Outcome: 9}); err != nil {
		t.Errorf("request kind with an outcome: %v", err)
	}
}

// TestForwardDecodeRejectsInvalidFrames: each malformed forward frame is
// refused with ErrInvalidFrame.
func TestForwardDecodeRejectsInvalidFrames(t *testing.T) {
	c := NewCodec(testCluster)
	enc := func(name string) []byte {
		for _, tc := range forwardCases() {
			if tc.name == name {
				f, err := c.EncodeForward(nil, &tc.fwd)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatalf("no forward case %q", name)
		return nil
	}
	commit := func() []byte {
		f, err := c.Encode(nil, &consensus.Message{Kind: consensus.MsgCommit, From: 1, View: 2, CommitMin: 3})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	cases := []struct {
		name   string
		frame  func() []byte
		reason string
	}{
		{"short", func() []byte { return enc("forward_register")[:200] }, "shorter than"},
		{"size mismatch", func() []byte {
			f := enc("forward_register")
			le.PutUint32(f[offSize:], 300)
			reseal(f)
			return f
		}, "size field 300"},
		{"consensus command", commit, "command 9 is not a forward frame"},
		{"command 30", func() []byte { f := enc("forward_logout"); f[offCommand] = 30; reseal(f); return f }, "command 30 is not a forward frame"},
		{"cluster mismatch", func() []byte { f := enc("forward_logout"); f[offCluster+15]++; reseal(f); return f }, "cluster id mismatch"},
		{"flipped header bit", func() []byte { f := enc("forward_register"); f[offFwdUserID] ^= 1; return f }, "header checksum mismatch"},
		{"unsealed", func() []byte { f := enc("forward_register"); clear(f[offChecksum : offChecksum+16]); return f }, "header checksum mismatch"},
		{"checksum high half", func() []byte { f := enc("forward_register"); f[offChecksum+8] = 1; return f }, "high 64 bits"},
		{"body", func() []byte {
			f := append(enc("forward_register"), 1, 2, 3)
			le.PutUint32(f[offSize:], uint32(len(f)))
			putWide(f[offChecksumBody:], xxh3.Hash(f[HeaderBytes:]))
			reseal(f)
			return f
		}, "header-only frame carries 3 body bytes"},
		{"checksum_body set", func() []byte {
			f := enc("forward_register")
			putWide(f[offChecksumBody:], 1)
			reseal(f)
			return f
		}, "byte 16 is not canonical"},
		{"register outcome 7", func() []byte {
			f := enc("forward_register_result")
			f[offFwdOutcome] = 7
			reseal(f)
			return f
		}, "forward_register_result: outcome 7 (max 6)"},
		{"logout outcome 5", func() []byte {
			f := enc("forward_logout_result")
			f[offFwdOutcome] = 5
			reseal(f)
			return f
		}, "forward_logout_result: outcome 5 (max 4)"},
		{"outcome on a request kind", func() []byte {
			f := enc("forward_logout")
			f[offFwdOutcome] = 1
			reseal(f)
			return f
		}, "byte 255 is not canonical"},
		{"register reserved after user_id", func() []byte {
			f := enc("forward_register")
			f[offFwdUserID+4] = 1
			reseal(f)
			return f
		}, "byte 164 is not canonical"},
		{"register_result reserved", func() []byte {
			f := enc("forward_register_result")
			f[200] = 1
			reseal(f)
			return f
		}, "byte 200 is not canonical"},
		{"logout_result watermark slot", func() []byte {
			f := enc("forward_logout_result")
			f[168] = 1
			reseal(f)
			return f
		}, "byte 168 is not canonical"},
		{"reserved_frame byte", func() []byte {
			f := enc("forward_logout_result")
			f[offReservedFrame] = 1
			reseal(f)
			return f
		}, "byte 62 is not canonical"},
		{"release nonzero", func() []byte {
			f := enc("forward_register")
			f[offRelease] = 1
			reseal(f)
			return f
		}, "byte 56 is not canonical"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.DecodeForward(tc.frame())
			if !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("err = %v, want ErrInvalidFrame", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %q, want it to mention %q", err, tc.reason)
			}
		})
	}
}

func TestForwardOutcomeName(t *testing.T) {
	for _, tc := range []struct {
		f    Forward
		want string
	}{
		{Forward{Kind: ForwardRegisterResult, Outcome: RegisterOutcomeClientIDOwnedByAnotherUser}, "client_id_owned_by_another_user"},
		{Forward{Kind: ForwardRegisterResult, Outcome: RegisterOutcomePipelineFull}, "pipeline_full"},
		{Forward{Kind: ForwardLogoutResult, Outcome: LogoutOutcomePipelineFull}, "pipeline_full"},
		{Forward{Kind: ForwardLogoutResult, Outcome: 9}, "outcome(9)"},
		{Forward{Kind: ForwardRegister}, ""},
	} {
		if got := tc.f.OutcomeName(); got != tc.want {
			t.Errorf("%s outcome %d: %q, want %q", tc.f.Kind, tc.f.Outcome, got, tc.want)
		}
	}
	if !reflect.DeepEqual([]bool{IsForwardCommand(25), IsForwardCommand(26), IsForwardCommand(29), IsForwardCommand(30)},
		[]bool{false, true, true, false}) {
		t.Fatal("IsForwardCommand")
	}
}
