package client

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/lodestream/lodestream/wire"
)

// The REST API's JSON shapes (spec http-api §9), read back into the binary protocol's values so the
// HTTP link can answer with the reply body the binary protocol would carry.

// httpByteSize reads a byte-size string ("69.092 KB", "147412 KiB", "0 B") or a plain number.
type httpByteSize uint64

var httpByteUnits = map[string]uint64{"B": 1, "KB": 1e3, "KiB": 1 << 10, "MB": 1e6, "MiB": 1 << 20, "GB": 1e9,
	"GiB": 1 << 30, "TB": 1e12, "TiB": 1 << 40, "PB": 1e15, "PiB": 1 << 50, "EB": 1e18, "EiB": 1 << 60}

func (b *httpByteSize) UnmarshalJSON(data []byte) error {
	var n uint64
	if json.Unmarshal(data, &n) == nil {
		*b = httpByteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("byte size: %s is neither a number nor a string", data)
	}
	v, err := parseHTTPByteSize(s)
	if err != nil {
		return err
	}
	*b = httpByteSize(v)
	return nil
}

// parseHTTPByteSize inverts the server's exact-unit rendering: a decimal with at most three
// fractional digits and a unit in which the value is exact.
func parseHTTPByteSize(s string) (uint64, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), " ")
	size, known := httpByteUnits[unit]
	if !ok || !known {
		return 0, fmt.Errorf("byte size %q: want \"<number> <unit>\"", s)
	}
	whole, frac, _ := strings.Cut(num, ".")
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || len(frac) > 3 {
		return 0, fmt.Errorf("byte size %q: bad number", s)
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac+strings.Repeat("0", 3-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("byte size %q: bad fraction", s)
		}
	}
	if w > math.MaxUint64/size {
		return 0, fmt.Errorf("byte size %q overflows u64", s)
	}
	return w*size + f*size/1000, nil
}

// httpMessageID is a u128 message id: a JSON number (u128, exact) or a decimal string.
type httpMessageID [16]byte

func (m *httpMessageID) UnmarshalJSON(data []byte) error {
	s := strings.Trim(string(data), `"`)
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 || v.BitLen() > 128 {
		return fmt.Errorf("message id %s is not a u128", data)
	}
	be := v.FillBytes(make([]byte, 16))
	for i := range 16 {
		m[i] = be[15-i] // the wire carries the u128 little-endian
	}
	return nil
}

// httpMessageIDString renders a wire message id as the decimal u128 the REST API reads.
func httpMessageIDString(id [16]byte) string {
	be := make([]byte, 16)
	for i := range 16 {
		be[i] = id[15-i]
	}
	return new(big.Int).SetBytes(be).String()
}

type httpOption struct {
	Value    string `json:"value"`
	Explicit bool   `json:"explicit"`
}

// httpOptions turns the JSON options map back into wire options (explicit and server-derived),
// sorted by key; topic catalog keys get their catalog kind, anything else is a string.
func httpOptions(m map[string]httpOption) (explicit, derived wire.Options) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := optionFromString(k, m[k].Value)
		if m[k].Explicit {
			explicit = append(explicit, o)
		} else {
			derived = append(derived, o)
		}
	}
	return explicit, derived
}

func optionFromString(key, value string) wire.Option {
	for _, def := range wire.TopicOptionCatalog {
		if def.Key != key {
			continue
		}
		switch def.Kind {
		case wire.KindUint64:
			if v, err := strconv.ParseUint(value, 10, 64); err == nil {
				return wire.OptionUint64(key, v)
			}
		case wire.KindUint32:
			if v, err := strconv.ParseUint(value, 10, 32); err == nil {
				return wire.OptionUint32(key, uint32(v))
			}
		case wire.KindBool:
			if v, err := strconv.ParseBool(value); err == nil {
				return wire.OptionBool(key, v)
			}
		}
	}
	return wire.OptionString(key, value)
}

