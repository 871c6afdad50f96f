// Package bus is the replica-to-replica message bus: the 256-byte-header
// frame codec for every consensus.Message kind, the PSK handshake (BLAKE3
// keyed MAC, optional TLS 1.3 with exporter binding), and the TCP bus that
// keeps one connection per replica pair with a bounded send queue per peer.
//
// Layouts and the handshake are documented in docs/bus.md; the offsets follow
// server-design §2 wherever upstream defines the message.
package bus

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// HeaderBytes is the fixed frame header size; a frame is the header followed
// by header.size - HeaderBytes body bytes.
const HeaderBytes = 256

// Offsets of the common header (server-design §2.1).
const (
	offChecksum      = 0  // u128
	offChecksumBody  = 16 // u128
	offCluster       = 32 // u128
	offSize          = 48 // u32, whole frame incl. header
	offView          = 52 // u32
	offRelease       = 56 // u32, always 0
	offCommand       = 60 // u8
	offReplica       = 61 // u8, sender replica id
	offReservedFrame = 62 // [66]u8, always zero
	offCommandFields = 128
)

// Command is the header's command byte (server-design §2.2).
type Command uint8

// Replica-plane commands. The consensus kinds share their numbers with
// consensus.MessageKind; 14–16 are the handshake; 26–29 the forward frames.
const (
	CommandPrepare                      = Command(consensus.MsgPrepare)
	CommandPrepareOk                    = Command(consensus.MsgPrepareOk)
	CommandCommit                       = Command(consensus.MsgCommit)
	CommandStartViewChange              = Command(consensus.MsgStartViewChange)
	CommandDoViewChange                 = Command(consensus.MsgDoViewChange)
	CommandStartView                    = Command(consensus.MsgStartView)
	CommandReplicaHello         Command = 14
	CommandReplicaChallenge     Command = 15
	CommandReplicaFinish        Command = 16
	CommandRequestStartView             = Command(consensus.MsgRequestStartView)
	CommandRequestPrepares              = Command(consensus.MsgRequestPrepares)
	CommandRepairPrepare                = Command(consensus.MsgRepairPrepare)
	CommandRepairDone                   = Command(consensus.MsgRepairDone)
	CommandRangeEvicted                 = Command(consensus.MsgRangeEvicted)
	CommandRequestStateTransfer         = Command(consensus.MsgRequestStateTransfer)
	CommandStateTransferTarget          = Command(consensus.MsgStateTransferTarget)
	CommandRequestStateChunk            = Command(consensus.MsgRequestStateChunk)
	CommandStateChunk                   = Command(consensus.MsgStateChunk)
	// Node-level forward frames (not consensus messages): see Forward.
	CommandForwardRegister       = Command(ForwardRegister)
	CommandForwardRegisterResult = Command(ForwardRegisterResult)
	CommandForwardLogout         = Command(ForwardLogout)
	CommandForwardLogoutResult   = Command(ForwardLogoutResult)
)

// SuffixHeadersMax bounds the DoViewChange / StartView suffix (the nack and
// present bitsets address 128 entries).
const SuffixHeadersMax = 128

// ErrInvalidFrame marks a frame that is unknown, malformed, fails its
// checksum or a validation rule. The bus logs and drops such a frame and
// keeps the connection.
var ErrInvalidFrame = errors.New("invalid replica frame")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidFrame, fmt.Sprintf(format, args...))
}

var le = binary.LittleEndian

func putU128(b []byte, v consensus.Uint128) {
	le.PutUint64(b, v.Lo)
	le.PutUint64(b[8:], v.Hi)
}

func getU128(b []byte) consensus.Uint128 {
	return consensus.Uint128{Lo: le.Uint64(b), Hi: le.Uint64(b[8:])}
}

// putWide writes a 64-bit value widened to a u128 field (high half zero).
func putWide(b []byte, v uint64) {
	le.PutUint64(b, v)
	le.PutUint64(b[8:], 0)
}

// getWide reads a u128 field that must hold a 64-bit value.
func getWide(b []byte, field string) (uint64, error) {
	if le.Uint64(b[8:]) != 0 {
		return 0, invalid("%s: high 64 bits must be zero", field)
	}
	return le.Uint64(b), nil
}

func putBool(b []byte, v bool) {
	if v {
		b[0] = 1
	} else {
		b[0] = 0
	}
}

func getBool(b byte, field string) (bool, error) {
	switch b {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, invalid("%s = %d: must be 0 or 1", field, b)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// FrameSize reads the declared total size of a frame from its header.
func FrameSize(header []byte) uint32 { return le.Uint32(header[offSize:]) }

// FrameCommand reads the command byte of a frame header.
func FrameCommand(header []byte) Command { return Command(header[offCommand]) }

// kindOf reads the command byte of a frame as a message kind.
func kindOf(frame []byte) consensus.MessageKind { return consensus.MessageKind(frame[offCommand]) }
