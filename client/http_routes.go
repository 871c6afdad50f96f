package client

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/lodestream/lodestream/wire"
)

// httpRoute is one binary command as a REST request (spec http-api §4) and how its 2xx answer
// becomes the binary reply payload.
type httpRoute struct {
	method string
	path   string     // escaped path
	query  url.Values // nil: none
	body   any        // JSON body; nil: none
	// lookup: a generic 404 not_found means "absent", answered as the binary protocol does: an
	// empty payload.
	lookup bool
	// convert turns the 2xx body into the binary payload; nil: an empty payload.
	convert func(body []byte) ([]byte, error)
}

// routeRefusal is a command the REST API cannot carry: answered locally with code.
type routeRefusal struct {
	code wire.ErrorCode
	why  string
}

func (r *routeRefusal) Error() string { return r.why }

func refuse(code wire.ErrorCode, format string, args ...any) error {
	return &routeRefusal{code: code, why: fmt.Sprintf(format, args...)}
}

// pathIdent is an identifier as a path segment: a numeric id, or a name. A name made of digits only
// would be read as an id by the server (spec §1), so it cannot be addressed over HTTP.
func pathIdent(id wire.Identifier) (string, error) {
	if id.Kind == wire.IdentNumeric {
		return strconv.FormatUint(uint64(id.Numeric), 10), nil
	}
	if _, err := strconv.ParseUint(id.Name, 10, 32); err == nil {
		return "", refuse(wire.ErrFeatureUnavailable, "the name %q reads as a numeric id over HTTP: use the id", id.Name)
	}
	return url.PathEscape(id.Name), nil
}

func pathOf(ids ...wire.Identifier) ([]string, error) {
	out := make([]string, len(ids))
	for i, id := range ids {
		s, err := pathIdent(id)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func topicPath(stream, topic wire.Identifier) (string, error) {
	p, err := pathOf(stream, topic)
	if err != nil {
		return "", err
	}
	return "/streams/" + p[0] + "/topics/" + p[1], nil
}

// consumerQuery is a plain consumer's id as the REST API takes it; group consumers have no REST
// form (spec §4: no consumer-group membership over HTTP).
func consumerQuery(c wire.Consumer) (string, error) {
	if c.Kind != wire.ConsumerKindSingle {
		return "", refuse(wire.ErrFeatureUnavailable, "consumer groups are not available over HTTP")
	}
	if c.ID.Kind == wire.IdentNumeric {
		return strconv.FormatUint(uint64(c.ID.Numeric), 10), nil
	}
	if _, err := strconv.ParseUint(c.ID.Name, 10, 32); err == nil {
		return "", refuse(wire.ErrFeatureUnavailable, "the consumer name %q reads as a numeric id over HTTP", c.ID.Name)
	}
	return c.ID.Name, nil
}

// decodeInto is a convert step: JSON into v, then to the payload.
func decodeInto[T any](encode func(T) ([]byte, error)) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("decode %T: %w", v, err)
		}
		return encode(v)
	}
}

func streamDetailsPayload(s httpStream) ([]byte, error) {
	d := s.details()
	return d.Append(nil), nil
}

func topicDetailsPayload(t httpTopic) ([]byte, error) {
	d := t.details()
	return d.Append(nil), nil
}

func groupDetailsPayload(g httpGroup) ([]byte, error) {
	d := g.details()
	return d.Append(nil), nil
}

func userDetailsPayload(u httpUser) ([]byte, error) {
	d, err := u.details()
	if err != nil {
		return nil, err
	}
	return d.Append(nil), nil
}

