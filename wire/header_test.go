package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// Hand-assembled header bytes following the tables of wire-protocol.md §1.2–§1.4.

func goldenRequestHeader() []byte {
	b := make([]byte, HeaderSize)
	binary.LittleEndian.PutUint32(b[48:], 256+3)               // size
	b[60] = 5                                                  // command Request
	binary.LittleEndian.PutUint64(b[128:], 0x1122334455667788) // client lo
	binary.LittleEndian.PutUint64(b[136:], 0x99)               // client hi
	binary.LittleEndian.PutUint64(b[160:], 777)                // timestamp
	binary.LittleEndian.PutUint64(b[168:], 4)                  // request
	b[176] = 2                                                 // NonReplicated
	binary.LittleEndian.PutUint64(b[184:], 9)                  // session
	binary.LittleEndian.PutUint32(b[196:], 300)                // command code GetTopic
	return b
}

func TestRequestHeaderGoldenDecode(t *testing.T) {
	h, err := DecodeRequestHeader(goldenRequestHeader())
	if err != nil {
		t.Fatal(err)
	}
	want := RequestHeader{Size: 259, Client: Uint128{Lo: 0x1122334455667788, Hi: 0x99}, Timestamp: 777,
		Request: 4, Operation: OpNonReplicated, Session: 9, Code: CodeGetTopic}
	if h != want {
		t.Fatalf("decoded %+v, want %+v", h, want)
	}
	if h.BodySize() != 3 {
		t.Fatalf("body size %d", h.BodySize())
	}
}

func TestRequestHeaderGoldenEncode(t *testing.T) {
	h := RequestHeader{Client: Uint128{Lo: 0x1122334455667788, Hi: 0x99}, Timestamp: 777, Request: 4,
		Operation: OpNonReplicated, Session: 9, Code: CodeGetTopic}
	frame := EncodeRequest(nil, h, []byte{1, 2, 3})
	if !bytes.Equal(frame[:HeaderSize], goldenRequestHeader()) {
		t.Fatalf("header bytes differ:\n got %x\nwant %x", frame[:HeaderSize], goldenRequestHeader())
	}
	if !bytes.Equal(frame[HeaderSize:], []byte{1, 2, 3}) {
		t.Fatal("body not appended")
	}
}

func TestRequestHeaderCodeOnlyForNonReplicated(t *testing.T) {
	h := RequestHeader{Client: Uint128{Lo: 1}, Request: 1, Session: 1, Operation: OpCreateStream, Code: CodeCreateStream}
	frame := EncodeRequest(nil, h, nil)
	if got := binary.LittleEndian.Uint32(frame[196:]); got != 0 {
		t.Fatalf("reserved[196..199] = %d for a replicated op, want 0", got)
	}
	binary.LittleEndian.PutUint32(frame[196:], 202)
	dh, err := DecodeRequestHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	if dh.Code != 0 {
		t.Fatalf("code %d decoded for a replicated op", dh.Code)
	}
}

func TestRequestHeaderRules(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(b []byte)
		field string
	}{
		{"command not request", func(b []byte) { b[60] = 8 }, "command"},
		{"client zero", func(b []byte) { clear(b[128:144]) }, "client"},
		{"operation reserved", func(b []byte) { b[176] = 0 }, "operation"},
		{"operation undeclared", func(b []byte) { b[176] = 99 }, "operation"},
		{"operation internal", func(b []byte) { b[176] = 68 }, "operation"},
		{"register with session", func(b []byte) { b[176] = 1; b[168] = 0 }, "session"},
		{"register with request", func(b []byte) { b[176] = 1; b[184] = 0 }, "request"},
		{"metadata without session", func(b []byte) { b[176] = 128; b[184] = 0 }, "session"},
		{"metadata without request", func(b []byte) { b[176] = 128; b[168] = 0 }, "request"},
		{"logout without session", func(b []byte) { b[176] = 3; b[184] = 0 }, "session"},
		{"partition without request", func(b []byte) { b[176] = 160; b[168] = 0 }, "request"},
		{"size below header", func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 255) }, ""},
		{"size above max", func(b []byte) { binary.LittleEndian.PutUint32(b[48:], FrameSizeMax+1) }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := goldenRequestHeader()
			tc.edit(b)
			_, err := DecodeRequestHeader(b)
			if err == nil {
				t.Fatal("accepted")
			}
			var he *HeaderError
			var se *FrameSizeError
			switch {
			case tc.field == "" && errors.As(err, &se):
			case errors.As(err, &he) && he.Field == tc.field:
			default:
				t.Fatalf("error %v does not name %q", err, tc.field)
			}
		})
	}
	// NonReplicated before login: session 0 and request 0 are allowed.
	b := goldenRequestHeader()
	clear(b[168:176])
	clear(b[184:192])
	if _, err := DecodeRequestHeader(b); err != nil {
		t.Fatalf("unbound NonReplicated refused: %v", err)
	}
	if _, err := DecodeRequestHeader(b[:100]); err == nil {
		t.Fatal("short header accepted")
	}
}

