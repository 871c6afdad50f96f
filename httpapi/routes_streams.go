package httpapi

import (
	"net/http"
	"strings"

	"github.com/lodestream/lodestream/wire"
)

// getStreams: GET /streams.
func (c *call) getStreams() {
	if c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetStreams, nil)
	if !ok {
		return
	}
	streams, err := wire.DecodeStreams(reply)
	if !c.decoded(err) {
		return
	}
	out := make([]streamJSON, 0, len(streams))
	for _, s := range streams {
		out = append(out, streamOf(s))
	}
	writeJSON(c.w, http.StatusOK, out)
}

// getStream: GET /streams/{stream_id}.
func (c *call) getStream() {
	id, ok := c.ident("stream_id")
	if !ok || c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetStream, wire.IdentRequest{Command: wire.CodeGetStream, ID: id}.AppendBody(nil))
	if !ok {
		return
	}
	if len(reply) == 0 {
		writeNotFound(c.w)
		return
	}
	s, err := wire.DecodeStreamDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, streamDetailsOf(s))
}

type nameRequest struct {
	Name    *string           `json:"name"`
	Options map[string]string `json:"options"`
}

func (r *nameRequest) validate() error { return required(r.Name != nil, "name") }

// checkName answers an empty or over-long name with code.
func (c *call) checkName(name string, code wire.ErrorCode) bool {
	if !fitsName8(name) {
		writeCode(c.w, code)
		return false
	}
	return true
}

// createStream: POST /streams → 200 StreamDetails.
func (c *call) createStream() {
	var req nameRequest
	if !c.decodeJSON(&req) || !c.checkName(*req.Name, wire.ErrInvalidStreamName) {
		return
	}
	reply, ok := c.exec(wire.CodeCreateStream, wire.CreateStreamRequest{Name: *req.Name, Options: stringOptions(req.Options)}.AppendBody(nil))
	if !ok {
		return
	}
	s, err := wire.DecodeStreamDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, streamDetailsOf(s))
}

// updateStream: PUT /streams/{stream_id} → 204.
func (c *call) updateStream() {
	id, ok := c.ident("stream_id")
	if !ok {
		return
	}
	var req nameRequest
	if !c.decodeJSON(&req) || !c.checkName(*req.Name, wire.ErrInvalidStreamName) {
		return
	}
	c.execNoContent(wire.CodeUpdateStream, wire.UpdateStreamRequest{Stream: id, Name: *req.Name, Options: stringOptions(req.Options)}.AppendBody(nil))
}

// deleteStream: DELETE /streams/{stream_id} → 204.
func (c *call) deleteStream() { c.streamCommand(wire.CodeDeleteStream) }

// purgeStream: DELETE /streams/{stream_id}/purge → 204.
func (c *call) purgeStream() { c.streamCommand(wire.CodePurgeStream) }

func (c *call) streamCommand(code wire.CommandCode) {
	id, ok := c.ident("stream_id")
	if !ok {
		return
	}
	c.execNoContent(code, wire.IdentRequest{Command: code, ID: id}.AppendBody(nil))
}

// getTopics: GET /streams/{stream_id}/topics.
func (c *call) getTopics() {
	id, ok := c.ident("stream_id")
	if !ok || c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetTopics, wire.IdentRequest{Command: wire.CodeGetTopics, ID: id}.AppendBody(nil))
	if !ok {
		return
	}
	topics, err := wire.DecodeTopics(reply)
	if !c.decoded(err) {
		return
	}
	out := make([]topicJSON, 0, len(topics))
	for _, t := range topics {
		out = append(out, topicOf(t))
	}
	writeJSON(c.w, http.StatusOK, out)
}

// topicPath is {stream_id}/{topic_id}.
func (c *call) topicPath() (wire.Identifier, wire.Identifier, bool) {
	ids, ok := c.idents("stream_id", "topic_id")
	if !ok {
		return wire.Identifier{}, wire.Identifier{}, false
	}
	return ids[0], ids[1], true
}

// getTopic: GET /streams/{stream_id}/topics/{topic_id}.
func (c *call) getTopic() {
	s, t, ok := c.topicPath()
	if !ok || c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetTopic, wire.TopicRequest{Command: wire.CodeGetTopic, Stream: s, Topic: t}.AppendBody(nil))
	if !ok {
		return
	}
	if len(reply) == 0 {
		writeNotFound(c.w)
		return
	}
	td, err := wire.DecodeTopicDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, topicDetailsOf(td))
}

type createTopicRequest struct {
	Name                 *string           `json:"name"`
	PartitionsCount      *uint32           `json:"partitions_count"`
	CompressionAlgorithm *string           `json:"compression_algorithm"`
	MessageExpiry        *uint64           `json:"message_expiry"`
	MaxTopicSize         *uint64           `json:"max_topic_size"`
	Options              map[string]string `json:"options"`
}

func (r *createTopicRequest) validate() error {
	if err := required(r.Name != nil, "name", r.PartitionsCount != nil, "partitions_count",
		r.CompressionAlgorithm != nil, "compression_algorithm", r.MessageExpiry != nil, "message_expiry",
		r.MaxTopicSize != nil, "max_topic_size"); err != nil {
		return err
	}
	return validCompression(r.CompressionAlgorithm)
}

func validCompression(s *string) error {
	if s == nil {
		return nil
	}
	switch strings.ToLower(*s) {
	case "none", "gzip":
		return nil
	}
	return errorf("unknown compression algorithm `%s`, expected `none` or `gzip`", *s)
}

