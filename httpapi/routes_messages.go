package httpapi

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/lodestream/lodestream/wire"
)

type confirmationJSON struct {
	StreamID    uint32 `json:"stream_id"`
	TopicID     uint32 `json:"topic_id"`
	PartitionID uint32 `json:"partition_id"`
	BaseOffset  uint64 `json:"base_offset"`
}

type confirmationsJSON struct {
	Confirmations []confirmationJSON `json:"confirmations"`
}

// sendMessages: POST …/messages[?ack=replicated|none] → 201 confirmations,
// or 202 (ack=none) once admitted and dispatched.
func (c *call) sendMessages() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	q := c.query(false)
	ack, hasAck := q.raw("ack")
	if hasAck && ack != "replicated" && ack != "none" {
		q.fail("ack", "unknown variant `"+ack+"`, expected `replicated` or `none`")
	}
	if q.bad {
		return
	}
	body, ok := c.readJSONBody()
	if !ok {
		return
	}
	req, status, msg := parseSend(body)
	if status != 0 {
		writePlain(c.w, status, msg)
		return
	}
	if len(req.Messages) == 0 {
		writeCode(c.w, wire.ErrInvalidMessagesCount)
		return
	}
	partitioning, code := req.Partitioning.toWire()
	if code != wire.OK {
		writeCode(c.w, code)
		return
	}
	msgs, err := req.batch(time.Now())
	if err != nil {
		c.s.log.Error("building a message batch", "err", err)
		writeCode(c.w, wire.ErrError)
		return
	}
	frame, err := wire.AppendSendMessages(nil, s, t, partitioning, msgs)
	if err != nil {
		writeCode(c.w, wire.ErrInvalidFormat)
		return
	}
	if !c.s.writes.admit(c.w, c.p.Key) {
		return
	}
	defer c.s.writes.release(c.p.Key)
	if ack == "none" {
		ctx, cancel := context.WithTimeout(c.r.Context(), requestTimeout)
		defer cancel()
		if code := c.s.node.SendMessagesNoWait(ctx, c.p, frame); code != wire.OK {
			writeCode(c.w, code)
			return
		}
		c.w.Header().Set("iggy-durability", "none")
		c.w.WriteHeader(http.StatusAccepted)
		return
	}
	reply, ok := c.execPartitionWrite(wire.CodeSendMessages, frame, "produce_timeout", "Produce not acknowledged in time (it may still commit)")
	if !ok {
		return
	}
	confs, err := wire.DecodeSendMessagesReply(reply)
	if !c.decoded(err) {
		return
	}
	out := confirmationsJSON{Confirmations: make([]confirmationJSON, 0, len(confs))}
	for _, cf := range confs {
		out.Confirmations = append(out.Confirmations, confirmationJSON{StreamID: cf.StreamID, TopicID: cf.TopicID,
			PartitionID: cf.PartitionID, BaseOffset: cf.BaseOffset})
	}
	c.w.Header().Set("iggy-durability", "replicated-memory")
	writeJSON(c.w, http.StatusCreated, out)
}

// readJSONBody checks the content type and reads the (bounded) body.
func (c *call) readJSONBody() ([]byte, bool) {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writePlain(c.w, http.StatusUnsupportedMediaType, "Expected request with `Content-Type: application/json`")
		return nil, false
	}
	body, err := io.ReadAll(c.r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writePlain(c.w, http.StatusRequestEntityTooLarge, "Failed to buffer the request body: length limit exceeded")
			return nil, false
		}
		writePlain(c.w, http.StatusBadRequest, "Failed to read the request body")
		return nil, false
	}
	c.body = body
	return body, true
}

var pollKinds = map[string]wire.PollingKind{
	"offset": wire.PollOffset, "timestamp": wire.PollTimestamp, "first": wire.PollFirst, "last": wire.PollLast, "next": wire.PollNext,
	"o": wire.PollOffset, "t": wire.PollTimestamp, "f": wire.PollFirst, "l": wire.PollLast, "n": wire.PollNext,
}

