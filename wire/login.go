package wire

import "fmt"

// ClientContextBytesMax bounds a Register body's client_context (a Str32
// the SDKs send empty). Longer contexts are refused (MalformedLogin), and
// the bound is part of PreLoginFrameBytesMax.
const ClientContextBytesMax = 1024

// PreLoginFrameBytesMax is the largest frame a connection that has not
// logged in can need: before login the server answers only Ping (empty
// body), Logout (empty body) and Register, and the largest Register is the
// password shape at every wire maximum:
//
//	header                           256
//	protocol_version u32               4
//	sdk_name Name8                 1+255
//	sdk_version Name8              1+255
//	username Name8                 1+255
//	password [len u8][bytes]       1+255
//	client_context Str32   4+ClientContextBytesMax (1024)
//	                               = 2312 bytes
//
// (the token shape, [len u8][token] with a token of at most 255 bytes, is
// smaller). The transport closes an unauthenticated connection that
// declares a larger frame before reading its body.
const PreLoginFrameBytesMax = HeaderSize + 4 + 2*(1+bytes8Max) + (1 + bytes8Max) + (1 + bytes8Max) + 4 + ClientContextBytesMax

// bytes8Max is the longest Name8 or [len u8] field.
const bytes8Max = 255

// ClientVersionInfo is the prefix of both Register bodies (§2.3).
type ClientVersionInfo struct {
	ProtocolVersion uint32 // packed, see PackVersion
	SDKName         string // Name8, e.g. "go-sdk"
	SDKVersion      string // Name8
}

func (v ClientVersionInfo) append(b []byte) []byte {
	b = appendU32(b, v.ProtocolVersion)
	b = appendName8(b, v.SDKName)
	return appendName8(b, v.SDKVersion)
}

func (v ClientVersionInfo) validate() error {
	if err := checkName8("sdk_name", v.SDKName); err != nil {
		return err
	}
	return checkName8("sdk_version", v.SDKVersion)
}

func (d *decoder) clientVersion() ClientVersionInfo {
	return ClientVersionInfo{
		ProtocolVersion: d.u32("protocol_version"),
		SDKName:         d.name8("sdk_name"),
		SDKVersion:      d.name8("sdk_version"),
	}
}

// DecodeClientVersionInfo decodes the common Register prefix and returns the bytes consumed. A failure
// here is what the server answers with Eviction 15 MalformedLogin.
func DecodeClientVersionInfo(b []byte) (ClientVersionInfo, int, error) {
	d := newDecoder("Register", b)
	v := d.clientVersion()
	return v, d.off, d.err()
}

// RegisterKind tells the two Register body shapes apart.
type RegisterKind uint8

const (
	RegisterWithPassword RegisterKind = 1 // code 40 LoginRegister
	RegisterWithToken    RegisterKind = 2 // code 45 LoginRegisterWithPat
)

// RegisterRequest is a decoded Register body: LoginRegister (username + password) or LoginRegisterWithPat
// (token). ClientContext is sent empty by the SDKs.
type RegisterRequest struct {
	Kind          RegisterKind
	Version       ClientVersionInfo
	Username      string // RegisterWithPassword
	Password      string // RegisterWithPassword; may be empty on the wire
	Token         string // RegisterWithToken
	ClientContext string
}

// Encode returns the body for the request's kind.
func (r RegisterRequest) Encode() ([]byte, error) {
	if err := r.Version.validate(); err != nil {
		return nil, fmt.Errorf("register body: %w", err)
	}
	b := r.Version.append(nil)
	switch r.Kind {
	case RegisterWithPassword:
		if err := checkName8("username", r.Username); err != nil {
			return nil, fmt.Errorf("register body: %w", err)
		}
		if err := checkBytes8("password", []byte(r.Password)); err != nil {
			return nil, fmt.Errorf("register body: %w", err)
		}
		b = appendName8(b, r.Username)
		b = appendBytes8(b, []byte(r.Password))
	case RegisterWithToken:
		if err := checkBytes8("token", []byte(r.Token)); err != nil {
			return nil, fmt.Errorf("register body: %w", err)
		}
		b = appendBytes8(b, []byte(r.Token))
	default:
		return nil, fmt.Errorf("register body: kind %d is not password (1) or token (2)", r.Kind)
	}
	return appendStr32(b, r.ClientContext), nil
}

