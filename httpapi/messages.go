package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// The send-messages body (spec §8.1), converted to the binary
// SendMessages body the binary protocol carries.

type sendRequest struct {
	Partitioning *partitioningJSON `json:"partitioning"`
	Messages     []sendMessageJSON `json:"messages"`
}

type partitioningJSON struct {
	Kind  *string `json:"kind"`
	Value *string `json:"value"`
}

type sendMessageJSON struct {
	ID          *messageID      `json:"id"`
	Payload     *string         `json:"payload"`
	UserHeaders json.RawMessage `json:"user_headers"`
}

type headerSideJSON struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

type headerJSON struct {
	Key   headerSideJSON `json:"key"`
	Value headerSideJSON `json:"value"`
}

// sendTopLevel are the only keys the send body may carry (spec §1).
var sendTopLevel = map[string]bool{"partitioning": true, "messages": true}

// validate checks the shape (422): strict top level, required fields,
// payloads present, base64 and 1..64,000,000 bytes, header shapes.
func (r *sendRequest) validate() error {
	if err := required(r.Partitioning != nil, "partitioning", r.Messages != nil, "messages"); err != nil {
		return err
	}
	if r.Partitioning.Kind == nil {
		return errors.New("missing field `kind`")
	}
	switch *r.Partitioning.Kind {
	case "balanced", "partition_id", "messages_key":
	default:
		return fmt.Errorf("unknown variant `%s`, expected `balanced`, `partition_id` or `messages_key`", *r.Partitioning.Kind)
	}
	for i, m := range r.Messages {
		if m.Payload == nil {
			return fmt.Errorf("messages[%d]: missing field `payload`", i)
		}
		p, err := base64.StdEncoding.DecodeString(*m.Payload)
		if err != nil || len(p) == 0 || len(p) > wire.BatchPayloadBytesMax {
			return fmt.Errorf("messages[%d]: payload must be standard base64 of 1..%d bytes", i, wire.BatchPayloadBytesMax)
		}
		if _, err := userHeadersBytes(m.UserHeaders); err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	return nil
}

// parseSend decodes a send body: 0 and the request, or the framework
// status (400 syntax, 422 shape) and its text.
func parseSend(body []byte) (*sendRequest, int, string) {
	var top map[string]json.RawMessage
	if status, msg := parseJSON(body, &top); status != 0 {
		return nil, status, msg
	}
	for k := range top {
		if !sendTopLevel[k] {
			return nil, 422, "Failed to deserialize the JSON body into the target type: unknown field `" + k + "`, expected `partitioning` or `messages`"
		}
	}
	var req sendRequest
	if status, msg := parseJSON(body, &req); status != 0 {
		return nil, status, msg
	}
	return &req, 0, ""
}

// partitioning converts the partitioning object; a bad value is 400
// invalid_key_value_length.
func (p *partitioningJSON) toWire() (wire.Partitioning, wire.ErrorCode) {
	raw := []byte{}
	if p.Value != nil {
		b, err := base64.StdEncoding.DecodeString(*p.Value)
		if err != nil {
			return wire.Partitioning{}, wire.ErrInvalidKeyValueLength
		}
		raw = b
	}
	switch *p.Kind {
	case "balanced":
		return wire.Partitioning{Kind: wire.PartitioningBalanced}, wire.OK
	case "partition_id":
		if len(raw) != 4 {
			return wire.Partitioning{}, wire.ErrInvalidKeyValueLength
		}
		return wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: binary.LittleEndian.Uint32(raw)}, wire.OK
	}
	if len(raw) == 0 || len(raw) > 255 {
		return wire.Partitioning{}, wire.ErrInvalidKeyValueLength
	}
	return wire.Partitioning{Kind: wire.PartitioningMessagesKey, Key: raw}, wire.OK
}

// headerKinds maps header kind names to wire kinds.
var headerKinds = func() map[string]wire.ValueKind {
	m := map[string]wire.ValueKind{}
	for k := wire.KindRaw; k <= wire.KindFloat64; k++ {
		m[k.String()] = k
	}
	return m
}()

// userHeadersBytes is the TLV block of a message's user_headers: absent or
// null (none), an array of key/value objects, or a base64 string of
// pre-encoded TLV bytes. The block is checked as the binary decoder does.
func userHeadersBytes(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var block []byte
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("user_headers: bad string")
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, errors.New("user_headers: not standard base64")
		}
		block = b
	} else {
		var hs []headerJSON
		if err := json.Unmarshal(raw, &hs); err != nil {
			return nil, errors.New("user_headers: must be an array of {key, value} or a base64 string")
		}
		for i, h := range hs {
			pair, err := headerPair(h)
			if err != nil {
				return nil, fmt.Errorf("user_headers[%d]: %w", i, err)
			}
			block = pair.Append(block)
			if len(block) > wire.BatchUserHeadersBytesMax {
				return nil, fmt.Errorf("user_headers: more than %d bytes", wire.BatchUserHeadersBytesMax)
			}
		}
	}
	if len(block) == 0 {
		return nil, nil
	}
	if _, err := wire.DecodeUserHeaders(block); err != nil {
		return nil, fmt.Errorf("user_headers: %w", err)
	}
	return block, nil
}

