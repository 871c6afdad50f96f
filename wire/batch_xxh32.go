package wire

import (
	"encoding/binary"
	"math/bits"
)

// XXH32 constants (the xxHash specification, 32-bit variant).
const (
	xxh32Prime1 uint32 = 2654435761
	xxh32Prime2 uint32 = 2246822519
	xxh32Prime3 uint32 = 3266489917
	xxh32Prime4 uint32 = 668265263
	xxh32Prime5 uint32 = 374761393
)

// XXH32 is the 32-bit xxHash of data with the given seed. Iggy places keyed messages with
// XXH32(key, seed 0) % partitions_count (the Rust server and SDK through twox-hash, the Go SDK through
// its own implementation) and keys named single consumers by XXH32(name), so this must be bit-exact.
func XXH32(data []byte, seed uint32) uint32 {
	n := len(data)
	var acc uint32
	if n >= 16 {
		v1 := seed + xxh32Prime1 + xxh32Prime2
		v2 := seed + xxh32Prime2
		v3 := seed
		v4 := seed - xxh32Prime1
		for len(data) >= 16 {
			v1 = xxh32Round(v1, binary.LittleEndian.Uint32(data[0:]))
			v2 = xxh32Round(v2, binary.LittleEndian.Uint32(data[4:]))
			v3 = xxh32Round(v3, binary.LittleEndian.Uint32(data[8:]))
			v4 = xxh32Round(v4, binary.LittleEndian.Uint32(data[12:]))
			data = data[16:]
		}
		acc = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) +
			bits.RotateLeft32(v4, 18)
	} else {
		acc = seed + xxh32Prime5
	}
	acc += uint32(n)
	for len(data) >= 4 {
		acc += binary.LittleEndian.Uint32(data) * xxh32Prime3
		acc = bits.RotateLeft32(acc, 17) * xxh32Prime4
		data = data[4:]
	}
	for _, c := range data {
		acc += uint32(c) * xxh32Prime5
		acc = bits.RotateLeft32(acc, 11) * xxh32Prime1
	}
	acc ^= acc >> 15
	acc *= xxh32Prime2
	acc ^= acc >> 13
	acc *= xxh32Prime3
	acc ^= acc >> 16
	return acc
}

func xxh32Round(acc, lane uint32) uint32 {
	return bits.RotateLeft32(acc+lane*xxh32Prime2, 13) * xxh32Prime1
}
