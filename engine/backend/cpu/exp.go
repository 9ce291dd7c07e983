package cpu

import "math"

// expBlock is the length of the stack buffers the kernels fill before
// calling expInPlace, so exponentials run in tight loops without allocation.
const expBlock = 256

// expInPlace replaces each x[i] by e^x[i] in float32 arithmetic, within 2
// ulp of the correctly rounded result. The softmax, SwiGLU and log-softmax
// kernels spend most of their time here; a loop over a slice (rather than a
// call per element) lets the CPU overlap the independent polynomial chains.
//
// Cephes' expf: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-6
// polynomial, 2ⁿ put in the exponent bits. Outside the range where 2ⁿ is a
// normal float32 it falls back to math.Exp (overflow to +Inf, gradual
// underflow to 0, NaN stays NaN).
func expInPlace(x []float32) {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
		// Adding 1.5·2²³ rounds to an integer held in the mantissa's low bits.
		magic = 12582912
	)
	for i, v := range x {
		if !(v >= -87.3 && v <= 88.3) {
			x[i] = float32(math.Exp(float64(v)))
			continue
		}
		t := v*log2e + magic
		n := t - magic
		k := int32(math.Float32bits(t) - math.Float32bits(magic))
		r := v - n*ln2hi - n*ln2lo
		// e^r ≈ 1 + r + r²·q(r), q evaluated by Estrin's scheme (three
		// independent pairs) for a shorter dependency chain than Horner's.
		r2 := r * r
		q := (5.0000001201e-1 + 1.6666665459e-1*r) + r2*(4.1665795894e-2+8.3334519073e-3*r) + r2*r2*(1.3981999507e-3+1.9875691500e-4*r)
		p := 1 + r + r2*q
		x[i] = p * math.Float32frombits(uint32(k+127)<<23)
	}
}
