package metadata

// ClientID is the ephemeral u128 client id of a session. It has the same
// shape as consensus.Uint128, so the node converts with ClientID(u).
type ClientID struct{ Lo, Hi uint64 }

// IsZero reports whether c is zero.
func (c ClientID) IsZero() bool { return c.Lo == 0 && c.Hi == 0 }

// Compression of a topic's messages (wire values).
type Compression uint8

const (
	CompressionNone Compression = 1
	CompressionGzip Compression = 2
)

// Durability is a topic's create-only write durability policy.
type Durability uint8

const (
	DurabilityReplicated Durability = 1 // ack after a quorum holds the prepare in memory
	DurabilityPersisted  Durability = 2 // ack after the op is recoverable from disk
)

// String returns the config/option spelling.
func (d Durability) String() string {
	switch d {
	case DurabilityReplicated:
		return "replicated"
	case DurabilityPersisted:
		return "persisted"
	}
	return "invalid"
}

// ParseDurability parses "replicated" | "persisted".
func ParseDurability(s string) (Durability, bool) {
	switch s {
	case "replicated":
		return DurabilityReplicated, true
	case "persisted":
		return DurabilityPersisted, true
	}
	return 0, false
}

// UserStatus is a user's account status (wire values).
type UserStatus uint8

const (
	UserActive   UserStatus = 1
	UserInactive UserStatus = 2
)

// Never is the "no limit / never expires" sentinel of message_expiry and
// max_topic_size (u64::MAX on the wire).
const Never = ^uint64(0)

// Topic option bounds (wire-protocol.md §4.2.1).
const (
	SegmentSizeMin               = 1 << 20
	SegmentSizeMax               = 1 << 30
	SegmentSizeAlign             = 512
	MessagesRequiredToSaveMax    = 16 << 20
	SizeOfMessagesToSaveMax      = 1 << 30
	PreallocatedBytesPerTopicMax = 64 << 30
)

// Default topic option values.
const (
	DefaultSegmentSize            = 1 << 30
	DefaultMessagesRequiredToSave = 1024
	DefaultSizeOfMessagesToSave   = 1 << 20
)

// OptionKey bits record which topic options the client sent explicitly
// (responses list those under "options", the rest under "derived_options").
type OptionKey uint16

const (
	OptCompression OptionKey = 1 << iota
	OptMessageExpiry
	OptMaxTopicSize
	OptSegmentSize
	OptEnforceFsync
	OptMessagesRequiredToSave
	OptSizeOfMessagesRequiredToSave
	OptPreallocateSegments
	OptDurability
	OptConsumerOffsetDurability
	optKeysAll = OptConsumerOffsetDurability<<1 - 1
)

// TopicOptions are a topic's create-only storage options, fully resolved
// (defaults filled in by the primary before encoding).
type TopicOptions struct {
	SegmentSize                  uint64
	EnforceFsync                 bool
	MessagesRequiredToSave       uint32
	SizeOfMessagesRequiredToSave uint64
	PreallocateSegments          bool
	Durability                   Durability
	ConsumerOffsetDurability     Durability
}

// DefaultTopicOptions returns the documented defaults with the given
// durability defaults (from server config).
func DefaultTopicOptions(durability, offsetDurability Durability) TopicOptions {
	return TopicOptions{
		SegmentSize:                  DefaultSegmentSize,
		MessagesRequiredToSave:       DefaultMessagesRequiredToSave,
		SizeOfMessagesRequiredToSave: DefaultSizeOfMessagesToSave,
		Durability:                   durability,
		ConsumerOffsetDurability:     offsetDurability,
	}
}

// Stream is a read-only view of a stream (topics sorted by id).
type Stream struct {
	ID        uint32
	Name      string
	CreatedAt uint64 // µs
	Topics    []Topic
}

// Topic is a read-only view of a topic (partitions by id, groups by id).
type Topic struct {
	ID                  uint32
	StreamID            uint32
	Name                string
	CreatedAt           uint64
	MessageExpiry       uint64 // µs, Never = never
	Compression         Compression
	MaxTopicSize        uint64 // bytes, Never = unlimited
	Options             TopicOptions
	ExplicitOptions     OptionKey
	Partitions          []Partition
	ConsumerGroups      []ConsumerGroup
	NextConsumerGroupID uint32
}

// Partition is a read-only view of a partition.
type Partition struct {
	ID                uint32
	CreatedAt         uint64
	CreatedRevision   uint64 // distinguishes incarnations reusing an id
	DeletedUpToOffset uint64 // DeleteSegments watermark (exclusive)
	PurgeGeneration   uint64 // bumped by purge; applied by each replica
	// CreatedOnNode is the replica that proposed the partition's creation
	// (the metadata primary then): the partition's consensus group starts
	// in the view it leads, so partition and metadata primaries coincide.
	CreatedOnNode uint8
}

// ConsumerGroup is a read-only view of a consumer group.
type ConsumerGroup struct {
	ID              uint32
	Name            string
	Generation      uint64
	PartitionsCount uint32
	Members         []Member // sorted by member id
}

// Member is one consumer-group member and its assigned partitions.
type Member struct {
	ID         uint32
	ClientID   ClientID
	Partitions []uint32 // sorted
	// Node is the replica that held the member's connection when it
	// joined; Session the session epoch it joined under.
	Node    uint8
	Session uint64
}

// User is a read-only view of a user.
type User struct {
	ID           uint32
	Username     string
	PasswordHash string
	Status       UserStatus
	CreatedAt    uint64
	Permissions  *Permissions // nil = none
}

// PersonalAccessToken is a stored token: only its hash is kept.
type PersonalAccessToken struct {
	Name      string
	TokenHash string // SHA-256 hex of the raw token
	ExpiryAt  uint64 // µs; 0 = never
}

// GroupMembership names one group a client belongs to.
type GroupMembership struct {
	StreamID, TopicID, GroupID, MemberID uint32
}