func headerPair(h headerJSON) (wire.TLVPair, error) {
	kk, ok1 := headerKinds[h.Key.Kind]
	vk, ok2 := headerKinds[h.Value.Kind]
	if !ok1 || !ok2 {
		return wire.TLVPair{}, errors.New("unknown header kind")
	}
	k, err1 := base64.StdEncoding.DecodeString(h.Key.Value)
	v, err2 := base64.StdEncoding.DecodeString(h.Value.Value)
	if err1 != nil || err2 != nil || len(k) == 0 || len(k) > 255 || len(v) == 0 || len(v) > 255 {
		return wire.TLVPair{}, errors.New("header key and value must be base64 of 1..255 bytes")
	}
	return wire.TLVPair{KeyKind: kk, Key: k, ValueKind: vk, Value: v}, nil
}

// batch builds the binary messages: a zero or absent id gets a random
// one, origin_timestamp is the receive time.
func (r *sendRequest) batch(now time.Time) ([]wire.BatchMessageInput, error) {
	out := make([]wire.BatchMessageInput, 0, len(r.Messages))
	stamp := uint64(now.UnixMicro())
	for _, m := range r.Messages {
		var id messageID
		if m.ID != nil {
			id = *m.ID
		}
		if id.isZero() {
			var err error
			if id, err = randomMessageID(); err != nil {
				return nil, fmt.Errorf("message id: %w", err)
			}
		}
		payload, _ := base64.StdEncoding.DecodeString(*m.Payload) // validated
		headers, _ := userHeadersBytes(m.UserHeaders)
		out = append(out, wire.BatchMessageInput{ID: id, OriginTimestamp: stamp, Payload: payload, UserHeaders: headers})
	}
	return out, nil
}

// Poll reply JSON (spec §8.2).

type polledHeaderJSON struct {
	Checksum          uint64    `json:"checksum"`
	ID                messageID `json:"id"`
	Offset            uint64    `json:"offset"`
	Timestamp         uint64    `json:"timestamp"`
	OriginTimestamp   uint64    `json:"origin_timestamp"`
	UserHeadersLength uint32    `json:"user_headers_length"`
	PayloadLength     uint32    `json:"payload_length"`
	Reserved          uint64    `json:"reserved"`
}

type polledMessageJSON struct {
	Header      polledHeaderJSON `json:"header"`
	Payload     []byte           `json:"payload"` // base64
	UserHeaders any              `json:"user_headers"`
}

type polledJSON struct {
	PartitionID   uint32              `json:"partition_id"`
	CurrentOffset uint64              `json:"current_offset"`
	Count         uint32              `json:"count"`
	Messages      []polledMessageJSON `json:"messages"`
}

func polledOf(r wire.PollMessagesReply) polledJSON {
	out := polledJSON{PartitionID: r.PartitionID, CurrentOffset: r.CurrentOffset, Count: uint32(len(r.Messages)),
		Messages: make([]polledMessageJSON, 0, len(r.Messages))}
	for _, m := range r.Messages {
		payload := m.Payload
		if payload == nil {
			payload = []byte{}
		}
		out.Messages = append(out.Messages, polledMessageJSON{
			Header: polledHeaderJSON{Checksum: m.Checksum, ID: messageID(m.ID), Offset: m.Offset, Timestamp: m.Timestamp,
				OriginTimestamp: m.OriginTimestamp, UserHeadersLength: uint32(len(m.UserHeaders)), PayloadLength: uint32(len(m.Payload))},
			Payload: payload, UserHeaders: userHeadersJSON(m.UserHeaders),
		})
	}
	return out
}

// userHeadersJSON renders stored headers: [] when none, key/value objects
// when they decode, else the raw bytes as base64.
func userHeadersJSON(b []byte) any {
	if len(b) == 0 {
		return []headerJSON{}
	}
	pairs, err := wire.DecodeUserHeaders(b)
	if err != nil {
		return base64.StdEncoding.EncodeToString(b)
	}
	out := make([]headerJSON, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, headerJSON{
			Key:   headerSideJSON{Kind: p.KeyKind.String(), Value: base64.StdEncoding.EncodeToString(p.Key)},
			Value: headerSideJSON{Kind: p.ValueKind.String(), Value: base64.StdEncoding.EncodeToString(p.Value)},
		})
	}
	return out
}
