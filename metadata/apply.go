package metadata

import (
	"strings"
	"unicode/utf8"
)

// ApplyContext is the committed op's identity, stamped by the primary.
type ApplyContext struct {
	Op        uint64
	Timestamp uint64 // µs; used as created_at and for PAT expiry
	UserID    uint32 // acting user; RBAC is re-checked with it
	// Node is the replica whose client connection proposed the command
	// (the primary of the view it was prepared in) and Session the
	// client's session epoch: a group membership records both, so the
	// memberships of a node's vanished connections can be found.
	Node    uint8
	Session uint64
}

// Result is the outcome of one applied command: Code 0 or an Iggy error
// code (a committed rejection; the state is then unchanged), and for
// create commands a view of the created entity.
type Result struct {
	Code     uint32
	Stream   *Stream
	Topic    *Topic
	User     *User
	Group    *ConsumerGroup
	Revision uint64 // state revision after the command
}

// OK reports whether the command was applied.
func (r Result) OK() bool { return r.Code == CodeOK }

// Apply applies one committed command. It never panics on bad input: an
// invalid or unauthorized command yields a Result with a non-zero Code
// and leaves the state untouched.
func (s *State) Apply(ctx ApplyContext, cmd Command) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := s.dispatch(ctx, cmd)
	s.lastOp, s.lastTimestamp = ctx.Op, ctx.Timestamp
	if res.Code == CodeOK {
		s.revision++
	}
	res.Revision = s.revision
	return res
}

func (s *State) dispatch(ctx ApplyContext, cmd Command) Result {
	switch c := normalize(cmd).(type) {
	case CreateStream:
		return s.applyCreateStream(ctx, c)
	case UpdateStream:
		return s.applyUpdateStream(ctx, c)
	case DeleteStream:
		return s.applyDeleteStream(ctx, c)
	case PurgeStream:
		return s.applyPurgeStream(ctx, c)
	case CreateTopic:
		return s.applyCreateTopic(ctx, c)
	case UpdateTopic:
		return s.applyUpdateTopic(ctx, c)
	case DeleteTopic:
		return s.applyDeleteTopic(ctx, c)
	case PurgeTopic:
		return s.applyPurgeTopic(ctx, c)
	case CreatePartitions:
		return s.applyCreatePartitions(ctx, c)
	case DeletePartitions:
		return s.applyDeletePartitions(ctx, c)
	case TruncatePartition:
		return s.applyTruncatePartition(ctx, c)
	case CreateConsumerGroup:
		return s.applyCreateGroup(ctx, c)
	case DeleteConsumerGroup:
		return s.applyDeleteGroup(ctx, c)
	case JoinConsumerGroup:
		return s.applyJoinGroup(ctx, c)
	case LeaveConsumerGroup:
		return s.applyLeaveGroup(ctx, c)
	case RemoveConsumerGroupMember:
		return s.applyRemoveMember(c)
	case CreateUser:
		return s.applyCreateUser(ctx, c)
	case UpdateUser:
		return s.applyUpdateUser(ctx, c)
	case DeleteUser:
		return s.applyDeleteUser(ctx, c)
	case ChangePassword:
		return s.applyChangePassword(ctx, c)
	case UpdatePermissions:
		return s.applyUpdatePermissions(ctx, c)
	case CreatePersonalAccessToken:
		return s.applyCreatePAT(ctx, c)
	case DeletePersonalAccessToken:
		return s.applyDeletePAT(ctx, c)
	case DeleteExpiredTokens:
		return s.applyDeleteExpiredTokens(ctx)
	}
	return fail(CodeInvalidCommand)
}

func fail(code uint32) Result { return Result{Code: code} }

// validName: 1..255 bytes of UTF-8, not blank.
func validName(name string) bool {
	return len(name) >= 1 && len(name) <= NameBytesMax && utf8.ValidString(name) &&
		strings.TrimSpace(name) != ""
}

func validUsername(name string) bool {
	return len(name) >= UsernameBytesMin && len(name) <= UsernameBytesMax && utf8.ValidString(name) &&
		strings.TrimSpace(name) != ""
}

// ValidatePassword checks the password length rule (3..100 bytes); the
// primary calls it before hashing (CodeInvalidPassword).
func ValidatePassword(password string) bool {
	return len(password) >= PasswordBytesMin && len(password) <= PasswordBytesMax
}

// ValidUsername reports whether a username passes the 3..50 byte rule.
func ValidUsername(name string) bool { return validUsername(name) }

// ValidName reports whether a stream/topic/group name passes the rules.
func ValidName(name string) bool { return validName(name) }