// consumerIdent is a consumer id: a u32 or a name.
func consumerIdent(v string) (wire.Identifier, bool) {
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return wire.NumericID(uint32(n)), true
	}
	if len(v) == 0 || len(v) > 255 {
		return wire.Identifier{}, false
	}
	return wire.NamedID(v), true
}

// pollMessages: GET …/messages?consumer_id&partition_id&kind&value&count&auto_commit.
func (c *call) pollMessages() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	q := c.query(true)
	consumer := wire.NumericID(1)
	if v, present := q.raw("consumer_id"); present {
		if consumer, ok = consumerIdent(v); !ok {
			q.fail("consumer_id", "invalid consumer id")
		}
	}
	partition := q.u32("partition_id", 0, false)
	kind := wire.PollOffset
	if v, present := q.raw("kind"); present {
		if kind, ok = pollKinds[v]; !ok {
			q.fail("kind", "unknown polling kind `"+v+"`")
		}
	}
	value := q.u64("value", 0, false)
	count := q.u32("count", 10, false)
	autoCommit := q.boolean("auto_commit", false)
	if q.bad {
		return
	}
	req := wire.PollMessagesRequest{Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: consumer}, Stream: s, Topic: t,
		Partition: wire.OptPartition{Present: true, ID: partition}, Strategy: wire.PollingStrategy{Kind: kind, Value: value},
		Count: count, AutoCommit: autoCommit}
	reply, code := c.s.node.Execute(c.r.Context(), c.p, wire.CodePollMessages, req.Append(nil))
	switch code {
	case wire.OK:
	case wire.ErrStreamIDNotFound, wire.ErrTopicIDNotFound, wire.ErrStreamNameNotFound, wire.ErrTopicNameNotFound:
		writeNotFound(c.w)
		return
	default:
		writeCode(c.w, code)
		return
	}
	r, err := wire.DecodePollMessagesReply(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, polledOf(r))
}

// offsetTarget is the consumer-offset request of a route.
func (c *call) offsetTarget(code wire.CommandCode, consumer wire.Identifier, partition wire.OptPartition) (wire.ConsumerOffsetRequest, bool) {
	s, t, ok := c.topicPath()
	if !ok {
		return wire.ConsumerOffsetRequest{}, false
	}
	return wire.ConsumerOffsetRequest{Command: code, Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: consumer},
		Stream: s, Topic: t, Partition: partition, Ack: wire.AckQuorum}, true
}

// getOffset: GET …/consumer-offsets?consumer_id&partition_id → 200 / 404.
func (c *call) getOffset() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	q := c.query(true)
	consumer := wire.NumericID(1)
	if v, present := q.raw("consumer_id"); present {
		if consumer, ok = consumerIdent(v); !ok {
			q.fail("consumer_id", "invalid consumer id")
		}
	}
	partition := q.u32("partition_id", 0, false)
	if q.bad {
		return
	}
	req := wire.ConsumerOffsetRequest{Command: wire.CodeGetConsumerOffset, Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: consumer},
		Stream: s, Topic: t, Partition: wire.OptPartition{Present: true, ID: partition}}
	reply, ok := c.exec(wire.CodeGetConsumerOffset, req.AppendBody(nil))
	if !ok {
		return
	}
	if len(reply) == 0 {
		writeNotFound(c.w)
		return
	}
	o, err := wire.DecodeConsumerOffset(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, offsetJSON{PartitionID: o.PartitionID, CurrentOffset: o.CurrentOffset, StoredOffset: o.StoredOffset})
}

// consumerIDJSON is consumer_id as a number or a string.
type consumerIDJSON struct{ id wire.Identifier }

