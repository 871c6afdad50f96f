package metadata

import (
	"errors"
	"fmt"
)

// CommandEncodingVersion is the first byte of every encoded command.
const CommandEncodingVersion uint8 = 1

// commandBytesMax bounds an encoded command (permissions can be large).
const commandBytesMax = 16 << 20

// invalidEncoding is what EncodeCommand returns for a command it cannot
// represent (nil, unknown type, a string beyond 64 KiB): kind 0 never
// decodes, so the op commits as CodeInvalidCommand instead of carrying
// ambiguous bytes.
var invalidEncoding = []byte{CommandEncodingVersion, 0}

// EncodeCommand returns the deterministic binary encoding of cmd: the body
// of the replicated op. Layout: [version u8][kind u8][fields, LE].
func EncodeCommand(cmd Command) []byte {
	cmd = normalize(cmd)
	if cmd == nil || decodeBody(cmd.Kind(), &reader{}) == nil {
		return append([]byte(nil), invalidEncoding...)
	}
	w := &writer{buf: make([]byte, 0, 64)}
	w.u8(CommandEncodingVersion)
	w.u8(uint8(cmd.Kind()))
	switch c := cmd.(type) {
	case CreateStream:
		w.str16(c.Name)
	case UpdateStream:
		w.ident(c.Stream)
		w.str16(c.Name)
	case DeleteStream:
		w.ident(c.Stream)
	case PurgeStream:
		w.ident(c.Stream)
	case CreateTopic:
		w.ident(c.Stream)
		w.str16(c.Name)
		w.u32(c.PartitionsCount)
		w.u64(c.MessageExpiry)
		w.u8(uint8(c.Compression))
		w.u64(c.MaxTopicSize)
		o := c.Options
		w.u64(o.SegmentSize)
		w.boolean(o.EnforceFsync)
		w.u32(o.MessagesRequiredToSave)
		w.u64(o.SizeOfMessagesRequiredToSave)
		w.boolean(o.PreallocateSegments)
		w.u8(uint8(o.Durability))
		w.u8(uint8(o.ConsumerOffsetDurability))
		w.u16(uint16(c.ExplicitOptions))
	case UpdateTopic:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.str16(c.Name)
		w.u64(c.MessageExpiry)
		w.u8(uint8(c.Compression))
		w.u64(c.MaxTopicSize)
		w.u16(uint16(c.ExplicitOptions))
	case DeleteTopic:
		w.ident(c.Stream)
		w.ident(c.Topic)
	case PurgeTopic:
		w.ident(c.Stream)
		w.ident(c.Topic)
	case CreatePartitions:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.u32(c.Count)
	case DeletePartitions:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.u32(c.Count)
	case TruncatePartition:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.u32(c.PartitionID)
		w.u64(c.UpToOffset)
	case CreateConsumerGroup:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.str16(c.Name)
	case DeleteConsumerGroup:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.ident(c.Group)
	case JoinConsumerGroup:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.ident(c.Group)
		w.client(c.Client)
	case LeaveConsumerGroup:
		w.ident(c.Stream)
		w.ident(c.Topic)
		w.ident(c.Group)
		w.client(c.Client)
	case RemoveConsumerGroupMember:
		w.client(c.Client)
	case CreateUser:
		w.str16(c.Username)
		w.str16(c.PasswordHash)
		w.u8(uint8(c.Status))
		w.permissions(c.Permissions)
	case UpdateUser:
		w.ident(c.User)
		w.boolean(c.Username != nil)
		if c.Username != nil {
			w.str16(*c.Username)
		}
		w.boolean(c.Status != nil)
		if c.Status != nil {
			w.u8(uint8(*c.Status))
		}
	case DeleteUser:
		w.ident(c.User)
	case ChangePassword:
		w.ident(c.User)
		w.str16(c.NewPasswordHash)
		w.boolean(c.CurrentPasswordMismatch)
	case UpdatePermissions:
		w.ident(c.User)
		w.permissions(c.Permissions)
	case CreatePersonalAccessToken:
		w.str16(c.Name)
		w.str16(c.TokenHash)
		w.u64(c.Expiry)
	case DeletePersonalAccessToken:
		w.str16(c.Name)
	case DeleteExpiredTokens:
	default:
		w.overflow = true // a foreign type claiming a known kind
	}
	if w.overflow {
		return append([]byte(nil), invalidEncoding...)
	}
	return w.buf
}

// DecodeCommand parses an encoded command strictly: known version and
// kind, bounded lengths, canonical bools, no trailing bytes.
func DecodeCommand(b []byte) (Command, error) {
	if len(b) > commandBytesMax {
		return nil, fmt.Errorf("decode command: %d bytes exceeds %d", len(b), commandBytesMax)
	}
	if len(b) < 2 {
		return nil, errors.New("decode command: shorter than the 2-byte prefix")
	}
	if b[0] != CommandEncodingVersion {
		return nil, fmt.Errorf("decode command: unknown encoding version %d", b[0])
	}
	kind := Kind(b[1])
	r := &reader{buf: b, off: 2}
	cmd := decodeBody(kind, r)
	if cmd == nil {
		return nil, fmt.Errorf("decode command: unknown kind %d", kind)
	}
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("decode command kind %d: %w", kind, err)
	}
	return cmd, nil
}

