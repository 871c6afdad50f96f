package wire

import (
	"fmt"
	"unicode/utf8"
)

// ValueKind is the kind byte of a TLV field (user headers and options, §4.1).
type ValueKind uint8

const (
	KindRaw     ValueKind = 1
	KindString  ValueKind = 2
	KindBool    ValueKind = 3
	KindInt8    ValueKind = 4
	KindInt16   ValueKind = 5
	KindInt32   ValueKind = 6
	KindInt64   ValueKind = 7
	KindInt128  ValueKind = 8
	KindUint8   ValueKind = 9
	KindUint16  ValueKind = 10
	KindUint32  ValueKind = 11
	KindUint64  ValueKind = 12
	KindUint128 ValueKind = 13
	KindFloat32 ValueKind = 14
	KindFloat64 ValueKind = 15
)

var valueKindNames = [...]string{"", "raw", "string", "bool", "int8", "int16", "int32", "int64", "int128",
	"uint8", "uint16", "uint32", "uint64", "uint128", "float32", "float64"}

func (k ValueKind) String() string {
	if k >= KindRaw && k <= KindFloat64 {
		return valueKindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// FixedSize returns the value size a fixed-width kind requires, or 0 for Raw and String.
func (k ValueKind) FixedSize() int {
	switch k {
	case KindBool, KindInt8, KindUint8:
		return 1
	case KindInt16, KindUint16:
		return 2
	case KindInt32, KindUint32, KindFloat32:
		return 4
	case KindInt64, KindUint64, KindFloat64:
		return 8
	case KindInt128, KindUint128:
		return 16
	}
	return 0
}

// TLV limits (§4.1).
const (
	tlvFieldBytesMax  = 255
	tlvFieldHeader    = 5 // kind u8 + length u32
	OptionsPairsMax   = 1024
	OptionsBytesMax   = 100_000
	UserHeadersMaxLen = 100 * 1024
)

// TLVPair is one key/value pair of a TLV block. Key and Value alias the decoded buffer.
type TLVPair struct {
	KeyKind   ValueKind
	Key       []byte
	ValueKind ValueKind
	Value     []byte
}

// Append encodes the pair: [key_kind][key_len u32][key][value_kind][value_len u32][value].
func (p TLVPair) Append(b []byte) []byte {
	b = append(b, byte(p.KeyKind))
	b = appendU32(b, uint32(len(p.Key)))
	b = append(b, p.Key...)
	b = append(b, byte(p.ValueKind))
	b = appendU32(b, uint32(len(p.Value)))
	return append(b, p.Value...)
}

// tlvField reads one [kind u8][len u32][bytes] field. Kinds must be 1..15, lengths 1..255, and
// fixed-width kinds must have their exact size.
func (d *decoder) tlvField(field string) (ValueKind, []byte) {
	kind := ValueKind(d.u8(field))
	n := d.u32(field)
	if d.failed() {
		return 0, nil
	}
	// Structural checks first, as upstream's validate_user_headers: kind 0 is reserved and a length
	// outside 1..255 is malformed (InvalidCommand); only a well-framed field with an unknown kind is
	// InvalidHeaderKind.
	if kind == 0 {
		d.fail(field+".kind", "kind 0 is reserved")
		return 0, nil
	}
	if n == 0 || n > tlvFieldBytesMax {
		d.fail(field+".length", "length %d, must be 1..%d", n, tlvFieldBytesMax)
		return 0, nil
	}
	if kind < KindRaw || kind > KindFloat64 {
		d.failWithCode(ErrInvalidHeaderKind, field+".kind", "kind %d is not 1..15", kind)
		return 0, nil
	}
	if fixed := kind.FixedSize(); fixed != 0 && int(n) != fixed {
		d.fail(field+".length", "%s value must be %d bytes, got %d", kind, fixed, n)
		return 0, nil
	}
	return kind, d.take(field, int(n))
}

// tlvBlock decodes a whole TLV block (b must end exactly at the block's end).
func (d *decoder) tlvBlock(field string, pairsMax int) []TLVPair {
	var pairs []TLVPair
	keyField, valueField := field+".key", field+".value"
	for i := 0; d.remaining() > 0 && !d.failed(); i++ {
		if i >= pairsMax {
			d.failWithCode(ErrOptionsBlockTooLarge, field, "more than %d pairs", pairsMax)
			return nil
		}
		kk, k := d.tlvField(keyField)
		if !d.failed() && d.remaining() == 0 {
			d.fail(valueField, "key without a value (odd number of TLV fields)")
		}
		vk, v := d.tlvField(valueField)
		d.annotate(i)
		pairs = append(pairs, TLVPair{KeyKind: kk, Key: k, ValueKind: vk, Value: v})
	}
	if d.failed() {
		return nil
	}
	return pairs
}

// DecodeUserHeaders decodes a user-header TLV block (≤ 100 KiB) strictly: kinds 1..15, lengths 1..255,
// exact sizes for fixed-width kinds, whole pairs.
func DecodeUserHeaders(b []byte) ([]TLVPair, error) {
	if len(b) > UserHeadersMaxLen {
		return nil, &BodyError{Body: "UserHeaders", Field: "user_headers", Reason: fmt.Sprintf("%d bytes exceeds %d", len(b), UserHeadersMaxLen), Code: ErrTooBigUserHeaders}
	}
	d := newDecoder("UserHeaders", b)
	pairs := d.tlvBlock("user_headers", len(b)/(2*(tlvFieldHeader+1))+1)
	return pairs, d.err()
}

// Option is one entry of an options block: a string key and a typed value.
type Option struct {
	Key   string
	Kind  ValueKind
	Value []byte
}

// Options is an ordered options block.
type Options []Option

// Get returns the option with the given key.
func (o Options) Get(key string) (Option, bool) {
	for _, opt := range o {
		if opt.Key == key {
			return opt, true
		}
	}
	return Option{}, false
}

// Append encodes the block without a length prefix (the request form: the raw tail of a body).
func (o Options) Append(b []byte) []byte {
	for _, opt := range o {
		b = TLVPair{KeyKind: KindString, Key: []byte(opt.Key), ValueKind: opt.Kind, Value: opt.Value}.Append(b)
	}
	return b
}

// AppendPrefixed encodes the block with its u32 byte length first (the response form).
func (o Options) AppendPrefixed(b []byte) []byte {
	start := len(b)
	b = appendU32(b, 0)
	b = o.Append(b)
	putU32At(b, start, uint32(len(b)-start-4))
	return b
}

// Validate checks the options rules before encoding: string keys 1..255 bytes of UTF-8, unique,
// values 1..255 bytes with exact fixed-width sizes, ≤ 1024 pairs, ≤ 100 000 encoded bytes.
func (o Options) Validate() error {
	_, err := DecodeOptions(o.Append(nil))
	return err
}

// DecodeOptions decodes an options block (without its length prefix) under the options rules: TLV
// structure as DecodeUserHeaders, key kind String, UTF-8 keys, unique keys, ≤ 1024 pairs and
// ≤ 100 000 bytes (OptionsBlockTooLarge beyond either).
func DecodeOptions(b []byte) (Options, error) {
	d := newDecoder("Options", b)
	opts := d.options("options", b)
	return opts, d.err()
}

// options consumes the given block bytes (which must be the decoder's remaining input or a sub-decoder).
func (d *decoder) options(field string, block []byte) Options {
	if len(block) > OptionsBytesMax {
		d.failWithCode(ErrOptionsBlockTooLarge, field, "%d bytes exceeds %d", len(block), OptionsBytesMax)
		return nil
	}
	pairs := d.tlvBlock(field, OptionsPairsMax)
	if d.failed() || len(pairs) == 0 {
		return nil
	}
	opts := make(Options, 0, len(pairs))
	seen := make(map[string]struct{}, len(pairs))
	name := field + ".key"
	for i, p := range pairs {
		if p.KeyKind != KindString {
			d.fail(name, "option key kind %s, must be string", p.KeyKind)
			d.annotate(i)
			return nil
		}
		if !utf8.Valid(p.Key) {
			d.fail(name, "option key is not valid UTF-8")
			d.annotate(i)
			return nil
		}
		key := string(p.Key)
		if _, dup := seen[key]; dup {
			d.fail(name, "duplicate option key %q", key)
			d.annotate(i)
			return nil
		}
		seen[key] = struct{}{}
		opts = append(opts, Option{Key: key, Kind: p.ValueKind, Value: p.Value})
	}
	return opts
}

// optionsTail decodes the rest of the body as a request options block.
func (d *decoder) optionsTail(field string) Options {
	if d.failed() {
		return nil
	}
	rest := d.buf[d.off:]
	sub := &decoder{body: d.body, buf: rest}
	opts := sub.options(field, rest)
	if sub.failure != nil {
		sub.failure.Offset += d.off
		d.failure = sub.failure
		return nil
	}
	d.off = len(d.buf)
	return opts
}

// optionsPrefixed decodes a response options block: [len u32][TLV bytes].
func (d *decoder) optionsPrefixed(field string) Options {
	n := d.u32(field)
	if d.failed() {
		return nil
	}
	if uint64(n) > uint64(d.remaining()) {
		d.fail(field, "block length %d exceeds the %d bytes left", n, d.remaining())
		return nil
	}
	start := d.off
	block := d.take(field, int(n))
	sub := &decoder{body: d.body, buf: block}
	opts := sub.options(field, block)
	if sub.failure != nil {
		sub.failure.Offset += start
		d.failure = sub.failure
		return nil
	}
	return opts
}

func putU32At(b []byte, off int, v uint32) {
	b[off] = byte(v)
	b[off+1] = byte(v >> 8)
	b[off+2] = byte(v >> 16)
	b[off+3] = byte(v >> 24)
}