func (c *consumerIDJSON) UnmarshalJSON(b []byte) error {
	var n uint32
	if err := jsonUnmarshal(b, &n); err == nil {
		c.id = wire.NumericID(n)
		return nil
	}
	var s string
	if err := jsonUnmarshal(b, &s); err != nil {
		return errors.New("consumer_id must be a u32 or a string")
	}
	id, ok := consumerIdent(s)
	if !ok {
		return errors.New("consumer_id must be a u32 or a name of 1..255 bytes")
	}
	c.id = id
	return nil
}

type storeOffsetRequest struct {
	ConsumerID  *consumerIDJSON `json:"consumer_id"`
	PartitionID *uint32         `json:"partition_id"`
	Offset      *uint64         `json:"offset"`
}

func (r *storeOffsetRequest) validate() error { return required(r.Offset != nil, "offset") }

// storeOffset: PUT …/consumer-offsets → 204.
func (c *call) storeOffset() {
	if _, _, ok := c.topicPath(); !ok {
		return
	}
	var req storeOffsetRequest
	if !c.decodeJSON(&req) {
		return
	}
	consumer := wire.NumericID(1)
	if req.ConsumerID != nil {
		consumer = req.ConsumerID.id
	}
	if req.PartitionID == nil {
		writeCode(c.w, wire.ErrResourceNotFound) // no partition resolves (spec §8.3)
		return
	}
	target, ok := c.offsetTarget(wire.CodeStoreConsumerOffset, consumer, wire.OptPartition{Present: true, ID: *req.PartitionID})
	if !ok {
		return
	}
	target.Offset = *req.Offset
	c.offsetWrite(wire.CodeStoreConsumerOffset, target.AppendBody(nil))
}

// deleteOffset: DELETE …/consumer-offsets/{consumer_id}[?partition_id] → 204.
func (c *call) deleteOffset() {
	if _, _, ok := c.topicPath(); !ok {
		return
	}
	consumer, ok := consumerIdent(c.r.PathValue("consumer_id"))
	if !ok {
		writeCode(c.w, wire.ErrInvalidIdentifier)
		return
	}
	q := c.query(false)
	partition := wire.OptPartition{}
	if _, present := q.raw("partition_id"); present {
		partition = wire.OptPartition{Present: true, ID: q.u32("partition_id", 0, false)}
	}
	if q.bad {
		return
	}
	target, ok := c.offsetTarget(wire.CodeDeleteConsumerOffset, consumer, partition)
	if !ok {
		return
	}
	c.offsetWrite(wire.CodeDeleteConsumerOffset, target.AppendBody(nil))
}

// offsetWrite runs an admitted consumer-offset write, answered 204.
func (c *call) offsetWrite(code wire.CommandCode, body []byte) {
	if !c.s.writes.admit(c.w, c.p.Key) {
		return
	}
	defer c.s.writes.release(c.p.Key)
	if _, ok := c.execPartitionWrite(code, body, "offset_write_timeout", "Consumer offset write not acknowledged in time (it may still commit)"); ok {
		c.w.WriteHeader(http.StatusNoContent)
	}
}

// execPartitionWrite is exec for partition writes: an outcome that is
// unknown after the wait (57) is 504 with the route's code (spec §3.3),
// never retried by the server. A refusal that proves the write was not
// admitted here (58) is tried on the other nodes (partition_retry.go).
func (c *call) execPartitionWrite(code wire.CommandCode, body []byte, timeoutCode, timeoutReason string) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(c.r.Context(), requestTimeout)
	defer cancel()
	reply, ec := c.s.node.Execute(ctx, c.p, code, body)
	switch ec {
	case wire.OK:
		return reply, true
	case wire.ErrTransientNotCommitted:
		writeHTTPError(c.w, http.StatusGatewayTimeout, timeoutCode, timeoutReason)
	case wire.ErrTransientNotAccepted:
		if !c.retryPartitionWrite(c.body, timeoutCode, timeoutReason) {
			writeCode(c.w, ec)
		}
	default:
		writeCode(c.w, ec)
	}
	return nil, false
}
