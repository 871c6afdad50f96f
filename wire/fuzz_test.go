package wire

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Fuzz targets for every decoder of this codec. Properties: no panic on any input; whatever decodes
// re-encodes to bytes that decode again (the codec never produces what it refuses).

func FuzzRequestHeader(f *testing.F) {
	for _, s := range requestHeaderSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeRequestHeader(b)
		if err != nil {
			return
		}
		frame := EncodeRequest(nil, h, make([]byte, h.BodySize()))
		h2, err := DecodeRequestHeader(frame)
		if err != nil || h2 != h {
			t.Fatalf("re-encoded header %+v decodes to %+v (%v)", h, h2, err)
		}
		if _, err := ReadFrame(bytes.NewReader(frame), 0); err != nil {
			t.Fatalf("re-encoded frame unreadable: %v", err)
		}
	})
}

func FuzzReplyHeader(f *testing.F) {
	for _, s := range replyHeaderSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= HeaderSize && FrameCommand(b) == CommandEviction {
			if ev, err := DecodeEviction(b); err == nil {
				_ = ev.ErrorCode()
			}
		}
		h, err := DecodeReplyHeader(b)
		if err != nil {
			return
		}
		body := make([]byte, int(h.Size)-HeaderSize)
		frame := AppendReplyFrame(nil, h, body)
		h2, err := DecodeReplyHeader(frame)
		if err != nil || h2 != h {
			t.Fatalf("re-encoded reply %+v decodes to %+v (%v)", h, h2, err)
		}
		if len(b) > HeaderSize && h.Operation.ResultFramed(len(b)-HeaderSize) {
			_, _, _ = DecodeResult(b[HeaderSize:])
		}
	})
}

func FuzzRegisterBody(f *testing.F) {
	for _, s := range registerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		shapes, err := DecodeRegisterShapes(b)
		if err != nil {
			_, _ = DecodeRegisterReply(b)
			return
		}
		for _, r := range []*RegisterRequest{shapes.Password, shapes.Token} {
			if r == nil {
				continue
			}
			enc, err := r.Encode()
			if err != nil {
				t.Fatalf("decoded register %+v does not encode: %v", *r, err)
			}
			again, err := DecodeRegisterShapes(enc)
			r2 := again.Password
			if r.Kind == RegisterWithToken {
				r2 = again.Token
			}
			if err != nil || r2 == nil || *r2 != *r {
				t.Fatalf("register round trip %+v → %+v (%v)", *r, again, err)
			}
		}
		_, _ = DecodeRegisterReply(b)
	})
}

// fuzzRequestCodes is the dispatch table of FuzzRequestBodies: the first input byte picks the code.
func fuzzRequestCodes() []CommandCode {
	var codes []CommandCode
	for code := range commandTable {
		if _, err := DecodeRequestBody(code, nil); err != nil {
			if be, ok := err.(*BodyError); ok && be.Field == "code" {
				continue // not owned by this codec
			}
		}
		codes = append(codes, code)
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	return codes
}

func FuzzRequestBodies(f *testing.F) {
	for _, s := range requestBodySeeds() {
		f.Add(s)
	}
	codes := fuzzRequestCodes()
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		code := codes[int(b[0])%len(codes)]
		req, err := DecodeRequestBody(code, b[1:])
		if err != nil {
			return
		}
		if req.Code() != code {
			t.Fatalf("decoded %s for code %s", req.Code(), code)
		}
		if _, err := EncodeRequestBody(req); err != nil {
			t.Fatalf("%s: decoded %+v does not re-encode: %v", code, req, err)
		}
	})
}

