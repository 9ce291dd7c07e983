package cpu

// Elementwise loops the kernels share. Each does an element's arithmetic
// as written here, in float32 and never fused, so the assembly that takes
// the leading multiple of 8 elements (vectorLen) on amd64 gives the same
// bits as the Go loop that finishes the rest.

// vectorPart runs vec on the leading vectorLen(n) of n elements, if any,
// and returns where the Go loop that finishes them starts.
func vectorPart(n int, vec func(n8 int)) int {
	n8 := vectorLen(n)
	if n8 > 0 {
		vec(n8)
	}
	return n8
}

// maxOf returns the largest of x (len(x) ≥ 1), NaN if one of them is NaN,
// as Go's max does, except that a zero result may have either sign: the
// callers subtract it and exponentiate, and e^(x−0) = e^(x+0), e^(±0) = 1.
func maxOf(x []float32) float32 {
	m := x[0]
	for _, v := range x[vectorPart(len(x), func(n8 int) { m = vectorMax(x, n8) }):] {
		m = max(m, v)
	}
	return m
}

// subScalar sets x[i] −= c.
func subScalar(x []float32, c float32) {
	for j := vectorPart(len(x), func(n8 int) { vectorSub(x, n8, c) }); j < len(x); j++ {
		x[j] -= c
	}
}

// scaleBy sets x[i] *= c.
func scaleBy(x []float32, c float32) {
	for j := vectorPart(len(x), func(n8 int) { vectorMul(x, n8, c) }); j < len(x); j++ {
		x[j] *= c
	}
}

// subMul sets x[i] = (x[i] − c)·d.
func subMul(x []float32, c, d float32) {
	for j := vectorPart(len(x), func(n8 int) { vectorSubMul(x, n8, c, d) }); j < len(x); j++ {
		x[j] = (x[j] - c) * d
	}
}

// addVectors sets z[i] = x[i] + y[i] over len(z) elements (z may be x or
// y; x and y at least as long).
func addVectors(z, x, y []float32) {
	x, y = x[:len(z)], y[:len(z)]
	for j := vectorPart(len(z), func(n8 int) { vectorAdd(z, x, y, n8) }); j < len(z); j++ {
		z[j] = x[j] + y[j]
	}
}

// AddInPlace sets x[i] += b[i] over len(x) elements (a bias added to a
// row, as the matrix product's bias).
func AddInPlace(x, b []float32) { addVectors(x, x, b) }