// topicOptionsJSON splits wire topic options into the create/update JSON fields: compression,
// expiry and size have their own keys, the rest travel as strings.
func topicOptionsJSON(opts wire.Options, create bool) map[string]any {
	m := map[string]any{}
	extra := map[string]string{}
	if create {
		m["compression_algorithm"], m["message_expiry"], m["max_topic_size"] = "none", uint64(0), uint64(0)
	}
	for _, o := range opts {
		switch o.Key {
		case wire.OptCompressionAlgorithm:
			switch {
			case o.Kind == wire.KindUint8 && len(o.Value) == 1 && o.Value[0] == wire.CompressionGzip:
				m["compression_algorithm"] = "gzip"
			case o.Kind == wire.KindUint8 && len(o.Value) == 1:
				m["compression_algorithm"] = "none"
			default:
				m["compression_algorithm"] = string(o.Value)
			}
		case wire.OptMessageExpiry, wire.OptMaxTopicSize:
			if o.Kind == wire.KindUint64 && len(o.Value) == 8 {
				m[o.Key] = binary.LittleEndian.Uint64(o.Value)
			} else {
				extra[o.Key] = optionString(o) // "7 days", "10 GiB": the server parses them
			}
		default:
			extra[o.Key] = optionString(o)
		}
	}
	if len(extra) > 0 {
		m["options"] = extra
	}
	return m
}

func stringOptionsJSON(opts wire.Options) map[string]string {
	if len(opts) == 0 {
		return nil
	}
	out := make(map[string]string, len(opts))
	for _, o := range opts {
		out[o.Key] = optionString(o)
	}
	return out
}

var snapshotCompressionNames = map[uint8]string{1: "Stored", 2: "Deflated", 3: "Bzip2", 4: "Zstd", 5: "Lzma", 6: "Xz"}

var snapshotTypeNames = map[uint8]string{1: "FilesystemOverview", 2: "ProcessList", 3: "ResourceUsage", 4: "Test",
	5: "ServerLogs", 6: "ServerConfig", 100: "All"}

var pollKindNames = map[wire.PollingKind]string{wire.PollOffset: "offset", wire.PollTimestamp: "timestamp",
	wire.PollFirst: "first", wire.PollLast: "last", wire.PollNext: "next"}

