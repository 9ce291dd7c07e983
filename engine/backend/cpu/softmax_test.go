package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxRowPlain is the softmax of one row as softmaxRows computes it,
// written as the plain loop: the bit-for-bit oracle of the vector version.
func softmaxRowPlain(row []float32, valid int) {
	x := row[:valid]
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	for j := range x {
		x[j] -= m
	}
	expInPlace(x)
	var s float32
	for _, e := range x {
		s += e
	}
	inv := 1 / s
	for j := range x {
		x[j] *= inv
	}
	clear(row[valid:])
}

// TestSoftmaxRowsMatchPlain: softmaxRows gives the plain loop's bits, on
// and off the assembly, for blocks of every size up to a few groups of
// four rows, with zeros of both signs, infinities, values whose exponential
// leaves the vector kernel's range, and NaN.
func TestSoftmaxRowsMatchPlain(t *testing.T) {
	saved := useAsm
	defer func() { useAsm = saved }()
	r := rand.New(rand.NewPCG(3, 9))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(-1)), -200, 90, float32(math.NaN())}
	for _, asm := range []bool{saved, false} {
		useAsm = asm
		for trial := 0; trial < 300; trial++ {
			n, first := 1+r.IntN(13), r.IntN(40)
			ldp := first + n + r.IntN(3)
			p := make([]float32, n*ldp)
			for i := range p {
				p[i] = float32(r.NormFloat64() * 3)
				if r.IntN(60) == 0 {
					p[i] = specials[r.IntN(len(specials))]
				}
			}
			if trial%5 == 0 { // a row whose maximum is a zero
				for j := 0; j < first+1; j++ {
					p[j] = -float32(r.Float64())
				}
				p[r.IntN(first+1)] = float32(math.Copysign(0, -1))
			}
			want := append([]float32(nil), p...)
			for i := 0; i < n; i++ {
				softmaxRowPlain(want[i*ldp:i*ldp+first+n], first+i+1)
			}
			softmaxRows(p, n, first, ldp)
			for i := range p {
				if math.Float32bits(p[i]) != math.Float32bits(want[i]) && !(isNaN(p[i]) && isNaN(want[i])) {
					t.Fatalf("asm=%v n=%d first=%d: p[%d] = %v, plain loop %v", asm, n, first, i, p[i], want[i])
				}
			}
		}
	}
}

func isNaN(x float32) bool { return x != x }

// BenchmarkSoftmaxBlock is the softmax of probBlock on a block of 64 rows at
// positions 192…255 (a training step's last block at T = 256).
func BenchmarkSoftmaxBlock(b *testing.B) {
	const n, first = 64, 192
	cols := first + n
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, n*cols)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	p := make([]float32, len(src))
	for b.Loop() {
		copy(p, src)
		softmaxRows(p, n, first, cols)
	}
}