func TestReplyHeaderGolden(t *testing.T) {
	req := RequestHeader{Client: Uint128{Lo: 5, Hi: 6}, RequestChecksum: Uint128{Lo: 0xabc}, Timestamp: 42,
		Request: 17, Operation: OpDeleteSegments, Session: 3}
	body := AppendResultOK(nil)
	frame := EncodeReply(nil, req, OK, body)

	want := make([]byte, HeaderSize+4)
	binary.LittleEndian.PutUint32(want[48:], 260)
	want[60] = 8
	binary.LittleEndian.PutUint64(want[128:], 0xabc) // request_checksum echo
	binary.LittleEndian.PutUint64(want[160:], 5)     // client
	binary.LittleEndian.PutUint64(want[168:], 6)
	binary.LittleEndian.PutUint64(want[192:], 42) // timestamp echo
	binary.LittleEndian.PutUint64(want[200:], 17) // request echo
	want[208] = 68                                // DeleteSegments answered as TruncatePartition
	if !bytes.Equal(frame, want) {
		t.Fatalf("reply bytes differ:\n got %x\nwant %x", frame, want)
	}
	rh, err := DecodeReplyHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	if rh.Request != 17 || rh.Operation != OpTruncatePartition || rh.Status != OK || rh.Size != 260 {
		t.Fatalf("decoded %+v", rh)
	}
}

func TestReplyStatusDropsBody(t *testing.T) {
	req := RequestHeader{Client: Uint128{Lo: 1}, Request: 2, Operation: OpNonReplicated}
	frame := EncodeReply(nil, req, ErrUnauthenticated, []byte("ignored"))
	if len(frame) != HeaderSize {
		t.Fatalf("status reply carries %d body bytes", len(frame)-HeaderSize)
	}
	if got := binary.LittleEndian.Uint32(frame[216:]); got != 40 {
		t.Fatalf("status %d", got)
	}
	// A decoder refuses a status reply with a body.
	bad := append(frame[:HeaderSize:HeaderSize], 1)
	binary.LittleEndian.PutUint32(bad[48:], HeaderSize+1)
	if _, err := DecodeReplyHeader(bad); err == nil {
		t.Fatal("status reply with body accepted")
	}
	bad[208] = 99
	if _, err := DecodeReplyHeader(bad); err == nil {
		t.Fatal("undeclared reply operation accepted")
	}
}

func TestEvictionGolden(t *testing.T) {
	f := EncodeEviction(Uint128{Lo: 7}, EvictIncompatibleProtocol, 11264, 11264)
	want := make([]byte, HeaderSize)
	binary.LittleEndian.PutUint32(want[48:], 256)
	want[60] = 13
	want[128] = 7
	binary.LittleEndian.PutUint32(want[144:], 11264)
	binary.LittleEndian.PutUint32(want[148:], 11264)
	want[255] = 14
	if !bytes.Equal(f[:], want) {
		t.Fatalf("eviction bytes differ:\n got %x\nwant %x", f, want)
	}
	ev, err := DecodeEviction(f[:])
	if err != nil {
		t.Fatal(err)
	}
	if ev.ErrorCode() != ErrIncompatibleProtocolVersion {
		t.Fatalf("reason 14 with versions maps to %s", ev.ErrorCode())
	}
	// Versions are only written for reason 14.
	g := EncodeEviction(Uint128{Lo: 7}, EvictStaleClient, 11264, 11264)
	if binary.LittleEndian.Uint32(g[144:]) != 0 || g[255] != 13 {
		t.Fatal("versions written for a non-version eviction")
	}
}

func TestEvictionReasonMapping(t *testing.T) {
	want := map[EvictionReason]ErrorCode{
		0: ErrInvalidCommand, 1: ErrUnauthenticated, 2: ErrInvalidCommand, 3: ErrInvalidCommand,
		4: ErrInvalidCommand, 5: ErrInvalidCommand, 6: ErrInvalidCommand, 7: ErrUnauthenticated,
		8: ErrUnauthenticated, 9: ErrInvalidCredentials, 10: ErrInvalidPersonalAccessToken,
		11: ErrUnauthenticated, 12: ErrUnauthenticated, 13: ErrStaleClient, 14: ErrUnauthenticated,
		15: ErrInvalidFormat, 16: ErrInvalidCommand, 255: ErrInvalidCommand,
	}
	for reason, code := range want {
		if got := (Eviction{Reason: reason}).ErrorCode(); got != code {
			t.Errorf("reason %d maps to %s, want %s", reason, got, code)
		}
	}
}

