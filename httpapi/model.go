package httpapi

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/lodestream/lodestream/wire"
)

// JSON shapes of spec §9, built from the binary replies' decoded values.

type optionJSON struct {
	Value    string `json:"value"`
	Explicit bool   `json:"explicit"`
}

// optionsJSON renders options: the ones the client set (explicit) and the
// ones the server filled in.
func optionsJSON(explicit, derived wire.Options) map[string]optionJSON {
	out := make(map[string]optionJSON, len(explicit)+len(derived))
	for _, o := range derived {
		out[o.Key] = optionJSON{Value: optionValueString(o), Explicit: false}
	}
	for _, o := range explicit {
		out[o.Key] = optionJSON{Value: optionValueString(o), Explicit: true}
	}
	return out
}

// optionValueString is an option value's string form.
func optionValueString(o wire.Option) string {
	v := o.Value
	switch o.Kind {
	case wire.KindBool:
		if len(v) == 1 {
			return strconv.FormatBool(v[0] != 0)
		}
	case wire.KindUint8:
		if len(v) == 1 {
			return strconv.FormatUint(uint64(v[0]), 10)
		}
	case wire.KindUint16:
		if len(v) == 2 {
			return strconv.FormatUint(uint64(binary.LittleEndian.Uint16(v)), 10)
		}
	case wire.KindUint32:
		if len(v) == 4 {
			return strconv.FormatUint(uint64(binary.LittleEndian.Uint32(v)), 10)
		}
	case wire.KindUint64:
		if len(v) == 8 {
			return strconv.FormatUint(binary.LittleEndian.Uint64(v), 10)
		}
	case wire.KindInt64:
		if len(v) == 8 {
			return strconv.FormatInt(int64(binary.LittleEndian.Uint64(v)), 10)
		}
	case wire.KindFloat64:
		if len(v) == 8 {
			return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(v)), 'g', -1, 64)
		}
	}
	return string(v)
}

type streamJSON struct {
	ID            uint32                `json:"id"`
	CreatedAt     uint64                `json:"created_at"`
	Name          string                `json:"name"`
	Size          byteSize              `json:"size"`
	MessagesCount uint64                `json:"messages_count"`
	TopicsCount   uint32                `json:"topics_count"`
	Options       map[string]optionJSON `json:"options"`
}

type streamDetailsJSON struct {
	streamJSON
	Topics []topicJSON `json:"topics"`
}

func streamOf(s wire.Stream) streamJSON {
	return streamJSON{ID: s.ID, CreatedAt: s.CreatedAt, Name: s.Name, Size: byteSize(s.SizeBytes),
		MessagesCount: s.MessagesCount, TopicsCount: s.TopicsCount, Options: optionsJSON(s.Options, nil)}
}

func streamDetailsOf(s wire.StreamDetails) streamDetailsJSON {
	out := streamDetailsJSON{streamJSON: streamOf(s.Stream), Topics: make([]topicJSON, 0, len(s.Topics))}
	out.TopicsCount = uint32(len(s.Topics))
	for _, t := range s.Topics {
		out.Topics = append(out.Topics, topicOf(t))
	}
	return out
}

type topicJSON struct {
	ID                   uint32                `json:"id"`
	CreatedAt            uint64                `json:"created_at"`
	Name                 string                `json:"name"`
	Size                 byteSize              `json:"size"`
	MessageExpiry        uint64                `json:"message_expiry"`
	CompressionAlgorithm string                `json:"compression_algorithm"`
	MaxTopicSize         uint64                `json:"max_topic_size"`
	MessagesCount        uint64                `json:"messages_count"`
	PartitionsCount      uint32                `json:"partitions_count"`
	Options              map[string]optionJSON `json:"options"`
}

type topicDetailsJSON struct {
	topicJSON
	Partitions []partitionJSON `json:"partitions"`
}