// httpRouteOf maps a command (code, binary body) to its REST route. Register and Logout are the
// link's own (they change its bearer). A *routeRefusal is answered locally.
func httpRouteOf(code wire.CommandCode, body []byte) (httpRoute, error) {
	switch code {
	case wire.CodePing:
		return httpRoute{method: "GET", path: "/ping"}, nil
	case wire.CodeSendMessages:
		return sendRoute(body)
	case wire.CodePollMessages:
		return pollRoute(body)
	case wire.CodeGetMe, wire.CodeFlushUnsavedBuffer, wire.CodeJoinConsumerGroup, wire.CodeLeaveConsumerGroup,
		wire.CodeSyncConsumerGroup:
		return httpRoute{}, refuse(wire.ErrFeatureUnavailable, "%s has no REST route (spec http-api §4)", code)
	}
	req, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		return httpRoute{}, refuse(wire.ErrInvalidCommand, "decode %s body: %v", code, err)
	}
	switch r := req.(type) {
	case wire.EmptyRequest:
		return emptyRoute(r.Command)
	case wire.IdentRequest:
		id, err := pathIdent(r.ID)
		if err != nil {
			return httpRoute{}, err
		}
		switch r.Command {
		case wire.CodeGetStream:
			return httpRoute{method: "GET", path: "/streams/" + id, lookup: true, convert: decodeInto(streamDetailsPayload)}, nil
		case wire.CodeDeleteStream:
			return httpRoute{method: "DELETE", path: "/streams/" + id}, nil
		case wire.CodePurgeStream:
			return httpRoute{method: "DELETE", path: "/streams/" + id + "/purge"}, nil
		case wire.CodeGetTopics:
			return httpRoute{method: "GET", path: "/streams/" + id + "/topics", convert: decodeInto(func(ts []httpTopic) ([]byte, error) {
				out := make([]wire.TopicHeader, len(ts))
				for i, t := range ts {
					out[i] = t.header()
				}
				return wire.AppendTopics(nil, out), nil
			})}, nil
		case wire.CodeGetUser:
			return httpRoute{method: "GET", path: "/users/" + id, lookup: true, convert: decodeInto(userDetailsPayload)}, nil
		case wire.CodeDeleteUser:
			return httpRoute{method: "DELETE", path: "/users/" + id}, nil
		}
	case wire.TopicRequest:
		p, err := topicPath(r.Stream, r.Topic)
		if err != nil {
			return httpRoute{}, err
		}
		switch r.Command {
		case wire.CodeGetTopic:
			return httpRoute{method: "GET", path: p, lookup: true, convert: decodeInto(topicDetailsPayload)}, nil
		case wire.CodeDeleteTopic:
			return httpRoute{method: "DELETE", path: p}, nil
		case wire.CodePurgeTopic:
			return httpRoute{method: "DELETE", path: p + "/purge"}, nil
		case wire.CodeGetConsumerGroups:
			return httpRoute{method: "GET", path: p + "/consumer-groups", convert: decodeInto(func(gs []httpGroup) ([]byte, error) {
				var b []byte
				for _, g := range gs {
					w := g.wire()
					b = w.Append(b)
				}
				return b, nil
			})}, nil
		}
	case wire.GroupRequest:
		p, err := topicPath(r.Stream, r.Topic)
		if err != nil {
			return httpRoute{}, err
		}
		g, err := pathIdent(r.Group)
		if err != nil {
			return httpRoute{}, err
		}
		switch r.Command {
		case wire.CodeGetConsumerGroup:
			return httpRoute{method: "GET", path: p + "/consumer-groups/" + g, lookup: true, convert: decodeInto(groupDetailsPayload)}, nil
		case wire.CodeDeleteConsumerGroup:
			return httpRoute{method: "DELETE", path: p + "/consumer-groups/" + g}, nil
		}
	case wire.CreateStreamRequest:
		return httpRoute{method: "POST", path: "/streams", body: map[string]any{"name": r.Name, "options": stringOptionsJSON(r.Options)},
			convert: decodeInto(streamDetailsPayload)}, nil
	case wire.UpdateStreamRequest:
		id, err := pathIdent(r.Stream)
		if err != nil {
			return httpRoute{}, err
		}
		return httpRoute{method: "PUT", path: "/streams/" + id, body: map[string]any{"name": r.Name, "options": stringOptionsJSON(r.Options)}}, nil
	case wire.CreateTopicRequest:
		id, err := pathIdent(r.Stream)
		if err != nil {
			return httpRoute{}, err
		}
		b := topicOptionsJSON(r.Options, true)
		b["name"], b["partitions_count"] = r.Name, r.PartitionsCount
		return httpRoute{method: "POST", path: "/streams/" + id + "/topics", body: b, convert: decodeInto(topicDetailsPayload)}, nil
	case wire.UpdateTopicRequest:
		p, err := topicPath(r.Stream, r.Topic)
		if err != nil {
			return httpRoute{}, err
		}
		b := topicOptionsJSON(r.Options, false)
		b["name"] = r.Name
		return httpRoute{method: "PUT", path: p, body: b}, nil
	case wire.PartitionsRequest:
		p, err := topicPath(r.Stream, r.Topic)
		if err != nil {
			return httpRoute{}, err
		}
		if r.Command == wire.CodeCreatePartitions {
			return httpRoute{method: "POST", path: p + "/partitions", body: map[string]any{"partitions_count": r.Count}}, nil
		}
		return httpRoute{method: "DELETE", path: p + "/partitions",
			query: url.Values{"partitions_count": {strconv.FormatUint(uint64(r.Count), 10)}}}, nil
	case wire.DeleteSegmentsRequest:
		p, err := topicPath(r.Stream, r.Topic)
		if err != nil {
			return httpRoute{}, err
		}
		return httpRoute{method: "DELETE", path: p + "/partitions/" + strconv.FormatUint(uint64(r.PartitionID), 10),
			query: url.Values{"segments_count": {strconv.FormatUint(uint64(r.SegmentsCount), 10)}}}, nil
	case wire.CreateConsumerGroupRequest:
		p, err := topicPath(r.Stream, r.Topic)
		if err != nil {
			return httpRoute{}, err
		}
		return httpRoute{method: "POST", path: p + "/consumer-groups", body: map[string]any{"name": r.Name},
			convert: decodeInto(groupDetailsPayload)}, nil
	case wire.ConsumerOffsetRequest:
		return offsetRoute(r)
	case wire.CreateUserRequest:
		return httpRoute{method: "POST", path: "/users", body: map[string]any{"username": r.Username, "password": r.Password,
			"status": userStatusName(r.Status), "permissions": permissionsToHTTP(r.Permissions)}, convert: decodeInto(userDetailsPayload)}, nil
	case wire.UpdateUserRequest:
		id, err := pathIdent(r.User)
		if err != nil {
			return httpRoute{}, err
		}
		b := map[string]any{}
		if r.Username != nil {
			b["username"] = *r.Username
		}
		if r.Status != nil {
			b["status"] = userStatusName(*r.Status)
		}
		return httpRoute{method: "PUT", path: "/users/" + id, body: b}, nil
	case wire.UpdatePermissionsRequest:
		id, err := pathIdent(r.User)
		if err != nil {
			return httpRoute{}, err
		}
		return httpRoute{method: "PUT", path: "/users/" + id + "/permissions", body: map[string]any{"permissions": permissionsToHTTP(r.Permissions)}}, nil
	case wire.ChangePasswordRequest:
		id, err := pathIdent(r.User)
		if err != nil {
			return httpRoute{}, err
		}
		return httpRoute{method: "PUT", path: "/users/" + id + "/password",
			body: map[string]any{"current_password": r.CurrentPassword, "new_password": r.NewPassword}}, nil
	case wire.CreatePersonalAccessTokenRequest:
		return httpRoute{method: "POST", path: "/personal-access-tokens", body: map[string]any{"name": r.Name, "expiry": r.ExpiryMicros},
			convert: decodeInto(func(t struct {
				Token string `json:"token"`
			}) ([]byte, error) {
				raw := wire.RawToken{Token: t.Token}
				return raw.Append(nil), nil
			})}, nil
	case wire.DeletePersonalAccessTokenRequest:
		return httpRoute{method: "DELETE", path: "/personal-access-tokens/" + url.PathEscape(r.Name)}, nil
	case wire.GetClientRequest:
		return httpRoute{method: "GET", path: "/clients/" + strconv.FormatUint(uint64(r.ClientID), 10), lookup: true,
			convert: decodeInto(func(c httpClientInfo) ([]byte, error) {
				d := c.details()
				return d.Append(nil), nil
			})}, nil
	case wire.DescribeOptionsRequest:
		scope := map[wire.DescribeScope]string{wire.ScopeTopic: "topic", wire.ScopeStream: "stream", wire.ScopeUser: "user"}[r.Scope]
		return httpRoute{method: "GET", path: "/options/" + scope, convert: decodeInto(func(specs []httpOptionSpec) ([]byte, error) {
			out := make([]wire.OptionSpec, 0, len(specs))
			for _, s := range specs {
				w, err := s.wire()
				if err != nil {
					return nil, err
				}
				out = append(out, w)
			}
			return wire.AppendOptionSpecs(nil, out), nil
		})}, nil
	case wire.GetSnapshotFileRequest:
		b := map[string]any{}
		if name, ok := snapshotCompressionNames[r.Compression]; ok {
			b["compression"] = name
		}
		types := make([]string, 0, len(r.Types))
		for _, t := range r.Types {
			name, ok := snapshotTypeNames[t]
			if !ok {
				return httpRoute{}, refuse(wire.ErrInvalidCommand, "snapshot type %d has no REST name", t)
			}
			types = append(types, name)
		}
		b["snapshot_types"] = types
		return httpRoute{method: "POST", path: "/snapshot", body: b, convert: func(zip []byte) ([]byte, error) { return zip, nil }}, nil
	}
	return httpRoute{}, refuse(wire.ErrFeatureUnavailable, "%s has no REST route", code)
}