// optionString is the string form of a wire option value (the REST API's options are strings).
func optionString(o wire.Option) string {
	v := o.Value
	switch {
	case o.Kind == wire.KindBool && len(v) == 1:
		return strconv.FormatBool(v[0] != 0)
	case o.Kind == wire.KindUint8 && len(v) == 1:
		return strconv.FormatUint(uint64(v[0]), 10)
	case o.Kind == wire.KindUint16 && len(v) == 2:
		return strconv.FormatUint(uint64(binary.LittleEndian.Uint16(v)), 10)
	case o.Kind == wire.KindUint32 && len(v) == 4:
		return strconv.FormatUint(uint64(binary.LittleEndian.Uint32(v)), 10)
	case o.Kind == wire.KindUint64 && len(v) == 8:
		return strconv.FormatUint(binary.LittleEndian.Uint64(v), 10)
	case o.Kind == wire.KindInt64 && len(v) == 8:
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(v)), 10)
	case o.Kind == wire.KindFloat64 && len(v) == 8:
		return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(v)), 'g', -1, 64)
	}
	return string(v)
}

type httpStream struct {
	ID            uint32                `json:"id"`
	CreatedAt     uint64                `json:"created_at"`
	Name          string                `json:"name"`
	Size          httpByteSize          `json:"size"`
	MessagesCount uint64                `json:"messages_count"`
	TopicsCount   uint32                `json:"topics_count"`
	Options       map[string]httpOption `json:"options"`
	Topics        []httpTopic           `json:"topics"`
}

func (s httpStream) wire() wire.Stream {
	explicit, _ := httpOptions(s.Options)
	return wire.Stream{ID: s.ID, CreatedAt: s.CreatedAt, TopicsCount: s.TopicsCount, SizeBytes: uint64(s.Size),
		MessagesCount: s.MessagesCount, Name: s.Name, Options: explicit}
}

func (s httpStream) details() wire.StreamDetails {
	out := wire.StreamDetails{Stream: s.wire(), Topics: make([]wire.TopicHeader, 0, len(s.Topics))}
	for _, t := range s.Topics {
		out.Topics = append(out.Topics, t.header())
	}
	return out
}

type httpPartition struct {
	ID            uint32       `json:"id"`
	CreatedAt     uint64       `json:"created_at"`
	SegmentsCount uint32       `json:"segments_count"`
	CurrentOffset uint64       `json:"current_offset"`
	Size          httpByteSize `json:"size"`
	MessagesCount uint64       `json:"messages_count"`
}

type httpTopic struct {
	ID                   uint32                `json:"id"`
	CreatedAt            uint64                `json:"created_at"`
	Name                 string                `json:"name"`
	Size                 httpByteSize          `json:"size"`
	MessageExpiry        uint64                `json:"message_expiry"`
	CompressionAlgorithm string                `json:"compression_algorithm"`
	MaxTopicSize         uint64                `json:"max_topic_size"`
	MessagesCount        uint64                `json:"messages_count"`
	PartitionsCount      uint32                `json:"partitions_count"`
	Options              map[string]httpOption `json:"options"`
	Partitions           []httpPartition       `json:"partitions"`
}

func (t httpTopic) header() wire.TopicHeader {
	explicit, derived := httpOptions(t.Options)
	compression := wire.CompressionNone
	if strings.EqualFold(t.CompressionAlgorithm, "gzip") {
		compression = wire.CompressionGzip
	}
	return wire.TopicHeader{ID: t.ID, CreatedAt: t.CreatedAt, PartitionsCount: t.PartitionsCount,
		MessageExpiry: t.MessageExpiry, Compression: compression, MaxTopicSize: t.MaxTopicSize,
		SizeBytes: uint64(t.Size), MessagesCount: t.MessagesCount, Name: t.Name, Options: explicit, DerivedOptions: derived}
}

func (t httpTopic) details() wire.TopicDetails {
	out := wire.TopicDetails{TopicHeader: t.header(), Partitions: make([]wire.Partition, 0, len(t.Partitions))}
	for _, p := range t.Partitions {
		out.Partitions = append(out.Partitions, wire.Partition{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: p.SegmentsCount,
			CurrentOffset: p.CurrentOffset, SizeBytes: uint64(p.Size), MessagesCount: p.MessagesCount})
	}
	return out
}

type httpGroup struct {
	ID              uint32 `json:"id"`
	Name            string `json:"name"`
	PartitionsCount uint32 `json:"partitions_count"`
	MembersCount    uint32 `json:"members_count"`
	Members         []struct {
		ID         uint32   `json:"id"`
		Partitions []uint32 `json:"partitions"`
	} `json:"members"`
}

func (g httpGroup) wire() wire.ConsumerGroup {
	return wire.ConsumerGroup{ID: g.ID, PartitionsCount: g.PartitionsCount, MembersCount: g.MembersCount, Name: g.Name}
}

