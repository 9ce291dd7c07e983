package cpu

import "math"

// exp32 is e^x in float32 arithmetic, within 2 ulp of the correctly rounded
// result: the softmax, SwiGLU and log-softmax kernels call it once per
// element, where math.Exp's float64 path was the largest cost after the
// matrix products. Cephes' expf: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a
// degree-6 polynomial, 2ⁿ put in the exponent bits. Outside the range where
// 2ⁿ is a normal float32 it falls back to math.Exp (overflow to +Inf,
// gradual underflow to 0, NaN).
func exp32(x float32) float32 {
	if !(x >= -87.3 && x <= 88.3) {
		return float32(math.Exp(float64(x)))
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	// Round x·log2e to the nearest integer by adding 1.5·2²³: the sum's
	// mantissa then holds the integer in its low bits.
	const magic = 12582912
	t := x*log2e + magic
	n := t - magic
	k := int32(math.Float32bits(t) - math.Float32bits(magic))
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(k+127)<<23)
}