type partitionJSON struct {
	ID            uint32   `json:"id"`
	CreatedAt     uint64   `json:"created_at"`
	SegmentsCount uint32   `json:"segments_count"`
	CurrentOffset uint64   `json:"current_offset"`
	Size          byteSize `json:"size"`
	MessagesCount uint64   `json:"messages_count"`
}

func compressionName(c uint8) string {
	if c == wire.CompressionGzip {
		return "gzip"
	}
	return "none"
}

func topicOf(t wire.TopicHeader) topicJSON {
	return topicJSON{ID: t.ID, CreatedAt: t.CreatedAt, Name: t.Name, Size: byteSize(t.SizeBytes),
		MessageExpiry: t.MessageExpiry, CompressionAlgorithm: compressionName(t.Compression), MaxTopicSize: t.MaxTopicSize,
		MessagesCount: t.MessagesCount, PartitionsCount: t.PartitionsCount, Options: optionsJSON(t.Options, t.DerivedOptions)}
}

func topicDetailsOf(t wire.TopicDetails) topicDetailsJSON {
	out := topicDetailsJSON{topicJSON: topicOf(t.TopicHeader), Partitions: make([]partitionJSON, 0, len(t.Partitions))}
	out.PartitionsCount = uint32(len(t.Partitions))
	for _, p := range t.Partitions {
		out.Partitions = append(out.Partitions, partitionJSON{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: p.SegmentsCount,
			CurrentOffset: p.CurrentOffset, Size: byteSize(p.SizeBytes), MessagesCount: p.MessagesCount})
	}
	return out
}

type groupJSON struct {
	ID              uint32 `json:"id"`
	Name            string `json:"name"`
	PartitionsCount uint32 `json:"partitions_count"`
	MembersCount    uint32 `json:"members_count"`
}

type memberJSON struct {
	ID              uint32   `json:"id"`
	PartitionsCount uint32   `json:"partitions_count"`
	Partitions      []uint32 `json:"partitions"`
}

type groupDetailsJSON struct {
	groupJSON
	Members []memberJSON `json:"members"`
}

func groupOf(g wire.ConsumerGroup) groupJSON {
	return groupJSON{ID: g.ID, Name: g.Name, PartitionsCount: g.PartitionsCount, MembersCount: g.MembersCount}
}

func groupDetailsOf(g wire.GroupDetails) groupDetailsJSON {
	out := groupDetailsJSON{groupJSON: groupOf(g.ConsumerGroup), Members: make([]memberJSON, 0, len(g.Members))}
	out.MembersCount = uint32(len(g.Members))
	for _, m := range g.Members {
		ps := m.Partitions
		if ps == nil {
			ps = []uint32{}
		}
		out.Members = append(out.Members, memberJSON{ID: m.ID, PartitionsCount: uint32(len(ps)), Partitions: ps})
	}
	return out
}

type userJSON struct {
	ID        uint32                `json:"id"`
	CreatedAt uint64                `json:"created_at"`
	Status    string                `json:"status"`
	Username  string                `json:"username"`
	Options   map[string]optionJSON `json:"options"`
}

type userDetailsJSON struct {
	userJSON
	Permissions *permissionsJSON `json:"permissions"`
}

func statusName(s wire.UserStatus) string {
	if s == wire.UserInactive {
		return "inactive"
	}
	return "active"
}

func userOf(u wire.User) userJSON {
	return userJSON{ID: u.ID, CreatedAt: u.CreatedAt, Status: statusName(u.Status), Username: u.Username,
		Options: optionsJSON(u.Options, nil)}
}

func userDetailsOf(u wire.UserDetails) userDetailsJSON {
	return userDetailsJSON{userJSON: userOf(u.User), Permissions: permissionsOf(u.Permissions)}
}

type patJSON struct {
	Name     string  `json:"name"`
	ExpiryAt *uint64 `json:"expiry_at"`
}

type rawPATJSON struct {
	Token string `json:"token"`
}

