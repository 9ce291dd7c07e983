package envs

import "math/rand"

// NewRand returns a math/rand generator for seed that is cheap to create
// (math/rand's own source spends ~10 µs seeding 607 words, more than a
// whole bandit episode). The stream is SplitMix64 (Steele, Lea and Flood
// 2014): a Weyl sequence through a 64-bit finaliser, fine for games and
// demonstrations. math/rand's derived methods (Intn, Float64, Shuffle) are
// frozen by Go's compatibility promise, so a seed gives the same episode on
// every Go version and platform.
func NewRand(seed int64) *rand.Rand { return rand.New(&splitMix{s: uint64(seed)}) }

type splitMix struct{ s uint64 }

func (r *splitMix) Uint64() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (r *splitMix) Int63() int64    { return int64(r.Uint64() >> 1) }
func (r *splitMix) Seed(seed int64) { r.s = uint64(seed) }