func emptyRoute(code wire.CommandCode) (httpRoute, error) {
	switch code {
	case wire.CodeGetStats:
		return httpRoute{method: "GET", path: "/stats", convert: decodeInto(func(s httpStats) ([]byte, error) {
			w := s.wire()
			return w.Append(nil), nil
		})}, nil
	case wire.CodeGetClusterMetadata:
		return httpRoute{method: "GET", path: "/cluster/metadata", convert: decodeInto(func(c httpCluster) ([]byte, error) {
			w := c.wire()
			return w.Append(nil), nil
		})}, nil
	case wire.CodeGetClients:
		return httpRoute{method: "GET", path: "/clients", convert: decodeInto(func(cs []httpClientInfo) ([]byte, error) {
			var b []byte
			for _, c := range cs {
				w := c.wire()
				b = w.Append(b)
			}
			return b, nil
		})}, nil
	case wire.CodeGetUsers:
		return httpRoute{method: "GET", path: "/users", convert: decodeInto(func(us []httpUser) ([]byte, error) {
			var b []byte
			for _, u := range us {
				w := u.wire()
				b = w.Append(b)
			}
			return b, nil
		})}, nil
	case wire.CodeGetPersonalAccessTokens:
		return httpRoute{method: "GET", path: "/personal-access-tokens", convert: decodeInto(func(ps []struct {
			Name     string  `json:"name"`
			ExpiryAt *uint64 `json:"expiry_at"`
		}) ([]byte, error) {
			var b []byte
			for _, p := range ps {
				w := wire.PersonalAccessToken{Name: p.Name}
				if p.ExpiryAt != nil {
					w.ExpiryAt = *p.ExpiryAt
				}
				b = w.Append(b)
			}
			return b, nil
		})}, nil
	case wire.CodeGetStreams:
		return httpRoute{method: "GET", path: "/streams", convert: decodeInto(func(ss []httpStream) ([]byte, error) {
			var b []byte
			for _, s := range ss {
				w := s.wire()
				b = w.Append(b)
			}
			return b, nil
		})}, nil
	}
	return httpRoute{}, refuse(wire.ErrFeatureUnavailable, "%s has no REST route", code)
}

