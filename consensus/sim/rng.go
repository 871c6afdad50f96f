package sim

import (
	"math"
	"math/rand/v2"
)

// rng is the world's single source of randomness. Every choice the
// simulator makes derives from it, in a fixed call order, so a seed
// replays the same run bit for bit.
type rng struct {
	r *rand.Rand
}

func newRNG(seed uint64) *rng {
	return &rng{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// chance reports true with probability p (p <= 0 never, p >= 1 always).
func (g *rng) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	if p >= 1 {
		return true
	}
	return g.r.Float64() < p
}

// intn returns a uniform int in [0, n); n <= 0 yields 0.
func (g *rng) intn(n int) int {
	if n <= 0 {
		return 0
	}
	return g.r.IntN(n)
}

// between returns a uniform int in [lo, hi].
func (g *rng) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + g.r.IntN(hi-lo+1)
}

// expTicks draws an exponentially distributed tick count with the given
// mean, capped at capTicks so one unlucky draw cannot stall a run.
func (g *rng) expTicks(mean float64, capTicks int) int {
	if mean <= 0 {
		return 0
	}
	v := g.r.ExpFloat64() * mean
	if v > float64(capTicks) {
		return capTicks
	}
	return int(math.Round(v))
}

// uint64 returns 64 random bits.
func (g *rng) uint64() uint64 { return g.r.Uint64() }

// pick returns one element index of a weight table (weights >= 0).
func (g *rng) pick(weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	if total <= 0 {
		return 0
	}
	x := g.r.IntN(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}
