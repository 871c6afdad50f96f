package main

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/lodestream/lodestream/wire"
)

// userHeadersMax bounds the -H pairs of one send (each pair is one TLV key/value).
const userHeadersMax = 1024

// kindsByName are upstream's header kind names (case-insensitive on the command line).
var kindsByName = func() map[string]wire.ValueKind {
	m := map[string]wire.ValueKind{}
	for k := wire.KindRaw; k <= wire.KindFloat64; k++ {
		m[k.String()] = k
	}
	return m
}()

// parseHeaders reads upstream's -H values: each a comma-separated list of key:kind:value, where
// the value keeps any further colons. It returns the encoded TLV block (nil when there are none).
func parseHeaders(values []string) ([]byte, error) {
	var block []byte
	seen := map[string]bool{}
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			parts := strings.SplitN(item, ":", 3)
			if len(parts) != 3 {
				return nil, usagef("header %q: use KEY:KIND:VALUE, e.g. trace:string:abc or n:uint32:7", item)
			}
			key, kindName, value := parts[0], strings.ToLower(parts[1]), parts[2]
			if len(key) == 0 || len(key) > 255 {
				return nil, usagef("header %q: the key must be 1..255 bytes", item)
			}
			if seen[key] {
				return nil, usagef("header key %q given twice", key)
			}
			seen[key] = true
			kind, ok := kindsByName[kindName]
			if !ok {
				return nil, usagef("header %q: kind %q is not one of raw, string, bool, int8..int128, uint8..uint128, float32, float64", item, parts[1])
			}
			encoded, err := encodeHeaderValue(kind, value)
			if err != nil {
				return nil, usagef("header %q: %v", item, err)
			}
			if len(seen) > userHeadersMax {
				return nil, usagef("more than %d headers", userHeadersMax)
			}
			block = wire.TLVPair{KeyKind: wire.KindString, Key: []byte(key), ValueKind: kind, Value: encoded}.Append(block)
		}
	}
	return block, nil
}

// encodeHeaderValue encodes value as kind: text for raw and string, little-endian numbers.
func encodeHeaderValue(kind wire.ValueKind, value string) ([]byte, error) {
	var out []byte
	switch kind {
	case wire.KindRaw, wire.KindString:
		out = []byte(value)
	case wire.KindBool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", value)
		}
		out = []byte{0}
		if b {
			out[0] = 1
		}
	case wire.KindFloat32:
		f, err := strconv.ParseFloat(value, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a float32", value)
		}
		out = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(f)))
	case wire.KindFloat64:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a float64", value)
		}
		out = binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))
	default:
		return encodeHeaderInt(kind, value)
	}
	if len(out) == 0 || len(out) > 255 {
		return nil, fmt.Errorf("a %s value must be 1..255 bytes", kind)
	}
	return out, nil
}

// encodeHeaderInt encodes the integer kinds, checking the range of the kind's width.
func encodeHeaderInt(kind wire.ValueKind, value string) ([]byte, error) {
	size := kind.FixedSize()
	signed := kind >= wire.KindInt8 && kind <= wire.KindInt128
	n, ok := new(big.Int).SetString(value, 10)
	if !ok {
		return nil, fmt.Errorf("%q is not a whole number", value)
	}
	bits := uint(size * 8)
	lo, hi := big.NewInt(0), new(big.Int).Lsh(big.NewInt(1), bits)
	if signed {
		lo = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), bits-1))
		hi = new(big.Int).Lsh(big.NewInt(1), bits-1)
	}
	if n.Cmp(lo) < 0 || n.Cmp(hi) >= 0 {
		return nil, fmt.Errorf("%s is out of range for %s", value, kind)
	}
	if n.Sign() < 0 {
		n.Add(n, new(big.Int).Lsh(big.NewInt(1), bits)) // two's complement
	}
	be := n.FillBytes(make([]byte, size))
	for i, j := 0, len(be)-1; i < j; i, j = i+1, j-1 {
		be[i], be[j] = be[j], be[i]
	}
	return be, nil
}

// formatHeaderValue renders a TLV value of kind for people: numbers in decimal, strings as
// text, raw bytes as text when UTF-8 or 0x-hex.
func formatHeaderValue(kind wire.ValueKind, v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if fixed := kind.FixedSize(); fixed != 0 && len(v) != fixed {
		return "0x" + hex.EncodeToString(v)
	}
	switch kind {
	case wire.KindRaw, wire.KindString:
		return payloadText(v)
	case wire.KindBool:
		return strconv.FormatBool(v[0] != 0)
	case wire.KindFloat32:
		return strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(v))), 'g', -1, 32)
	case wire.KindFloat64:
		return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(v)), 'g', -1, 64)
	}
	be := make([]byte, len(v))
	for i := range v {
		be[len(v)-1-i] = v[i]
	}
	n := new(big.Int).SetBytes(be)
	if kind >= wire.KindInt8 && kind <= wire.KindInt128 && v[len(v)-1]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(v)*8)))
	}
	return n.String()
}

// headerColumn names one header in poll output: its key and kind, as upstream's column title.
type headerColumn struct {
	key  string
	kind wire.ValueKind
}

func (h headerColumn) title() string { return fmt.Sprintf("Header: %s (%s)", h.key, h.kind) }