func offsetRoute(r wire.ConsumerOffsetRequest) (httpRoute, error) {
	p, err := topicPath(r.Stream, r.Topic)
	if err != nil {
		return httpRoute{}, err
	}
	consumer, err := consumerQuery(r.Consumer)
	if err != nil {
		return httpRoute{}, err
	}
	switch r.Command {
	case wire.CodeGetConsumerOffset:
		q := url.Values{"consumer_id": {consumer}}
		if r.Partition.Present {
			q.Set("partition_id", strconv.FormatUint(uint64(r.Partition.ID), 10))
		}
		return httpRoute{method: "GET", path: p + "/consumer-offsets", query: q, lookup: true,
			convert: decodeInto(func(o struct {
				PartitionID   uint32 `json:"partition_id"`
				CurrentOffset uint64 `json:"current_offset"`
				StoredOffset  uint64 `json:"stored_offset"`
			}) ([]byte, error) {
				w := wire.ConsumerOffset{PartitionID: o.PartitionID, CurrentOffset: o.CurrentOffset, StoredOffset: o.StoredOffset}
				return w.Append(nil), nil
			})}, nil
	case wire.CodeStoreConsumerOffset:
		b := map[string]any{"consumer_id": consumer, "offset": r.Offset}
		if r.Consumer.ID.Kind == wire.IdentNumeric {
			b["consumer_id"] = r.Consumer.ID.Numeric
		}
		if r.Partition.Present {
			b["partition_id"] = r.Partition.ID
		}
		return httpRoute{method: "PUT", path: p + "/consumer-offsets", body: b}, nil
	}
	var q url.Values
	if r.Partition.Present {
		q = url.Values{"partition_id": {strconv.FormatUint(uint64(r.Partition.ID), 10)}}
	}
	return httpRoute{method: "DELETE", path: p + "/consumer-offsets/" + url.PathEscape(consumer), query: q}, nil
}

var partitioningNames = map[wire.PartitioningKind]string{wire.PartitioningBalanced: "balanced",
	wire.PartitioningPartitionID: "partition_id", wire.PartitioningMessagesKey: "messages_key"}

