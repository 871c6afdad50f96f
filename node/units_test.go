package node

import (
	"bytes"
	"testing"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

func TestSemverPacking(t *testing.T) {
	for v, want := range map[string]uint32{"0.9.0": 9000, "1.2.3": 1002003, "0.11.0-edge.4": 11000, "x.y": 0, "1.2.3000": 0} {
		if got := semver(v); got != want {
			t.Errorf("semver(%q) = %d, want %d", v, got, want)
		}
	}
}

func TestCheckpointCodec(t *testing.T) {
	data := encodeCheckpoint([]byte("state"), []byte("table"))
	state, table, err := decodeCheckpoint(data)
	if err != nil || string(state) != "state" || string(table) != "table" {
		t.Fatalf("round trip: %q %q %v", state, table, err)
	}
	for _, bad := range [][]byte{nil, {1, 2}, {9, 0, 0, 0, 'x'}} {
		if _, _, err := decodeCheckpoint(bad); err == nil {
			t.Errorf("decodeCheckpoint(%v) accepted", bad)
		}
	}
}

func TestWriteReplyBodyFraming(t *testing.T) {
	rejected := writeReplyBody(wire.OpCreateStream, metadata.Result{Code: metadata.CodeStreamNameExists}, nil)
	if code, payload, err := wire.DecodeResult(rejected); err != nil || code != wire.ErrStreamNameAlreadyExists || len(payload) != 0 {
		t.Fatalf("rejection: code %s payload %d err %v", code, len(payload), err)
	}
	empty := writeReplyBody(wire.OpDeleteStream, metadata.Result{}, nil)
	if !bytes.Equal(empty, wire.AppendResultOK(nil)) {
		t.Fatalf("empty OK body %x", empty)
	}
	pat := writeReplyBody(wire.OpCreatePersonalAccessToken, metadata.Result{}, patReply{token: "secret-token"})
	_, payload, err := wire.DecodeResult(pat)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := wire.DecodeRawToken(payload); err != nil || tok.Token != "secret-token" {
		t.Fatalf("token payload %+v %v", tok, err)
	}
	st := writeReplyBody(wire.OpCreateStream, metadata.Result{Stream: &metadata.Stream{ID: 3, Name: "s", CreatedAt: 7}}, nil)
	_, payload, _ = wire.DecodeResult(st)
	if sd, err := wire.DecodeStreamDetails(payload); err != nil || sd.ID != 3 || sd.Name != "s" {
		t.Fatalf("stream details %+v %v", sd, err)
	}
}

func TestCreateTopicResolvesOptions(t *testing.T) {
	n := &Node{cfg: &config.Config{Partition: config.PartitionConfig{Durability: "persisted", ConsumerOffsetDurability: "replicated"}}}
	cmd, code := n.createTopicCommand(wire.CreateTopicRequest{
		Stream: wire.NumericID(0), Name: "t", PartitionsCount: 2,
		Options: wire.Options{wire.OptionString(wire.OptCompressionAlgorithm, "gzip"), wire.OptionString(optConsumerOffsetDurability, "persisted")},
	})
	if code != wire.OK {
		t.Fatalf("code %s", code)
	}
	if cmd.Compression != metadata.CompressionGzip || cmd.Options.Durability != metadata.DurabilityPersisted ||
		cmd.Options.ConsumerOffsetDurability != metadata.DurabilityPersisted || cmd.Options.SegmentSize != metadata.DefaultSegmentSize {
		t.Fatalf("resolved %+v", cmd)
	}
	if cmd.ExplicitOptions != metadata.OptCompression|metadata.OptConsumerOffsetDurability {
		t.Fatalf("explicit keys %b", cmd.ExplicitOptions)
	}
	topic := metadata.Topic{Compression: cmd.Compression, Options: cmd.Options, ExplicitOptions: cmd.ExplicitOptions}
	explicit, derived := topicOptionBlocks(topic)
	if len(explicit) != 2 || len(explicit)+len(derived) != 10 {
		t.Fatalf("option blocks: %d explicit, %d derived", len(explicit), len(derived))
	}
	for _, bad := range []struct {
		opt  wire.Option
		want wire.ErrorCode
	}{
		{wire.OptionString(optDurability, "sometimes"), wire.ErrInvalidOptionValue},
		{wire.OptionString("unknown", "x"), wire.ErrUnsupportedOptionKey},
	} {
		_, code := n.createTopicCommand(wire.CreateTopicRequest{Stream: wire.NumericID(0), Name: "t", Options: wire.Options{bad.opt}})
		if code != bad.want {
			t.Errorf("%s: code %s, want %s", bad.opt.Key, code, bad.want)
		}
	}
	zero, code := n.createTopicCommand(wire.CreateTopicRequest{Stream: wire.NumericID(0), Name: "t",
		Options: wire.Options{wire.OptionUint64(wire.OptSegmentSize, 0), wire.OptionUint64(wire.OptMessageExpiry, 0)}})
	if code != wire.OK || zero.ExplicitOptions != 0 || zero.Options.SegmentSize != metadata.DefaultSegmentSize {
		t.Errorf("zero options: code %s explicit %b segment %d", code, zero.ExplicitOptions, zero.Options.SegmentSize)
	}
	if _, code := n.createTopicCommand(wire.CreateTopicRequest{Stream: wire.NumericID(0), Name: "t", PartitionsCount: 1001}); code != wire.ErrTooManyPartitions {
		t.Errorf("1001 partitions: %s", code)
	}
}

func TestCheckTransportsRefusesUnservedOnes(t *testing.T) {
	cfg := &config.Config{}
	cfg.TCP.Enabled, cfg.QUIC.Enabled, cfg.WebSocket.Enabled = true, true, true
	if err := checkTransports(cfg, false); err != nil {
		t.Fatalf("tcp, quic and websocket: %v", err)
	}
	cfg.HTTP.Enabled = true
	if err := checkTransports(cfg, true); err != nil {
		t.Fatalf("http with an HTTP starter: %v", err)
	}
	cfg.WebSocket.AcceptUnmaskedFrames = true
	err := checkTransports(cfg, false)
	if err == nil {
		t.Fatal("unserved settings accepted")
	}
	for _, key := range []string{"http.enabled", "websocket.accept_unmasked_frames"} {
		if !bytes.Contains([]byte(err.Error()), []byte(key)) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
}