func (g httpGroup) details() wire.GroupDetails {
	out := wire.GroupDetails{ConsumerGroup: g.wire(), Members: make([]wire.GroupMember, 0, len(g.Members))}
	for _, m := range g.Members {
		out.Members = append(out.Members, wire.GroupMember{ID: m.ID, Partitions: m.Partitions})
	}
	return out
}

// httpPermissions is the permissions JSON (spec §6), in and out.
type httpPermissions struct {
	Global  httpGlobalPerms            `json:"global"`
	Streams map[string]httpStreamPerms `json:"streams"`
}

type httpGlobalPerms struct {
	ManageServers bool `json:"manage_servers"`
	ReadServers   bool `json:"read_servers"`
	ManageUsers   bool `json:"manage_users"`
	ReadUsers     bool `json:"read_users"`
	ManageStreams bool `json:"manage_streams"`
	ReadStreams   bool `json:"read_streams"`
	ManageTopics  bool `json:"manage_topics"`
	ReadTopics    bool `json:"read_topics"`
	PollMessages  bool `json:"poll_messages"`
	SendMessages  bool `json:"send_messages"`
}

type httpStreamPerms struct {
	ManageStream bool                      `json:"manage_stream"`
	ReadStream   bool                      `json:"read_stream"`
	ManageTopics bool                      `json:"manage_topics"`
	ReadTopics   bool                      `json:"read_topics"`
	PollMessages bool                      `json:"poll_messages"`
	SendMessages bool                      `json:"send_messages"`
	Topics       map[string]httpTopicPerms `json:"topics"`
}

type httpTopicPerms struct {
	ManageTopic  bool `json:"manage_topic"`
	ReadTopic    bool `json:"read_topic"`
	PollMessages bool `json:"poll_messages"`
	SendMessages bool `json:"send_messages"`
}

func permissionsToHTTP(p *wire.Permissions) *httpPermissions {
	if p == nil {
		return nil
	}
	g := p.Global
	out := &httpPermissions{Global: httpGlobalPerms{ManageServers: g.ManageServers, ReadServers: g.ReadServers,
		ManageUsers: g.ManageUsers, ReadUsers: g.ReadUsers, ManageStreams: g.ManageStreams, ReadStreams: g.ReadStreams,
		ManageTopics: g.ManageTopics, ReadTopics: g.ReadTopics, PollMessages: g.PollMessages, SendMessages: g.SendMessages}}
	if len(p.Streams) > 0 {
		out.Streams = make(map[string]httpStreamPerms, len(p.Streams))
	}
	for _, s := range p.Streams {
		sp := httpStreamPerms{ManageStream: s.ManageStream, ReadStream: s.ReadStream, ManageTopics: s.ManageTopics,
			ReadTopics: s.ReadTopics, PollMessages: s.PollMessages, SendMessages: s.SendMessages}
		if len(s.Topics) > 0 {
			sp.Topics = make(map[string]httpTopicPerms, len(s.Topics))
		}
		for _, t := range s.Topics {
			sp.Topics[strconv.FormatUint(uint64(t.TopicID), 10)] = httpTopicPerms{ManageTopic: t.ManageTopic,
				ReadTopic: t.ReadTopic, PollMessages: t.PollMessages, SendMessages: t.SendMessages}
		}
		out.Streams[strconv.FormatUint(uint64(s.StreamID), 10)] = sp
	}
	return out
}

// wire converts back, streams and topics in id order.
func (p *httpPermissions) wire() (*wire.Permissions, error) {
	if p == nil {
		return nil, nil
	}
	g := p.Global
	out := &wire.Permissions{Global: wire.GlobalPermissions{ManageServers: g.ManageServers, ReadServers: g.ReadServers,
		ManageUsers: g.ManageUsers, ReadUsers: g.ReadUsers, ManageStreams: g.ManageStreams, ReadStreams: g.ReadStreams,
		ManageTopics: g.ManageTopics, ReadTopics: g.ReadTopics, PollMessages: g.PollMessages, SendMessages: g.SendMessages}}
	for key, s := range p.Streams {
		id, err := strconv.ParseUint(key, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("permissions: stream key %q is not a u32", key)
		}
		sp := wire.StreamPermissions{StreamID: uint32(id), ManageStream: s.ManageStream, ReadStream: s.ReadStream,
			ManageTopics: s.ManageTopics, ReadTopics: s.ReadTopics, PollMessages: s.PollMessages, SendMessages: s.SendMessages}
		for tkey, t := range s.Topics {
			tid, err := strconv.ParseUint(tkey, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("permissions: topic key %q is not a u32", tkey)
			}
			sp.Topics = append(sp.Topics, wire.TopicPermissions{TopicID: uint32(tid), ManageTopic: t.ManageTopic,
				ReadTopic: t.ReadTopic, PollMessages: t.PollMessages, SendMessages: t.SendMessages})
		}
		sort.Slice(sp.Topics, func(i, j int) bool { return sp.Topics[i].TopicID < sp.Topics[j].TopicID })
		out.Streams = append(out.Streams, sp)
	}
	sort.Slice(out.Streams, func(i, j int) bool { return out.Streams[i].StreamID < out.Streams[j].StreamID })
	return out, nil
}

