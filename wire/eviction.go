package wire

import (
	"encoding/binary"
	"fmt"
)

const (
	evictOffClient     = 128
	evictOffVersion    = 144
	evictOffVersionMin = 148
	evictOffReason     = 255
)

// EvictionReason is the byte at offset 255 of an Eviction frame (§2.10). An eviction ends the session.
type EvictionReason uint8

const (
	EvictReserved                EvictionReason = 0
	EvictNoSession               EvictionReason = 1
	EvictClientReleaseTooLow     EvictionReason = 2
	EvictClientReleaseTooHigh    EvictionReason = 3
	EvictInvalidRequestOperation EvictionReason = 4
	EvictInvalidRequestBody      EvictionReason = 5
	EvictInvalidRequestBodySize  EvictionReason = 6
	EvictSessionTooLow           EvictionReason = 7
	EvictSessionReleaseMismatch  EvictionReason = 8
	EvictInvalidCredentials      EvictionReason = 9
	EvictInvalidToken            EvictionReason = 10
	EvictUserInactive            EvictionReason = 11
	EvictSessionError            EvictionReason = 12
	EvictStaleClient             EvictionReason = 13
	EvictIncompatibleProtocol    EvictionReason = 14
	EvictMalformedLogin          EvictionReason = 15
)

var evictionReasonNames = [...]string{
	"Reserved", "NoSession", "ClientReleaseTooLow", "ClientReleaseTooHigh", "InvalidRequestOperation",
	"InvalidRequestBody", "InvalidRequestBodySize", "SessionTooLow", "SessionReleaseMismatch",
	"InvalidCredentials", "InvalidToken", "UserInactive", "SessionError", "StaleClient",
	"IncompatibleProtocol", "MalformedLogin",
}

func (r EvictionReason) String() string {
	if int(r) < len(evictionReasonNames) {
		return evictionReasonNames[r]
	}
	return fmt.Sprintf("EvictionReason(%d)", uint8(r))
}

// Eviction is a decoded Eviction frame (§1.4).
type Eviction struct {
	Client           Uint128
	ServerVersion    uint32 // packed; set only for IncompatibleProtocol
	ServerVersionMin uint32 // packed; set only for IncompatibleProtocol
	Reason           EvictionReason
}

// ErrorCode maps the eviction to the error code the SDKs surface (§2.10; Go behaviour for unknown
// reasons: InvalidCommand).
func (e Eviction) ErrorCode() ErrorCode {
	switch e.Reason {
	case EvictNoSession, EvictSessionTooLow, EvictSessionReleaseMismatch, EvictUserInactive, EvictSessionError:
		return ErrUnauthenticated
	case EvictInvalidCredentials:
		return ErrInvalidCredentials
	case EvictInvalidToken:
		return ErrInvalidPersonalAccessToken
	case EvictStaleClient:
		return ErrStaleClient
	case EvictIncompatibleProtocol:
		if e.ServerVersionMin != 0 && e.ServerVersion >= e.ServerVersionMin {
			return ErrIncompatibleProtocolVersion
		}
		return ErrUnauthenticated
	case EvictMalformedLogin:
		return ErrInvalidFormat
	}
	return ErrInvalidCommand
}

// EncodeEviction builds a header-only Eviction frame. serverVersion/serverVersionMin belong to reason
// IncompatibleProtocol; they are written as zero for every other reason.
func EncodeEviction(client Uint128, reason EvictionReason, serverVersion, serverVersionMin uint32) [HeaderSize]byte {
	var f [HeaderSize]byte
	binary.LittleEndian.PutUint32(f[offsetSize:], HeaderSize)
	f[offsetCommand] = byte(CommandEviction)
	putUint128(f[evictOffClient:], client)
	if reason == EvictIncompatibleProtocol {
		binary.LittleEndian.PutUint32(f[evictOffVersion:], serverVersion)
		binary.LittleEndian.PutUint32(f[evictOffVersionMin:], serverVersionMin)
	}
	f[evictOffReason] = byte(reason)
	return f
}

// DecodeEviction decodes an Eviction header. Unknown reason bytes are returned as-is (ErrorCode maps
// them to InvalidCommand); the frame must be header-only.
func DecodeEviction(b []byte) (Eviction, error) {
	if len(b) < HeaderSize {
		return Eviction{}, headerErr("length", "%d bytes, need %d", len(b), HeaderSize)
	}
	if cmd := Command(b[offsetCommand]); cmd != CommandEviction {
		return Eviction{}, headerErr("command", "byte %d is not Eviction (13)", uint8(cmd))
	}
	if size := FrameSize(b); size != HeaderSize {
		return Eviction{}, headerErr("size", "eviction frame must be %d bytes, got %d", HeaderSize, size)
	}
	return Eviction{
		Client:           getUint128(b[evictOffClient:]),
		ServerVersion:    binary.LittleEndian.Uint32(b[evictOffVersion:]),
		ServerVersionMin: binary.LittleEndian.Uint32(b[evictOffVersionMin:]),
		Reason:           EvictionReason(b[evictOffReason]),
	}, nil
}
