package dist

import "math"

// Fixed accumulates float32 vectors exactly. Each value v is rounded once
// to the nearest multiple of 2⁻⁶⁴ and split into three limbs of 32 bits,
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
	// limit is 2³¹: the largest magnitude whose hi limb fits in 32 bits.
	limit = 1 << 31
)

// Add adds x (as many values as the accumulator holds) to the sum.
func (f *Fixed) Add(x []float32) {
	l := f.Limbs
	bad := int64(0)
	for i, v := range x {
		a := float64(v)
		if !(math.Abs(a) < limit) { // NaN too
			bad++
			continue
		}
		// s = a·2⁶⁴ is exact in float64 (a has 24 significant bits) and so
		// are the splits: each removes whole high bits of s.
		s := a * two64
		hi := math.Floor(s / two64)
		s -= hi * two64
		mid := math.Floor(s / two32)
		s -= mid * two32
		lo := math.RoundToEven(s)
		l[3*i] += int64(hi)
		l[3*i+1] += int64(mid)
		l[3*i+2] += int64(lo)
	}
	l[len(l)-1] += bad
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