type offsetJSON struct {
	PartitionID   uint32 `json:"partition_id"`
	CurrentOffset uint64 `json:"current_offset"`
	StoredOffset  uint64 `json:"stored_offset"`
}

type clientJSON struct {
	ClientID            uint32  `json:"client_id"`
	UserID              *uint32 `json:"user_id"`
	Address             string  `json:"address"`
	Transport           string  `json:"transport"`
	ConsumerGroupsCount uint32  `json:"consumer_groups_count"`
}

type clientGroupJSON struct {
	StreamID uint32 `json:"stream_id"`
	TopicID  uint32 `json:"topic_id"`
	GroupID  uint32 `json:"group_id"`
}

type clientDetailsJSON struct {
	clientJSON
	ConsumerGroups []clientGroupJSON `json:"consumer_groups"`
}

func transportName(t uint8) string {
	switch t {
	case wire.TransportTCP:
		return "TCP"
	case wire.TransportQUIC:
		return "QUIC"
	case wire.TransportWebSocket:
		return "WebSocket"
	case 3:
		return "HTTP"
	}
	return "Unknown"
}

func clientOf(c wire.Client) clientJSON {
	out := clientJSON{ClientID: c.ClientID, Address: c.Address, Transport: transportName(c.Transport), ConsumerGroupsCount: c.ConsumerGroupsCount}
	if c.UserID != wire.NoUser {
		uid := c.UserID
		out.UserID = &uid
	}
	return out
}

func clientDetailsOf(d wire.ClientDetails) clientDetailsJSON {
	out := clientDetailsJSON{clientJSON: clientOf(d.Client), ConsumerGroups: make([]clientGroupJSON, 0, len(d.ConsumerGroups))}
	for _, g := range d.ConsumerGroups {
		out.ConsumerGroups = append(out.ConsumerGroups, clientGroupJSON{StreamID: g.StreamID, TopicID: g.TopicID, GroupID: g.GroupID})
	}
	return out
}

type cacheMetricJSON struct {
	Hits     uint64  `json:"hits"`
	Misses   uint64  `json:"misses"`
	HitRatio float32 `json:"hit_ratio"`
}

type statsJSON struct {
	ProcessID           uint32                     `json:"process_id"`
	CPUUsage            float32                    `json:"cpu_usage"`
	TotalCPUUsage       float32                    `json:"total_cpu_usage"`
	MemoryUsage         byteSize                   `json:"memory_usage"`
	TotalMemory         byteSize                   `json:"total_memory"`
	AvailableMemory     byteSize                   `json:"available_memory"`
	RunTime             uint64                     `json:"run_time"`
	StartTime           uint64                     `json:"start_time"`
	ReadBytes           byteSize                   `json:"read_bytes"`
	WrittenBytes        byteSize                   `json:"written_bytes"`
	MessagesSizeBytes   byteSize                   `json:"messages_size_bytes"`
	StreamsCount        uint32                     `json:"streams_count"`
	TopicsCount         uint32                     `json:"topics_count"`
	PartitionsCount     uint32                     `json:"partitions_count"`
	SegmentsCount       uint32                     `json:"segments_count"`
	MessagesCount       uint64                     `json:"messages_count"`
	ClientsCount        uint32                     `json:"clients_count"`
	ConsumerGroupsCount uint32                     `json:"consumer_groups_count"`
	Hostname            string                     `json:"hostname"`
	OSName              string                     `json:"os_name"`
	OSVersion           string                     `json:"os_version"`
	KernelVersion       string                     `json:"kernel_version"`
	ServerVersion       string                     `json:"iggy_server_version"`
	ServerSemver        *uint32                    `json:"iggy_server_semver"`
	CacheMetrics        map[string]cacheMetricJSON `json:"cache_metrics"`
	ThreadsCount        uint32                     `json:"threads_count"`
	FreeDiskSpace       byteSize                   `json:"free_disk_space"`
	TotalDiskSpace      byteSize                   `json:"total_disk_space"`
}

