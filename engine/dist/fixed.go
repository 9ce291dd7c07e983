package dist

import "math"

// Fixed accumulates float32 vectors exactly. Each value v is rounded once
// to a multiple of 2⁻⁶⁴ (to nearest, half away from zero) and split into
// three limbs of 32 bits,
//
//	v ≈ (hi·2⁶⁴ + mid·2³² + lo) · 2⁻⁶⁴
//
// each kept in an int64, so that up to 2³⁰ vectors add without overflow
// and integer addition makes the sum independent of the order of the
// vectors and of how they were spread over ranks. Values below 2⁻⁶⁵ in
// magnitude round to zero (far under what an AdamW step with ε 1e-8 can
// tell from zero); NaN, ±Inf and magnitudes of 2³¹ or more are counted in
// Bad and make the sum NaN.
type Fixed struct {
	// Limbs holds hi, mid, lo of element i at 3i, 3i+1, 3i+2 and, last,
	// the count of values that could not be represented: the buffer
	// Comm.AllReduceInt64 sums.
	Limbs []int64
}

// NewFixed returns a zero accumulator of n values.
func NewFixed(n int) *Fixed { return &Fixed{Limbs: make([]int64, 3*n+1)} }

const (
	two32 = 1 << 32
	two64 = float64(1<<32) * float64(1<<32)
)

// Add adds x (as many values as the accumulator holds) to the sum.
func (f *Fixed) Add(x []float32) {
	l := f.Limbs
	bad := int64(0)
	for i, v := range x {
		hi, mid, lo, ok := limbs(v)
		if !ok {
			bad++
			continue
		}
		l[3*i] += hi
		l[3*i+1] += mid
		l[3*i+2] += lo
	}
	l[len(l)-1] += bad
}

// limbs splits round(|v|·2⁶⁴) into 32-bit limbs, negated for a negative
// v, from v's bits: v = ±m·2ᵉ with a 24-bit integer m, so |v|·2⁶⁴ is m
// shifted left by e+64 (right, rounding half up, when that is negative).
// ok is false for NaN, ±Inf and |v| ≥ 2³¹.
func limbs(v float32) (hi, mid, lo int64, ok bool) {
	b := math.Float32bits(v)
	exp := int(b >> 23 & 0xff)
	if exp >= 127+31 { // |v| ≥ 2³¹, Inf, NaN
		return 0, 0, 0, false
	}
	m := uint64(b & (1<<23 - 1))
	e := -149 // subnormal: m·2⁻¹⁴⁹
	if exp > 0 {
		m |= 1 << 23
		e = exp - 150
	}
	var xl, xh uint64 // |v|·2⁶⁴ = xh·2⁶⁴ + xl
	switch shift := e + 64; {
	case shift < -25:
		return 0, 0, 0, true
	case shift < 0:
		xl = (m + 1<<(-shift-1)) >> -shift
	case shift == 0:
		xl = m
	case shift < 64:
		xl, xh = m<<shift, m>>(64-shift)
	default:
		xh = m << (shift - 64)
	}
	hi, mid, lo = int64(xh), int64(xl>>32), int64(xl&(1<<32-1))
	if b>>31 != 0 {
		hi, mid, lo = -hi, -mid, -lo
	}
	return hi, mid, lo, true
}

// Bad is the number of values added that could not be represented.
func (f *Fixed) Bad() int64 { return f.Limbs[len(f.Limbs)-1] }

// Floats writes the sum into out, rounded to float32 (NaN everywhere if
// any value was bad). The same limbs give the same floats.
func (f *Fixed) Floats(out []float32) {
	l := f.Limbs
	if f.Bad() != 0 {
		for i := range out {
			out[i] = float32(math.NaN())
		}
		return
	}
	for i := range out {
		hi, mid, lo := l[3*i], l[3*i+1], l[3*i+2]
		// Carry lo and mid into a normal form (0 ≤ lo, mid < 2³²) so the
		// value is hi·2⁶⁴ + mid·2³² + lo with hi carrying the sign; then
		// hi·2⁶⁴ + (mid·2³² + lo) is a float64 sum of two exact terms
		// (mid·2³² + lo < 2⁶⁴ needs 64 bits: round it once, then add).
		mid += lo >> 32
		lo &= two32 - 1
		hi += mid >> 32
		mid &= two32 - 1
		low := float64(uint64(mid)<<32 | uint64(lo))
		out[i] = float32((float64(hi)*two64 + low) / two64)
	}
}

// Reset sets the sum to zero.
func (f *Fixed) Reset() { clear(f.Limbs) }
