package httpapi

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
)

// messageID is a message id as the wire carries it (16 bytes, a
// little-endian u128, as the Rust SDK writes it). JSON: an exact u128
// number out; a number, a decimal string or a UUID (32 hex digits, dashes
// allowed) in.
type messageID [16]byte

var u128Max = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

func (m messageID) big() *big.Int {
	be := make([]byte, 16)
	for i := range 16 {
		be[i] = m[15-i]
	}
	return new(big.Int).SetBytes(be)
}

func idFromBig(v *big.Int) messageID {
	var m messageID
	be := v.FillBytes(make([]byte, 16))
	for i := range 16 {
		m[i] = be[15-i]
	}
	return m
}

func (m messageID) isZero() bool { return m == messageID{} }

func (m messageID) MarshalJSON() ([]byte, error) { return []byte(m.big().String()), nil }

var errMessageID = errors.New("message id must be a u64 number, a decimal u128 string or a UUID string")

func (m *messageID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return errMessageID
		}
		id, ok := parseMessageID(s)
		if !ok {
			return errMessageID
		}
		*m = id
		return nil
	}
	// A JSON number must fit u64 (spec §8.1).
	var n uint64
	if err := json.Unmarshal(b, &n); err != nil {
		return errMessageID
	}
	*m = messageID{}
	binary.LittleEndian.PutUint64(m[:8], n)
	return nil
}

// parseMessageID reads a decimal u128 or a UUID (its 128 bits read big-
// endian, as Uuid::as_u128).
func parseMessageID(s string) (messageID, bool) {
	if v, ok := new(big.Int).SetString(s, 10); ok && len(s) <= 39 && v.Sign() >= 0 && v.Cmp(u128Max) <= 0 {
		return idFromBig(v), true
	}
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 {
		return messageID{}, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return messageID{}, false
	}
	return idFromBig(new(big.Int).SetBytes(raw)), true
}

// randomMessageID is the id the server assigns to a message sent with none.
func randomMessageID() (messageID, error) {
	var m messageID
	_, err := rand.Read(m[:])
	return m, err
}