// sendRoute carries a SendMessages body as the send JSON: every message with its id (a decimal
// u128), payload and raw user headers (base64 TLV), so the server stores the same bytes.
func sendRoute(body []byte) (httpRoute, error) {
	req, err := wire.DecodeSendMessages(body)
	if err != nil {
		return httpRoute{}, refuse(codeOr(err, wire.ErrInvalidCommand), "decode SendMessages body: %v", err)
	}
	p, err := topicPath(req.Stream, req.Topic)
	if err != nil {
		return httpRoute{}, err
	}
	var value []byte
	switch req.Partitioning.Kind {
	case wire.PartitioningPartitionID:
		value = binary.LittleEndian.AppendUint32(nil, req.Partitioning.PartitionID)
	case wire.PartitioningMessagesKey:
		value = req.Partitioning.Key
	}
	type message struct {
		ID          string `json:"id"`
		Payload     string `json:"payload"`
		UserHeaders string `json:"user_headers,omitempty"`
	}
	msgs := make([]message, 0, req.MessagesCount)
	it := wire.NewBatchIter(req.Batch)
	for it.Next() {
		m := it.Message()
		out := message{ID: httpMessageIDString(m.ID), Payload: base64.StdEncoding.EncodeToString(m.Payload)}
		if len(m.UserHeaders) > 0 {
			out.UserHeaders = base64.StdEncoding.EncodeToString(m.UserHeaders)
		}
		msgs = append(msgs, out)
	}
	if err := it.Err(); err != nil {
		return httpRoute{}, refuse(codeOr(err, wire.ErrInvalidCommand), "SendMessages batch: %v", err)
	}
	return httpRoute{method: "POST", path: p + "/messages", body: map[string]any{
		"partitioning": map[string]string{"kind": partitioningNames[req.Partitioning.Kind], "value": base64.StdEncoding.EncodeToString(value)},
		"messages":     msgs,
	}, convert: decodeInto(func(c struct {
		Confirmations []struct {
			StreamID    uint32 `json:"stream_id"`
			TopicID     uint32 `json:"topic_id"`
			PartitionID uint32 `json:"partition_id"`
			BaseOffset  uint64 `json:"base_offset"`
		} `json:"confirmations"`
	}) ([]byte, error) {
		cs := make([]wire.SendConfirmation, len(c.Confirmations))
		for i, x := range c.Confirmations {
			cs[i] = wire.SendConfirmation{StreamID: x.StreamID, TopicID: x.TopicID, PartitionID: x.PartitionID, BaseOffset: x.BaseOffset}
		}
		return appendConfirmations(cs), nil
	})}, nil
}

// appendConfirmations is the SendMessages reply: count, then 20 bytes per confirmation.
func appendConfirmations(cs []wire.SendConfirmation) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(cs)))
	for _, c := range cs {
		b = binary.LittleEndian.AppendUint32(b, c.StreamID)
		b = binary.LittleEndian.AppendUint32(b, c.TopicID)
		b = binary.LittleEndian.AppendUint32(b, c.PartitionID)
		b = binary.LittleEndian.AppendUint64(b, c.BaseOffset)
	}
	return b
}

func pollRoute(body []byte) (httpRoute, error) {
	req, err := wire.DecodePollMessages(body)
	if err != nil {
		return httpRoute{}, refuse(wire.ErrInvalidCommand, "decode PollMessages body: %v", err)
	}
	p, err := topicPath(req.Stream, req.Topic)
	if err != nil {
		return httpRoute{}, err
	}
	consumer, err := consumerQuery(req.Consumer)
	if err != nil {
		return httpRoute{}, err
	}
	kind, ok := pollKindNames[req.Strategy.Kind]
	if !ok {
		return httpRoute{}, refuse(wire.ErrInvalidCommand, "polling kind %d has no REST name", req.Strategy.Kind)
	}
	q := url.Values{"consumer_id": {consumer}, "kind": {kind}, "value": {strconv.FormatUint(req.Strategy.Value, 10)},
		"count": {strconv.FormatUint(uint64(req.Count), 10)}, "auto_commit": {strconv.FormatBool(req.AutoCommit)}}
	if req.Partition.Present {
		q.Set("partition_id", strconv.FormatUint(uint64(req.Partition.ID), 10))
	}
	return httpRoute{method: "GET", path: p + "/messages", query: q, convert: decodeInto(func(r httpPolled) ([]byte, error) {
		return r.pollReply()
	})}, nil
}

// codeOr is the wire code err carries, or def.
func codeOr(err error, def wire.ErrorCode) wire.ErrorCode {
	var code wire.ErrorCode
	if errors.As(err, &code) && code != wire.OK {
		return code
	}
	return def
}