// topicOptions carries the JSON settings as the binary protocol's topic
// options: compression, expiry and size (0 = server default: not sent),
// then the free-form options as strings.
func topicOptions(compression *string, expiry, maxSize *uint64, extra map[string]string) wire.Options {
	var opts wire.Options
	if compression != nil {
		opts = append(opts, wire.OptionString(wire.OptCompressionAlgorithm, strings.ToLower(*compression)))
	}
	if expiry != nil && *expiry != 0 {
		opts = append(opts, wire.OptionUint64(wire.OptMessageExpiry, *expiry))
	}
	if maxSize != nil && *maxSize != 0 {
		opts = append(opts, wire.OptionUint64(wire.OptMaxTopicSize, *maxSize))
	}
	for _, o := range stringOptions(extra) {
		if _, dup := opts.Get(o.Key); !dup {
			opts = append(opts, o)
		}
	}
	return opts
}

// createTopic: POST /streams/{stream_id}/topics → 200 TopicDetails.
func (c *call) createTopic() {
	s, ok := c.ident("stream_id")
	if !ok {
		return
	}
	var req createTopicRequest
	if !c.decodeJSON(&req) || !c.checkName(*req.Name, wire.ErrInvalidTopicName) {
		return
	}
	body := wire.CreateTopicRequest{Stream: s, PartitionsCount: *req.PartitionsCount, Name: *req.Name,
		Options: topicOptions(req.CompressionAlgorithm, req.MessageExpiry, req.MaxTopicSize, req.Options)}
	reply, ok := c.exec(wire.CodeCreateTopic, body.AppendBody(nil))
	if !ok {
		return
	}
	td, err := wire.DecodeTopicDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, topicDetailsOf(td))
}

type updateTopicRequest struct {
	Name                 *string           `json:"name"`
	CompressionAlgorithm *string           `json:"compression_algorithm"`
	MessageExpiry        *uint64           `json:"message_expiry"`
	MaxTopicSize         *uint64           `json:"max_topic_size"`
	Options              map[string]string `json:"options"`
}

func (r *updateTopicRequest) validate() error {
	if err := required(r.Name != nil, "name"); err != nil {
		return err
	}
	return validCompression(r.CompressionAlgorithm)
}

// updateTopic: PUT /streams/{stream_id}/topics/{topic_id} → 204; omitted
// settings keep their value.
func (c *call) updateTopic() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	var req updateTopicRequest
	if !c.decodeJSON(&req) || !c.checkName(*req.Name, wire.ErrInvalidTopicName) {
		return
	}
	body := wire.UpdateTopicRequest{Stream: s, Topic: t, Name: *req.Name,
		Options: topicOptions(req.CompressionAlgorithm, req.MessageExpiry, req.MaxTopicSize, req.Options)}
	c.execNoContent(wire.CodeUpdateTopic, body.AppendBody(nil))
}

// deleteTopic: DELETE /streams/{stream_id}/topics/{topic_id} → 204.
func (c *call) deleteTopic() { c.topicCommand(wire.CodeDeleteTopic) }

// purgeTopic: DELETE …/purge → 204.
func (c *call) purgeTopic() { c.topicCommand(wire.CodePurgeTopic) }

func (c *call) topicCommand(code wire.CommandCode) {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	c.execNoContent(code, wire.TopicRequest{Command: code, Stream: s, Topic: t}.AppendBody(nil))
}

type partitionsRequest struct {
	PartitionsCount *uint32 `json:"partitions_count"`
}

func (r *partitionsRequest) validate() error {
	return required(r.PartitionsCount != nil, "partitions_count")
}

// createPartitions: POST …/partitions → 200, empty body.
func (c *call) createPartitions() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	var req partitionsRequest
	if !c.decodeJSON(&req) {
		return
	}
	if *req.PartitionsCount == 0 {
		writeCode(c.w, wire.ErrInvalidPartitionsCount)
		return
	}
	body := wire.PartitionsRequest{Command: wire.CodeCreatePartitions, Stream: s, Topic: t, Count: *req.PartitionsCount}
	if _, ok := c.exec(wire.CodeCreatePartitions, body.AppendBody(nil)); ok {
		c.w.WriteHeader(http.StatusOK)
	}
}

// deletePartitions: DELETE …/partitions?partitions_count=N → 204.
func (c *call) deletePartitions() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	q := c.query(false)
	n := q.u32("partitions_count", 0, true)
	if q.bad {
		return
	}
	if n == 0 {
		writeCode(c.w, wire.ErrInvalidPartitionsCount)
		return
	}
	body := wire.PartitionsRequest{Command: wire.CodeDeletePartitions, Stream: s, Topic: t, Count: n}
	c.execNoContent(wire.CodeDeletePartitions, body.AppendBody(nil))
}

// deleteSegments: DELETE …/partitions/{partition_id}?segments_count=N → 204.
func (c *call) deleteSegments() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	p, ok := c.pathU32("partition_id")
	if !ok {
		return
	}
	q := c.query(false)
	n := q.u32("segments_count", 0, true)
	if q.bad {
		return
	}
	body := wire.DeleteSegmentsRequest{Stream: s, Topic: t, PartitionID: p, SegmentsCount: n}
	c.execNoContent(wire.CodeDeleteSegments, body.AppendBody(nil))
}

// stringOptions is the options object as string-valued options, in key
// order (deterministic bodies).
func stringOptions(m map[string]string) wire.Options {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	out := make(wire.Options, 0, len(m))
	for _, k := range keys {
		out = append(out, wire.OptionString(k, m[k]))
	}
	return out
}