type httpUser struct {
	ID          uint32                `json:"id"`
	CreatedAt   uint64                `json:"created_at"`
	Status      string                `json:"status"`
	Username    string                `json:"username"`
	Options     map[string]httpOption `json:"options"`
	Permissions *httpPermissions      `json:"permissions"`
}

func userStatusOf(s string) wire.UserStatus {
	if s == "inactive" {
		return wire.UserInactive
	}
	return wire.UserActive
}

func userStatusName(s wire.UserStatus) string {
	if s == wire.UserInactive {
		return "inactive"
	}
	return "active"
}

func (u httpUser) wire() wire.User {
	explicit, _ := httpOptions(u.Options)
	return wire.User{ID: u.ID, CreatedAt: u.CreatedAt, Status: userStatusOf(u.Status), Username: u.Username, Options: explicit}
}

func (u httpUser) details() (wire.UserDetails, error) {
	p, err := u.Permissions.wire()
	return wire.UserDetails{User: u.wire(), Permissions: p}, err
}

type httpClientInfo struct {
	ClientID            uint32  `json:"client_id"`
	UserID              *uint32 `json:"user_id"`
	Address             string  `json:"address"`
	Transport           string  `json:"transport"`
	ConsumerGroupsCount uint32  `json:"consumer_groups_count"`
	ConsumerGroups      []struct {
		StreamID uint32 `json:"stream_id"`
		TopicID  uint32 `json:"topic_id"`
		GroupID  uint32 `json:"group_id"`
	} `json:"consumer_groups"`
}

var httpTransportBytes = map[string]uint8{"TCP": wire.TransportTCP, "QUIC": wire.TransportQUIC, "HTTP": 3,
	"WebSocket": wire.TransportWebSocket}

func (c httpClientInfo) wire() wire.Client {
	out := wire.Client{ClientID: c.ClientID, UserID: wire.NoUser, Transport: httpTransportBytes[c.Transport],
		Address: c.Address, ConsumerGroupsCount: c.ConsumerGroupsCount}
	if c.UserID != nil {
		out.UserID = *c.UserID
	}
	return out
}

func (c httpClientInfo) details() wire.ClientDetails {
	out := wire.ClientDetails{Client: c.wire(), ConsumerGroups: make([]wire.ClientGroup, 0, len(c.ConsumerGroups))}
	for _, g := range c.ConsumerGroups {
		out.ConsumerGroups = append(out.ConsumerGroups, wire.ClientGroup{StreamID: g.StreamID, TopicID: g.TopicID, GroupID: g.GroupID})
	}
	return out
}