// responseDecoders is the dispatch table of FuzzResponseBodies; each entry decodes and re-encodes.
var responseDecoders = []func([]byte) error{
	func(b []byte) error { return reencode(DecodeStreamDetails(b)) },
	func(b []byte) error { v, err := DecodeStreams(b); return reencodeList(v, err) },
	func(b []byte) error { return reencode(DecodeTopicDetails(b)) },
	func(b []byte) error {
		v, err := DecodeTopics(b)
		if err != nil {
			return nil
		}
		_, err = DecodeTopics(AppendTopics(nil, v))
		return err
	},
	func(b []byte) error { return reencode(DecodeGroupDetails(b)) },
	func(b []byte) error { v, err := DecodeConsumerGroups(b); return reencodeList(v, err) },
	func(b []byte) error { return reencode(DecodeUserDetails(b)) },
	func(b []byte) error { v, err := DecodeUsers(b); return reencodeList(v, err) },
	func(b []byte) error { v, err := DecodePersonalAccessTokens(b); return reencodeList(v, err) },
	func(b []byte) error { return reencode(DecodeRawToken(b)) },
	func(b []byte) error { return reencode(DecodeClientDetails(b)) },
	func(b []byte) error { v, err := DecodeClients(b); return reencodeList(v, err) },
	func(b []byte) error { return reencode(DecodeConsumerOffset(b)) },
	func(b []byte) error { return reencode(DecodeAssignment(b)) },
	func(b []byte) error { return reencode(DecodeStats(b)) },
	func(b []byte) error {
		v, err := DecodeOptionSpecs(b)
		if err != nil {
			return nil
		}
		_, err = DecodeOptionSpecs(AppendOptionSpecs(nil, v))
		return err
	},
	func(b []byte) error { return reencode(DecodeClusterMetadata(b)) },
	func(b []byte) error { return reencode(DecodeRegisterReply(b)) },
	func(b []byte) error {
		v, err := DecodeOptions(b)
		if err != nil {
			return nil
		}
		_, err = DecodeOptions(v.Append(nil))
		return err
	},
	func(b []byte) error {
		p, err := DecodePermissions(b)
		if err != nil {
			return nil
		}
		_, err = DecodePermissions(p.Bytes())
		return err
	},
	func(b []byte) error { _, _ = DecodeUserHeaders(b); return nil },
	func(b []byte) error { _, _, _ = DecodeResult(b); return nil },
}

type appender interface{ Append([]byte) []byte }

// reencode checks that a decoded value encodes to bytes its decoder accepts again.
func reencode[T any](v T, err error) error {
	if err != nil {
		return nil
	}
	a, ok := any(&v).(appender)
	if !ok {
		return fmt.Errorf("%T has no Append", v)
	}
	out := a.Append(nil)
	var again error
	switch any(v).(type) {
	case StreamDetails:
		_, again = DecodeStreamDetails(out)
	case TopicDetails:
		_, again = DecodeTopicDetails(out)
	case GroupDetails:
		_, again = DecodeGroupDetails(out)
	case UserDetails:
		_, again = DecodeUserDetails(out)
	case RawToken:
		_, again = DecodeRawToken(out)
	case ClientDetails:
		_, again = DecodeClientDetails(out)
	case ConsumerOffset:
		_, again = DecodeConsumerOffset(out)
	case Assignment:
		_, again = DecodeAssignment(out)
	case Stats:
		_, again = DecodeStats(out)
	case ClusterMetadata:
		_, again = DecodeClusterMetadata(out)
	case RegisterReply:
		_, again = DecodeRegisterReply(out)
	}
	return again
}

func reencodeList[T any](list []T, err error) error {
	if err != nil {
		return nil
	}
	var out []byte
	for i := range list {
		a, ok := any(&list[i]).(appender)
		if !ok {
			return fmt.Errorf("%T has no Append", list[i])
		}
		out = a.Append(out)
	}
	var again error
	switch any(list).(type) {
	case []Stream:
		_, again = DecodeStreams(out)
	case []ConsumerGroup:
		_, again = DecodeConsumerGroups(out)
	case []User:
		_, again = DecodeUsers(out)
	case []PersonalAccessToken:
		_, again = DecodePersonalAccessTokens(out)
	case []Client:
		_, again = DecodeClients(out)
	}
	return again
}

func FuzzResponseBodies(f *testing.F) {
	for _, s := range responseBodySeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		if err := responseDecoders[int(b[0])%len(responseDecoders)](b[1:]); err != nil {
			t.Fatalf("decoder %d: re-encoded value refused: %v", int(b[0])%len(responseDecoders), err)
		}
	})
}

// TestWriteFuzzSeeds regenerates the committed corpus under testdata/fuzz when WIRE_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("WIRE_WRITE_SEEDS") != "1" {
		t.Skip("set WIRE_WRITE_SEEDS=1 to regenerate testdata/fuzz")
	}
	sets := map[string][][]byte{
		"FuzzRequestHeader":  requestHeaderSeeds(),
		"FuzzReplyHeader":    replyHeaderSeeds(),
		"FuzzRegisterBody":   registerSeeds(),
		"FuzzRequestBodies":  requestBodySeeds(),
		"FuzzResponseBodies": responseBodySeeds(),
	}
	for name, seeds := range sets {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", i)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCommittedSeedsDecode runs every committed seed through its target's decoder once, so the corpus is
// exercised by plain `go test` and a missing corpus is noticed.
func TestCommittedSeedsDecode(t *testing.T) {
	for _, name := range []string{"FuzzRequestHeader", "FuzzReplyHeader", "FuzzRegisterBody", "FuzzRequestBodies", "FuzzResponseBodies"} {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", name))
		if err != nil || len(entries) < 5 {
			t.Errorf("%s: corpus missing or small (%d files, %v)", name, len(entries), err)
		}
	}
}