const (
	nameMax = NameBytesMax
	hashMax = PasswordHashBytesMax
)

func decodeBody(kind Kind, r *reader) Command {
	switch kind {
	case KindCreateStream:
		return CreateStream{Name: r.str16(nameMax)}
	case KindUpdateStream:
		return UpdateStream{Stream: r.ident(), Name: r.str16(nameMax)}
	case KindDeleteStream:
		return DeleteStream{Stream: r.ident()}
	case KindPurgeStream:
		return PurgeStream{Stream: r.ident()}
	case KindCreateTopic:
		c := CreateTopic{Stream: r.ident(), Name: r.str16(nameMax), PartitionsCount: r.u32(),
			MessageExpiry: r.u64(), Compression: Compression(r.u8()), MaxTopicSize: r.u64()}
		c.Options = TopicOptions{SegmentSize: r.u64(), EnforceFsync: r.boolean(), MessagesRequiredToSave: r.u32(),
			SizeOfMessagesRequiredToSave: r.u64(), PreallocateSegments: r.boolean(),
			Durability: Durability(r.u8()), ConsumerOffsetDurability: Durability(r.u8())}
		c.ExplicitOptions = OptionKey(r.u16())
		return c
	case KindUpdateTopic:
		return UpdateTopic{Stream: r.ident(), Topic: r.ident(), Name: r.str16(nameMax), MessageExpiry: r.u64(),
			Compression: Compression(r.u8()), MaxTopicSize: r.u64(), ExplicitOptions: OptionKey(r.u16())}
	case KindDeleteTopic:
		return DeleteTopic{Stream: r.ident(), Topic: r.ident()}
	case KindPurgeTopic:
		return PurgeTopic{Stream: r.ident(), Topic: r.ident()}
	case KindCreatePartitions:
		return CreatePartitions{Stream: r.ident(), Topic: r.ident(), Count: r.u32()}
	case KindDeletePartitions:
		return DeletePartitions{Stream: r.ident(), Topic: r.ident(), Count: r.u32()}
	case KindTruncatePartition:
		return TruncatePartition{Stream: r.ident(), Topic: r.ident(), PartitionID: r.u32(), UpToOffset: r.u64()}
	case KindCreateConsumerGroup:
		return CreateConsumerGroup{Stream: r.ident(), Topic: r.ident(), Name: r.str16(nameMax)}
	case KindDeleteConsumerGroup:
		return DeleteConsumerGroup{Stream: r.ident(), Topic: r.ident(), Group: r.ident()}
	case KindJoinConsumerGroup:
		return JoinConsumerGroup{Stream: r.ident(), Topic: r.ident(), Group: r.ident(), Client: r.client()}
	case KindLeaveConsumerGroup:
		return LeaveConsumerGroup{Stream: r.ident(), Topic: r.ident(), Group: r.ident(), Client: r.client()}
	case KindRemoveConsumerGroupMember:
		return RemoveConsumerGroupMember{Client: r.client()}
	case KindCreateUser:
		return CreateUser{Username: r.str16(nameMax), PasswordHash: r.str16(hashMax),
			Status: UserStatus(r.u8()), Permissions: r.permissions()}
	case KindUpdateUser:
		c := UpdateUser{User: r.ident()}
		if r.boolean() {
			name := r.str16(nameMax)
			c.Username = &name
		}
		if r.boolean() {
			st := UserStatus(r.u8())
			c.Status = &st
		}
		return c
	case KindDeleteUser:
		return DeleteUser{User: r.ident()}
	case KindChangePassword:
		return ChangePassword{User: r.ident(), NewPasswordHash: r.str16(hashMax), CurrentPasswordMismatch: r.boolean()}
	case KindUpdatePermissions:
		return UpdatePermissions{User: r.ident(), Permissions: r.permissions()}
	case KindCreatePersonalAccessToken:
		return CreatePersonalAccessToken{Name: r.str16(nameMax), TokenHash: r.str16(hashMax), Expiry: r.u64()}
	case KindDeletePersonalAccessToken:
		return DeletePersonalAccessToken{Name: r.str16(nameMax)}
	case KindDeleteExpiredTokens:
		return DeleteExpiredTokens{}
	}
	return nil
}

// ApplyEncoded decodes a replicated op body and applies it. A body that
// does not decode commits as CodeInvalidCommand (state unchanged), so a
// bad op can never wedge the log.
func (s *State) ApplyEncoded(ctx ApplyContext, body []byte) (Result, error) {
	cmd, err := DecodeCommand(body)
	if err != nil {
		s.mu.Lock()
		s.lastOp, s.lastTimestamp = ctx.Op, ctx.Timestamp
		res := Result{Code: CodeInvalidCommand, Revision: s.revision}
		s.mu.Unlock()
		return res, err
	}
	return s.Apply(ctx, cmd), nil
}