type httpStats struct {
	ProcessID           uint32       `json:"process_id"`
	CPUUsage            float32      `json:"cpu_usage"`
	TotalCPUUsage       float32      `json:"total_cpu_usage"`
	MemoryUsage         httpByteSize `json:"memory_usage"`
	TotalMemory         httpByteSize `json:"total_memory"`
	AvailableMemory     httpByteSize `json:"available_memory"`
	RunTime             uint64       `json:"run_time"`
	StartTime           uint64       `json:"start_time"`
	ReadBytes           httpByteSize `json:"read_bytes"`
	WrittenBytes        httpByteSize `json:"written_bytes"`
	MessagesSizeBytes   httpByteSize `json:"messages_size_bytes"`
	StreamsCount        uint32       `json:"streams_count"`
	TopicsCount         uint32       `json:"topics_count"`
	PartitionsCount     uint32       `json:"partitions_count"`
	SegmentsCount       uint32       `json:"segments_count"`
	MessagesCount       uint64       `json:"messages_count"`
	ClientsCount        uint32       `json:"clients_count"`
	ConsumerGroupsCount uint32       `json:"consumer_groups_count"`
	Hostname            string       `json:"hostname"`
	OSName              string       `json:"os_name"`
	OSVersion           string       `json:"os_version"`
	KernelVersion       string       `json:"kernel_version"`
	ServerVersion       string       `json:"iggy_server_version"`
	ServerSemver        *uint32      `json:"iggy_server_semver"`
	CacheMetrics        map[string]struct {
		Hits     uint64  `json:"hits"`
		Misses   uint64  `json:"misses"`
		HitRatio float32 `json:"hit_ratio"`
	} `json:"cache_metrics"`
	ThreadsCount   uint32       `json:"threads_count"`
	FreeDiskSpace  httpByteSize `json:"free_disk_space"`
	TotalDiskSpace httpByteSize `json:"total_disk_space"`
}

func (s httpStats) wire() wire.Stats {
	out := wire.Stats{ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage,
		MemoryUsage: uint64(s.MemoryUsage), TotalMemory: uint64(s.TotalMemory), AvailableMemory: uint64(s.AvailableMemory),
		RunTime: s.RunTime, StartTime: s.StartTime, ReadBytes: uint64(s.ReadBytes), WrittenBytes: uint64(s.WrittenBytes),
		MessagesSizeBytes: uint64(s.MessagesSizeBytes), StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount,
		PartitionsCount: s.PartitionsCount, SegmentsCount: s.SegmentsCount, MessagesCount: s.MessagesCount,
		ClientsCount: s.ClientsCount, ConsumerGroupsCount: s.ConsumerGroupsCount, Hostname: s.Hostname, OSName: s.OSName,
		OSVersion: s.OSVersion, KernelVersion: s.KernelVersion, ServerVersion: s.ServerVersion, ThreadsCount: s.ThreadsCount,
		FreeDiskSpace: uint64(s.FreeDiskSpace), TotalDiskSpace: uint64(s.TotalDiskSpace)}
	if s.ServerSemver != nil {
		out.ServerSemver = *s.ServerSemver
	}
	keys := make([]string, 0, len(s.CacheMetrics))
	for k := range s.CacheMetrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts := strings.Split(k, "-")
		if len(parts) != 3 {
			continue
		}
		var ids [3]uint32
		ok := true
		for i, p := range parts {
			v, err := strconv.ParseUint(p, 10, 32)
			ok = ok && err == nil
			ids[i] = uint32(v)
		}
		if !ok {
			continue
		}
		m := s.CacheMetrics[k]
		out.CacheMetrics = append(out.CacheMetrics, wire.CacheMetric{StreamID: ids[0], TopicID: ids[1], PartitionID: ids[2],
			Hits: m.Hits, Misses: m.Misses, HitRatio: m.HitRatio})
	}
	return out
}

type httpCluster struct {
	Name  string `json:"name"`
	Nodes []struct {
		Name      string `json:"name"`
		IP        string `json:"ip"`
		Endpoints struct {
			TCP       uint16 `json:"tcp"`
			QUIC      uint16 `json:"quic"`
			HTTP      uint16 `json:"http"`
			WebSocket uint16 `json:"websocket"`
		} `json:"endpoints"`
		Role   string `json:"role"`
		Status string `json:"status"`
	} `json:"nodes"`
}

var httpNodeStatuses = map[string]uint8{"healthy": wire.NodeHealthy, "starting": wire.NodeStarting,
	"stopping": wire.NodeStopping, "unreachable": wire.NodeUnreachable, "maintenance": wire.NodeMaintenance}

func (c httpCluster) wire() wire.ClusterMetadata {
	out := wire.ClusterMetadata{Name: c.Name, Nodes: make([]wire.ClusterNode, 0, len(c.Nodes))}
	for _, n := range c.Nodes {
		role := wire.RoleFollower
		if n.Role == "leader" {
			role = wire.RoleLeader
		}
		status, ok := httpNodeStatuses[n.Status]
		if !ok {
			status = wire.NodeUnreachable // "unknown": never a redirect target
		}
		out.Nodes = append(out.Nodes, wire.ClusterNode{Name: n.Name, IP: n.IP, TCP: n.Endpoints.TCP, QUIC: n.Endpoints.QUIC,
			HTTP: n.Endpoints.HTTP, WebSocket: n.Endpoints.WebSocket, Role: role, Status: status})
	}
	return out
}