func TestFrameReadWrite(t *testing.T) {
	req := RequestHeader{Client: Uint128{Lo: 1}, Request: 1, Session: 1, Operation: OpCreateStream}
	frame := EncodeRequest(nil, req, []byte("body"))
	var buf bytes.Buffer
	if err := WriteFrame(&buf, frame); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&buf, frame); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		f, err := ReadFrame(&buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(f.Body) != "body" || f.Command() != CommandRequest || !bytes.Equal(f.Bytes(), frame) {
			t.Fatalf("frame %d: %+v", i, f)
		}
	}
	if _, err := ReadFrame(&buf, 0); err != io.EOF {
		t.Fatalf("clean end returned %v, want io.EOF", err)
	}
	// Truncated body.
	if _, err := ReadFrame(bytes.NewReader(frame[:len(frame)-1]), 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated body returned %v", err)
	}
	// A size above the caller's limit is refused before the body is read.
	var se *FrameSizeError
	if _, err := ReadFrame(bytes.NewReader(frame), HeaderSize+3); !errors.As(err, &se) || se.Size != HeaderSize+4 {
		t.Fatalf("over-limit frame returned %v", err)
	}
	bad := bytes.Clone(frame)
	binary.LittleEndian.PutUint32(bad[48:], 100)
	if _, err := ReadFrame(bytes.NewReader(bad), 0); !errors.As(err, &se) {
		t.Fatalf("undersized frame returned %v", err)
	}
	if err := WriteFrame(io.Discard, frame[:len(frame)-1]); err == nil || !strings.Contains(err.Error(), "size field") {
		t.Fatalf("mismatched frame written: %v", err)
	}
}

func TestResultSection(t *testing.T) {
	ok := append(AppendResultOK(nil), 0xAA, 0xBB)
	if !bytes.Equal(ok, []byte{0, 0, 0, 0, 0xAA, 0xBB}) {
		t.Fatalf("ok section %x", ok)
	}
	code, payload, err := DecodeResult(ok)
	if err != nil || code != OK || !bytes.Equal(payload, []byte{0xAA, 0xBB}) {
		t.Fatalf("decode ok: %v %v %x", code, err, payload)
	}
	rej := AppendResultRejection(nil, ErrStreamNameAlreadyExists)
	if !bytes.Equal(rej, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xF4, 0x03, 0, 0}) {
		t.Fatalf("rejection bytes %x", rej)
	}
	code, payload, err = DecodeResult(rej)
	if err != nil || code != ErrStreamNameAlreadyExists || len(payload) != 0 {
		t.Fatalf("decode rejection: %v %v %x", code, err, payload)
	}
	for _, bad := range [][]byte{nil, {1, 0}, {1, 0, 0, 0, 0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff}} {
		if _, _, err := DecodeResult(bad); err == nil {
			t.Fatalf("short section %x accepted", bad)
		}
	}
}

func TestVersionGate(t *testing.T) {
	if ProtocolVersion != 11264 || ProtocolVersionMin != 11264 {
		t.Fatalf("version %d min %d, want 11264", ProtocolVersion, ProtocolVersionMin)
	}
	if PackVersion(1, 2, 3) != 1<<20|2<<10|3 || FormatVersion(PackVersion(0, 11, 7)) != "0.11.7" {
		t.Fatal("packing")
	}
	for v, ok := range map[uint32]bool{
		PackVersion(0, 11, 0): true, PackVersion(0, 11, 1023): true, PackVersion(0, 10, 9): false,
		PackVersion(0, 12, 0): false, PackVersion(1, 11, 0): false, 0: false,
	} {
		if VersionAccepted(v) != ok {
			t.Errorf("VersionAccepted(%s) = %v", FormatVersion(v), !ok)
		}
	}
}

func TestRequestChecksum(t *testing.T) {
	body := []byte("hello")
	h := RequestHeader{}
	if !RequestChecksumValid(h, body) {
		t.Fatal("zero checksum must be unchecked")
	}
	h.RequestChecksum = BodyChecksum(body)
	if h.RequestChecksum.Hi != 0 || h.RequestChecksum.Lo == 0 || !RequestChecksumValid(h, body) {
		t.Fatalf("checksum %v", h.RequestChecksum)
	}
	if RequestChecksumValid(h, []byte("hellO")) {
		t.Fatal("mismatched checksum accepted")
	}
	// XXH3-64 of the empty input with seed 0 is a published constant.
	if BodyChecksum(nil).Lo != 0x2D06800538D394C2 {
		t.Fatalf("XXH3-64(empty) = %x", BodyChecksum(nil).Lo)
	}
}
