package consensus

import "math/bits"

// prng is xoshiro256+ seeded through splitmix64: small, fast and
// deterministic, so retransmit jitter replays exactly under a seed.
type prng struct{ s [4]uint64 }

func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func newPRNG(seed uint64) prng {
	var p prng
	for i := range p.s {
		p.s[i] = splitmix64(&seed)
	}
	return p
}

func (p *prng) next() uint64 {
	result := p.s[0] + p.s[3]
	t := p.s[1] << 17
	p.s[2] ^= p.s[0]
	p.s[3] ^= p.s[1]
	p.s[1] ^= p.s[2]
	p.s[0] ^= p.s[3]
	p.s[2] ^= t
	p.s[3] = bits.RotateLeft64(p.s[3], 45)
	return result
}

// uniform returns a value in [0, bound] inclusive.
func (p *prng) uniform(bound uint64) uint64 {
	if bound == ^uint64(0) {
		return p.next()
	}
	hi, _ := bits.Mul64(p.next(), bound+1)
	return hi
}

// nonce returns a non-zero 128-bit value for repair and transfer sessions.
func (p *prng) nonce() Uint128 {
	n := Uint128{Lo: p.next(), Hi: p.next()}
	if n.IsZero() {
		n.Lo = 1
	}
	return n
}