type httpOptionSpec struct {
	Key         string `json:"key"`
	Kind        string `json:"kind"`
	Default     []int  `json:"default_value"`
	Description string `json:"description"`
}

func valueKindOf(name string) wire.ValueKind {
	for k := wire.KindRaw; k <= wire.KindFloat64; k++ {
		if k.String() == name {
			return k
		}
	}
	return wire.KindRaw
}

func (s httpOptionSpec) wire() (wire.OptionSpec, error) {
	def := make([]byte, len(s.Default))
	for i, v := range s.Default {
		if v < 0 || v > 255 {
			return wire.OptionSpec{}, fmt.Errorf("option %s: default byte %d out of range", s.Key, v)
		}
		def[i] = byte(v)
	}
	return wire.OptionSpec{Key: s.Key, Kind: valueKindOf(s.Kind), Default: def, Description: s.Description}, nil
}

type httpIdentity struct {
	UserID      uint32 `json:"user_id"`
	AccessToken *struct {
		Token  string `json:"token"`
		Expiry uint64 `json:"expiry"`
	} `json:"access_token"`
}

type httpPolled struct {
	PartitionID   uint32 `json:"partition_id"`
	CurrentOffset uint64 `json:"current_offset"`
	Messages      []struct {
		Header struct {
			Checksum        uint64        `json:"checksum"`
			ID              httpMessageID `json:"id"`
			Offset          uint64        `json:"offset"`
			Timestamp       uint64        `json:"timestamp"`
			OriginTimestamp uint64        `json:"origin_timestamp"`
		} `json:"header"`
		Payload     []byte          `json:"payload"`
		UserHeaders json.RawMessage `json:"user_headers"`
	} `json:"messages"`
}

type httpHeaderSide struct {
	Kind  string `json:"kind"`
	Value []byte `json:"value"`
}

// userHeaderBytes re-encodes polled user headers (an array of key/value objects, or a base64
// string of the raw bytes) as the binary TLV block.
func userHeaderBytes(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return base64.StdEncoding.DecodeString(s)
	}
	var pairs []struct {
		Key   httpHeaderSide `json:"key"`
		Value httpHeaderSide `json:"value"`
	}
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("user headers: %w", err)
	}
	var out []byte
	for _, p := range pairs {
		out = wire.TLVPair{KeyKind: valueKindOf(p.Key.Kind), Key: p.Key.Value, ValueKind: valueKindOf(p.Value.Kind),
			Value: p.Value.Value}.Append(out)
	}
	return out, nil
}

// pollReply rebuilds the binary poll reply: each message becomes a one-message batch record at its
// own offset and timestamps, carrying its stored message checksum; the record is sealed with a batch
// checksum over it, as the decoder verifies.
func (p httpPolled) pollReply() ([]byte, error) {
	var records []byte
	for i, m := range p.Messages {
		headers, err := userHeaderBytes(m.UserHeaders)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		start := len(records)
		size := wire.BatchHeaderSize + wire.BatchMessageHeaderSize + len(m.Payload) + len(headers)
		records = append(records, make([]byte, size)...)
		rec := records[start:]
		wire.BatchMessageHeader{Checksum: m.Header.Checksum, ID: m.Header.ID, UserHeadersLength: uint32(len(headers)),
			PayloadLength: uint32(len(m.Payload))}.EncodeInto(rec[wire.BatchHeaderSize:])
		at := wire.BatchHeaderSize + wire.BatchMessageHeaderSize
		at += copy(rec[at:], m.Payload)
		copy(rec[at:], headers)
		h := wire.BatchHeader{PartitionID: uint64(p.PartitionID), BaseOffset: m.Header.Offset, BaseTimestamp: m.Header.Timestamp,
			OriginTimestamp: m.Header.OriginTimestamp, BatchLength: uint64(size), MessageCount: 1}
		h.EncodeInto(rec)
		sum, err := wire.ComputeBatchChecksum(h, rec)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		h.BatchChecksum = sum
		h.EncodeInto(rec)
	}
	return wire.AppendPollMessagesReply(nil, p.PartitionID, p.CurrentOffset, uint32(len(p.Messages)), records), nil
}