func statsOf(s wire.Stats) statsJSON {
	out := statsJSON{ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage,
		MemoryUsage: byteSize(s.MemoryUsage), TotalMemory: byteSize(s.TotalMemory), AvailableMemory: byteSize(s.AvailableMemory),
		RunTime: s.RunTime, StartTime: s.StartTime, ReadBytes: byteSize(s.ReadBytes), WrittenBytes: byteSize(s.WrittenBytes),
		MessagesSizeBytes: byteSize(s.MessagesSizeBytes), StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount,
		PartitionsCount: s.PartitionsCount, SegmentsCount: s.SegmentsCount, MessagesCount: s.MessagesCount,
		ClientsCount: s.ClientsCount, ConsumerGroupsCount: s.ConsumerGroupsCount, Hostname: s.Hostname, OSName: s.OSName,
		OSVersion: s.OSVersion, KernelVersion: s.KernelVersion, ServerVersion: s.ServerVersion,
		CacheMetrics: make(map[string]cacheMetricJSON, len(s.CacheMetrics)), ThreadsCount: s.ThreadsCount,
		FreeDiskSpace: byteSize(s.FreeDiskSpace), TotalDiskSpace: byteSize(s.TotalDiskSpace)}
	if s.ServerSemver != 0 {
		v := s.ServerSemver
		out.ServerSemver = &v
	}
	for _, m := range s.CacheMetrics {
		key := strconv.FormatUint(uint64(m.StreamID), 10) + "-" + strconv.FormatUint(uint64(m.TopicID), 10) + "-" +
			strconv.FormatUint(uint64(m.PartitionID), 10)
		out.CacheMetrics[key] = cacheMetricJSON{Hits: m.Hits, Misses: m.Misses, HitRatio: m.HitRatio}
	}
	return out
}

type endpointsJSON struct {
	TCP       uint16 `json:"tcp"`
	QUIC      uint16 `json:"quic"`
	HTTP      uint16 `json:"http"`
	WebSocket uint16 `json:"websocket"`
}

type clusterNodeJSON struct {
	Name      string        `json:"name"`
	IP        string        `json:"ip"`
	Endpoints endpointsJSON `json:"endpoints"`
	Role      string        `json:"role"`
	Status    string        `json:"status"`
}

type clusterJSON struct {
	Name  string            `json:"name"`
	Nodes []clusterNodeJSON `json:"nodes"`
}

var nodeStatusNames = map[uint8]string{wire.NodeHealthy: "healthy", wire.NodeStarting: "starting", wire.NodeStopping: "stopping",
	wire.NodeUnreachable: "unreachable", wire.NodeMaintenance: "maintenance"}

func clusterOf(m wire.ClusterMetadata) clusterJSON {
	out := clusterJSON{Name: m.Name, Nodes: make([]clusterNodeJSON, 0, len(m.Nodes))}
	for _, n := range m.Nodes {
		role := "follower"
		if n.Role == wire.RoleLeader {
			role = "leader"
		}
		status, ok := nodeStatusNames[n.Status]
		if !ok {
			status = "unknown"
		}
		out.Nodes = append(out.Nodes, clusterNodeJSON{Name: n.Name, IP: n.IP, Role: role, Status: status,
			Endpoints: endpointsJSON{TCP: n.TCP, QUIC: n.QUIC, HTTP: n.HTTP, WebSocket: n.WebSocket}})
	}
	return out
}

type optionSpecJSON struct {
	Key          string `json:"key"`
	Kind         string `json:"kind"`
	DefaultValue []int  `json:"default_value"`
	Description  string `json:"description"`
}

func optionSpecOf(s wire.OptionSpec) optionSpecJSON {
	def := make([]int, len(s.Default))
	for i, b := range s.Default {
		def[i] = int(b)
	}
	return optionSpecJSON{Key: s.Key, Kind: s.Kind.String(), DefaultValue: def, Description: s.Description}
}
