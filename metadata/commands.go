package metadata

import "reflect"

// Kind identifies a command. Values are the wire protocol's header
// operation numbers (wire-protocol.md §3.1), so the node can use
// Kind as consensus.Operation; DeleteExpiredTokens (69) is ours, in the
// internal band.
type Kind uint8

const (
	KindRemoveConsumerGroupMember Kind = 66
	KindTruncatePartition         Kind = 68 // DeleteSegments commits as 68
	KindDeleteExpiredTokens       Kind = 69
	KindCreateStream              Kind = 128
	KindUpdateStream              Kind = 129
	KindDeleteStream              Kind = 130
	KindPurgeStream               Kind = 131
	KindCreateTopic               Kind = 132
	KindUpdateTopic               Kind = 133
	KindDeleteTopic               Kind = 134
	KindPurgeTopic                Kind = 135
	KindCreatePartitions          Kind = 136
	KindDeletePartitions          Kind = 137
	KindCreateConsumerGroup       Kind = 139
	KindDeleteConsumerGroup       Kind = 140
	KindCreateUser                Kind = 141
	KindUpdateUser                Kind = 142
	KindDeleteUser                Kind = 143
	KindChangePassword            Kind = 144
	KindUpdatePermissions         Kind = 145
	KindCreatePersonalAccessToken Kind = 146
	KindDeletePersonalAccessToken Kind = 147
	KindJoinConsumerGroup         Kind = 148
	KindLeaveConsumerGroup        Kind = 149
)

// normalize turns a pointer to a command into the command value (Apply
// and EncodeCommand switch on value types); nil stays nil.
func normalize(cmd Command) Command {
	if cmd == nil {
		return nil
	}
	v := reflect.ValueOf(cmd)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		if c, ok := v.Elem().Interface().(Command); ok {
			return c
		}
	}
	return cmd
}

// Command is one replicated metadata operation. Every field is resolved
// on the primary before encoding (hashes, offsets, defaults).
type Command interface {
	Kind() Kind
}

type CreateStream struct{ Name string }

type UpdateStream struct {
	Stream Ident
	Name   string
}

type DeleteStream struct{ Stream Ident }

type PurgeStream struct{ Stream Ident }

// CreateTopic carries fully resolved options (the primary fills defaults,
// including the durability defaults from its config).
type CreateTopic struct {
	Stream          Ident
	Name            string
	PartitionsCount uint32
	MessageExpiry   uint64 // µs; Never = never
	Compression     Compression
	MaxTopicSize    uint64 // bytes; Never = unlimited
	Options         TopicOptions
	ExplicitOptions OptionKey
}

// UpdateTopic renames the topic and patches its updatable settings: each
// of MessageExpiry, Compression, MaxTopicSize is applied only when its
// bit (OptMessageExpiry, OptCompression, OptMaxTopicSize) is set in
// ExplicitOptions, i.e. the client sent that key; the bit then becomes
// explicit. Other bits are ignored.
type UpdateTopic struct {
	Stream, Topic   Ident
	Name            string
	MessageExpiry   uint64
	Compression     Compression
	MaxTopicSize    uint64
	ExplicitOptions OptionKey
}

type DeleteTopic struct{ Stream, Topic Ident }

type PurgeTopic struct{ Stream, Topic Ident }

type CreatePartitions struct {
	Stream, Topic Ident
	Count         uint32
}

// DeletePartitions removes the Count highest-numbered partitions.
type DeletePartitions struct {
	Stream, Topic Ident
	Count         uint32
}

// TruncatePartition is DeleteSegments resolved on the primary to an
// offset: messages below UpToOffset become deleted.
type TruncatePartition struct {
	Stream, Topic Ident
	PartitionID   uint32
	UpToOffset    uint64
}

type CreateConsumerGroup struct {
	Stream, Topic Ident
	Name          string
}

type DeleteConsumerGroup struct{ Stream, Topic, Group Ident }

// JoinConsumerGroup adds the session's client (stamped by the primary).
type JoinConsumerGroup struct {
	Stream, Topic, Group Ident
	Client               ClientID
}

type LeaveConsumerGroup struct {
	Stream, Topic, Group Ident
	Client               ClientID
}

// RemoveConsumerGroupMember drops every membership of a client (logout
// or disconnect). Server-internal: no RBAC, idempotent.
type RemoveConsumerGroupMember struct{ Client ClientID }

// CreateUser carries the password hash minted by HashPassword on the primary.
type CreateUser struct {
	Username     string
	PasswordHash string
	Status       UserStatus
	Permissions  *Permissions
}

// UpdateUser changes the username and/or status (nil = unchanged).
type UpdateUser struct {
	User     Ident
	Username *string
	Status   *UserStatus
}

type DeleteUser struct{ User Ident }

// ChangePassword carries the new hash; the primary verified the current
// password before encoding and sets CurrentPasswordMismatch instead of a
// hash when it did not match (committed as CodeInvalidCredentials so a
// retried request id dedups).
type ChangePassword struct {
	User                    Ident
	NewPasswordHash         string
	CurrentPasswordMismatch bool
}

type UpdatePermissions struct {
	User        Ident
	Permissions *Permissions
}

// CreatePersonalAccessToken carries only the token's SHA-256 hex hash;
// Expiry is the lifetime in µs (0 or Never = never expires). The owner is
// the acting user of the ApplyContext.
type CreatePersonalAccessToken struct {
	Name      string
	TokenHash string
	Expiry    uint64
}

type DeletePersonalAccessToken struct{ Name string }

// DeleteExpiredTokens removes every token with expiry at or before the
// op's timestamp (the primary's periodic cleaner). Server-internal.
type DeleteExpiredTokens struct{}

func (CreateStream) Kind() Kind              { return KindCreateStream }
func (UpdateStream) Kind() Kind              { return KindUpdateStream }
func (DeleteStream) Kind() Kind              { return KindDeleteStream }
func (PurgeStream) Kind() Kind               { return KindPurgeStream }
func (CreateTopic) Kind() Kind               { return KindCreateTopic }
func (UpdateTopic) Kind() Kind               { return KindUpdateTopic }
func (DeleteTopic) Kind() Kind               { return KindDeleteTopic }
func (PurgeTopic) Kind() Kind                { return KindPurgeTopic }
func (CreatePartitions) Kind() Kind          { return KindCreatePartitions }
func (DeletePartitions) Kind() Kind          { return KindDeletePartitions }
func (TruncatePartition) Kind() Kind         { return KindTruncatePartition }
func (CreateConsumerGroup) Kind() Kind       { return KindCreateConsumerGroup }
func (DeleteConsumerGroup) Kind() Kind       { return KindDeleteConsumerGroup }
func (JoinConsumerGroup) Kind() Kind         { return KindJoinConsumerGroup }
func (LeaveConsumerGroup) Kind() Kind        { return KindLeaveConsumerGroup }
func (RemoveConsumerGroupMember) Kind() Kind { return KindRemoveConsumerGroupMember }
func (CreateUser) Kind() Kind                { return KindCreateUser }
func (UpdateUser) Kind() Kind                { return KindUpdateUser }
func (DeleteUser) Kind() Kind                { return KindDeleteUser }
func (ChangePassword) Kind() Kind            { return KindChangePassword }
func (UpdatePermissions) Kind() Kind         { return KindUpdatePermissions }
func (CreatePersonalAccessToken) Kind() Kind { return KindCreatePersonalAccessToken }
func (DeletePersonalAccessToken) Kind() Kind { return KindDeletePersonalAccessToken }
func (DeleteExpiredTokens) Kind() Kind       { return KindDeleteExpiredTokens }
