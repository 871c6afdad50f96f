package bus

import (
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// ForwardKind is the command number of a forward frame (server-design
// §2.2, commands 26–29). Forward frames are node-level: a backup forwards
// a client's Register or Logout to the primary of the metadata group, which
// answers with a result (§3.11, forwarded login). They are not consensus
// messages and carry no group.
type ForwardKind uint8

// The forward frames.
const (
	ForwardRegister       ForwardKind = 26 // backup → primary: Client, Nonce, UserID
	ForwardRegisterResult ForwardKind = 27 // primary → backup: Nonce, Client, Epoch, Watermark, Outcome
	ForwardLogout         ForwardKind = 28 // backup → primary: Client, Nonce, Session, Request
	ForwardLogoutResult   ForwardKind = 29 // primary → backup: Nonce, Client, Commit, Outcome
)

func (k ForwardKind) String() string {
	switch k {
	case ForwardRegister:
		return "forward_register"
	case ForwardRegisterResult:
		return "forward_register_result"
	case ForwardLogout:
		return "forward_logout"
	case ForwardLogoutResult:
		return "forward_logout_result"
	}
	return fmt.Sprintf("forward_kind(%d)", uint8(k))
}

// IsForwardCommand reports whether c is one of the forward frames.
func IsForwardCommand(c Command) bool {
	return c >= CommandForwardRegister && c <= CommandForwardLogoutResult
}

// ForwardRegisterResult outcomes (Forward.Outcome).
const (
	RegisterOutcomeOk           uint8 = 0
	RegisterOutcomeNotPrimary   uint8 = 1
	RegisterOutcomeNotCaughtUp  uint8 = 2 // defined upstream, unused
	RegisterOutcomePipelineFull uint8 = 3
	RegisterOutcomeInProgress   uint8 = 4
	RegisterOutcomeCanceled     uint8 = 5
	// RegisterOutcomeClientIDOwnedByAnotherUser is terminal: the client id
	// is bound to another user; retrying cannot succeed.
	RegisterOutcomeClientIDOwnedByAnotherUser uint8 = 6

	registerOutcomeMax = RegisterOutcomeClientIDOwnedByAnotherUser
)

// ForwardLogoutResult outcomes (Forward.Outcome).
const (
	LogoutOutcomeOk           uint8 = 0
	LogoutOutcomeNotPrimary   uint8 = 1
	LogoutOutcomePipelineFull uint8 = 2
	LogoutOutcomeInProgress   uint8 = 3
	LogoutOutcomeCanceled     uint8 = 4

	logoutOutcomeMax = LogoutOutcomeCanceled
)

// Forward is one forward frame. Fields a Kind does not carry are zero (and
// must be, to encode); To is not on the wire (the receiving bus sets it).
type Forward struct {
	Kind     ForwardKind
	From, To uint8
	View     uint32 // sender's current view of the metadata group

	Client consensus.Uint128 // every kind
	Nonce  consensus.Uint128 // every kind: correlates a result with its request

	UserID    uint32 // ForwardRegister: the user the backup authenticated
	Session   uint64 // ForwardLogout: the session epoch being logged out
	Request   uint64 // ForwardLogout: the logout's request number
	Epoch     uint64 // ForwardRegisterResult: the new session epoch (commit op of the Register)
	Watermark uint64 // ForwardRegisterResult: the client's highest committed request
	Commit    uint64 // ForwardLogoutResult: the op that committed the logout
	Outcome   uint8  // the result kinds: a RegisterOutcome* / LogoutOutcome* constant
}

// OutcomeName is the outcome's name for logs ("" on a request kind).
func (f *Forward) OutcomeName() string {
	switch f.Kind {
	case ForwardRegisterResult:
		if n := [...]string{"ok", "not_primary", "not_caught_up", "pipeline_full", "in_progress", "canceled",
			"client_id_owned_by_another_user"}; int(f.Outcome) < len(n) {
			return n[f.Outcome]
		}
	case ForwardLogoutResult:
		if n := [...]string{"ok", "not_primary", "pipeline_full", "in_progress", "canceled"}; int(f.Outcome) < len(n) {
			return n[f.Outcome]
		}
	default:
		return ""
	}
	return fmt.Sprintf("outcome(%d)", f.Outcome)
}

// Forward frame offsets (server-design §2.2, from byte 0 of the header).
const (
	offFwdClient    = 128 // u128: ForwardRegister, ForwardLogout
	offFwdNonce     = 144 // u128: ForwardRegister, ForwardLogout
	offFwdResNonce  = 128 // u128: the result kinds
	offFwdResClient = 144 // u128: the result kinds
	offFwdUserID    = 160 // u32: ForwardRegister
	offFwdSession   = 160 // u64: ForwardLogout
	offFwdRequest   = 168 // u64: ForwardLogout
	offFwdEpoch     = 160 // u64: ForwardRegisterResult
	offFwdWatermark = 168 // u64: ForwardRegisterResult
	offFwdCommit    = 160 // u64: ForwardLogoutResult
	offFwdOutcome   = 255 // u8: the result kinds
)

func knownForward(k ForwardKind) bool { return IsForwardCommand(Command(k)) }

// checkOutcome applies the per-kind outcome range.
func checkOutcome(f *Forward) error {
	switch f.Kind {
	case ForwardRegisterResult:
		if f.Outcome > registerOutcomeMax {
			return invalid("%s: outcome %d (max %d)", f.Kind, f.Outcome, registerOutcomeMax)
		}
	case ForwardLogoutResult:
		if f.Outcome > logoutOutcomeMax {
			return invalid("%s: outcome %d (max %d)", f.Kind, f.Outcome, logoutOutcomeMax)
		}
	}
	return nil
}

// EncodeForward appends f's frame (a sealed, header-only control frame of
// HeaderBytes bytes) to dst. Fields f.Kind does not carry are ignored; an
// unknown kind or an outcome outside the kind's range is refused.
func (c *Codec) EncodeForward(dst []byte, f *Forward) ([]byte, error) {
	if !knownForward(f.Kind) {
		return dst, fmt.Errorf("encode forward frame: unknown kind %d", f.Kind)
	}
	if err := checkOutcome(f); err != nil {
		return dst, fmt.Errorf("encode forward frame: %w", err)
	}
	start := len(dst)
	dst = append(dst, make([]byte, HeaderBytes)...)
	c.putForwardHeader(dst[start:], f)
	return dst, nil
}

// putForwardHeader writes the whole 256-byte header of f's frame and
// seals it.
func (c *Codec) putForwardHeader(h []byte, f *Forward) {
	clear(h)
	switch f.Kind {
	case ForwardRegister:
		putU128(h[offFwdClient:], f.Client)
		putU128(h[offFwdNonce:], f.Nonce)
		le.PutUint32(h[offFwdUserID:], f.UserID)
	case ForwardRegisterResult:
		putU128(h[offFwdResNonce:], f.Nonce)
		putU128(h[offFwdResClient:], f.Client)
		le.PutUint64(h[offFwdEpoch:], f.Epoch)
		le.PutUint64(h[offFwdWatermark:], f.Watermark)
		h[offFwdOutcome] = f.Outcome
	case ForwardLogout:
		putU128(h[offFwdClient:], f.Client)
		putU128(h[offFwdNonce:], f.Nonce)
		le.PutUint64(h[offFwdSession:], f.Session)
		le.PutUint64(h[offFwdRequest:], f.Request)
	case ForwardLogoutResult:
		putU128(h[offFwdResNonce:], f.Nonce)
		putU128(h[offFwdResClient:], f.Client)
		le.PutUint64(h[offFwdCommit:], f.Commit)
		h[offFwdOutcome] = f.Outcome
	}
	putU128(h[offCluster:], c.cluster)
	le.PutUint32(h[offSize:], HeaderBytes)
	le.PutUint32(h[offView:], f.View)
	h[offCommand] = byte(f.Kind)
	h[offReplica] = f.From
	putWide(h[offChecksum:], frameChecksum(h))
}

// DecodeForward parses and validates one whole forward frame (len(frame) =
// the declared size). To is left zero: the bus sets it. Any error wraps
// ErrInvalidFrame.
//
// As with Decode, a frame decodes only if it is exactly what EncodeForward
// produces for the result: header only, checksum_body 0, the seal
// matching, every byte a kind does not carry zero, outcome in range.
func (c *Codec) DecodeForward(frame []byte) (Forward, error) {
	if len(frame) < HeaderBytes {
		return Forward{}, invalid("%d bytes: shorter than the %d-byte header", len(frame), HeaderBytes)
	}
	h := frame[:HeaderBytes]
	if size := FrameSize(h); int64(size) != int64(len(frame)) {
		return Forward{}, invalid("size field %d does not match the %d-byte frame", size, len(frame))
	}
	kind := ForwardKind(h[offCommand])
	if !knownForward(kind) {
		return Forward{}, invalid("command %d is not a forward frame", h[offCommand])
	}
	if getU128(h[offCluster:]) != c.cluster {
		return Forward{}, invalid("%s: cluster id mismatch", kind)
	}
	sum, err := getWide(h[offChecksum:], "checksum")
	if err != nil {
		return Forward{}, err
	}
	if sum != frameChecksum(h) {
		return Forward{}, invalid("%s: header checksum mismatch", kind)
	}
	if len(frame) != HeaderBytes {
		return Forward{}, invalid("%s: header-only frame carries %d body bytes", kind, len(frame)-HeaderBytes)
	}
	f := Forward{Kind: kind, From: h[offReplica], View: le.Uint32(h[offView:])}
	switch kind {
	case ForwardRegister:
		f.Client = getU128(h[offFwdClient:])
		f.Nonce = getU128(h[offFwdNonce:])
		f.UserID = le.Uint32(h[offFwdUserID:])
	case ForwardRegisterResult:
		f.Nonce = getU128(h[offFwdResNonce:])
		f.Client = getU128(h[offFwdResClient:])
		f.Epoch = le.Uint64(h[offFwdEpoch:])
		f.Watermark = le.Uint64(h[offFwdWatermark:])
		f.Outcome = h[offFwdOutcome]
	case ForwardLogout:
		f.Client = getU128(h[offFwdClient:])
		f.Nonce = getU128(h[offFwdNonce:])
		f.Session = le.Uint64(h[offFwdSession:])
		f.Request = le.Uint64(h[offFwdRequest:])
	case ForwardLogoutResult:
		f.Nonce = getU128(h[offFwdResNonce:])
		f.Client = getU128(h[offFwdResClient:])
		f.Commit = le.Uint64(h[offFwdCommit:])
		f.Outcome = h[offFwdOutcome]
	}
	if err := checkOutcome(&f); err != nil {
		return Forward{}, err
	}
	var canon [HeaderBytes]byte
	c.putForwardHeader(canon[:], &f)
	if i := canonicalDiff(canon[:], h); i >= 0 {
		return Forward{}, invalid("%s: header byte %d is not canonical (reserved or malformed field)", kind, i)
	}
	return f, nil
}