func (d *decoder) clientContext() string {
	s := d.str32("client_context")
	if len(s) > ClientContextBytesMax {
		d.fail("client_context", "%d bytes exceeds the %d allowed", len(s), ClientContextBytesMax)
	}
	return s
}

// RegisterShapes is a Register body read both ways, as upstream's server reads it (§2.3): after the
// common prefix, the tail is tried as the password shape and as the token shape, each reading what it
// needs and ignoring bytes after client_context. Password and Token are nil for a shape the tail does
// not parse as. The server tries the password first; when its credentials are rejected it tries the
// token (docs/wire.md, "Trailing bytes").
type RegisterShapes struct {
	Version  ClientVersionInfo
	Password *RegisterRequest
	Token    *RegisterRequest
	// PasswordExact: the password reading consumed the whole tail, which is
	// what every SDK sends for a password login.
	PasswordExact bool
}

// DecodeRegisterShapes decodes the common prefix (a failure there is a MalformedLogin) and both body
// shapes. It fails when the prefix is malformed or the tail parses as neither shape.
func DecodeRegisterShapes(b []byte) (RegisterShapes, error) {
	version, n, err := DecodeClientVersionInfo(b)
	if err != nil {
		return RegisterShapes{}, err
	}
	tail := b[n:]
	shapes := RegisterShapes{Version: version}

	d := newDecoder("LoginRegister", tail)
	pw := RegisterRequest{Kind: RegisterWithPassword, Version: version}
	pw.Username = d.name8("username")
	pw.Password = d.utf8("password", d.bytes8("password"))
	pw.ClientContext = d.clientContext()
	exact := !d.failed() && d.remaining() == 0
	d.skipTrailing()
	pwErr := d.err()
	if pwErr == nil {
		shapes.Password = &pw
		shapes.PasswordExact = exact
	}

	d = newDecoder("LoginRegisterWithPat", tail)
	pat := RegisterRequest{Kind: RegisterWithToken, Version: version}
	pat.Token = d.utf8("token", d.bytes8("token"))
	pat.ClientContext = d.clientContext()
	d.skipTrailing()
	if d.err() == nil {
		shapes.Token = &pat
	}
	if shapes.Password == nil && shapes.Token == nil {
		return RegisterShapes{}, fmt.Errorf("register body matches neither shape: password shape: %v; token shape: %w", pwErr, d.err())
	}
	return shapes, nil
}

// DecodeRegister decodes a Register body as one request: the password shape when the tail parses as
// one, else the token shape (see DecodeRegisterShapes for how the server uses both readings).
func DecodeRegister(b []byte) (RegisterRequest, error) {
	shapes, err := DecodeRegisterShapes(b)
	if err != nil {
		return RegisterRequest{}, err
	}
	if shapes.Password != nil {
		return *shapes.Password, nil
	}
	return *shapes.Token, nil
}

// RegisterReply is the payload of a successful Register reply (after the result section, §2.4).
type RegisterReply struct {
	UserID          uint32
	Session         uint64
	ProtocolVersion uint32 // server's packed protocol version
	ServerVersion   string // Name8
}

// Append encodes the payload (without the result section).
func (r RegisterReply) Append(b []byte) []byte {
	b = appendU32(b, r.UserID)
	b = appendU64(b, r.Session)
	b = appendU32(b, r.ProtocolVersion)
	return appendName8(b, r.ServerVersion)
}

// DecodeRegisterReply decodes the payload that follows the result section.
func DecodeRegisterReply(b []byte) (RegisterReply, error) {
	d := newDecoder("RegisterReply", b)
	r := RegisterReply{
		UserID:          d.u32("user_id"),
		Session:         d.u64("session"),
		ProtocolVersion: d.u32("server_protocol_version"),
		ServerVersion:   d.name8("server_version"),
	}
	d.end()
	if d.err() == nil && r.Session == 0 {
		d.fail("session", "session fence must be non-zero")
	}
	return r, d.err()
}
