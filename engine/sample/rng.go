package sample

import "math/bits"

// RNG is a deterministic random stream: xoshiro256** (Blackman & Vigna,
// 2018) with its 256-bit state seeded from one uint64 by splitmix64, as the
// authors recommend. Each sequence gets its own RNG, so its samples depend on
// its seed alone. The zero value is not usable; call NewRNG.
type RNG struct {
	s [4]uint64
}

// NewRNG returns the stream for seed. Different seeds give unrelated streams
// (splitmix64 scatters nearby seeds), and the state is never all zero.
func NewRNG(seed uint64) *RNG {
	r := &RNG{}
	x := seed
	for i := range r.s {
		// splitmix64: x += golden gamma, then a 64-bit finaliser.
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		r.s[i] = z ^ (z >> 31)
	}
	return r
}

// Uint64 returns the next 64 random bits.
func (r *RNG) Uint64() uint64 {
	s := &r.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

// Float64 returns a uniform float64 in [0, 1): the top 53 bits of one
// Uint64 draw times 2⁻⁵³.
func (r *RNG) Float64() float64 {
	return float64(r.Uint64()>>11) * 0x1p-53
}

// Float32 returns a uniform float32 in [0, 1): the top 24 bits of one
// Uint64 draw times 2⁻²⁴.
func (r *RNG) Float32() float32 {
	return float32(r.Uint64()>>40) * 0x1p-24
}
