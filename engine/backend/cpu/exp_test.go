package cpu

import (
	"math"
	"testing"
)

// TestExpInPlace checks the accuracy and the special cases of the vector
// path and of the scalar one, with the special values both alone and inside
// blocks of 8 (which the vector kernel hands to the scalar code).
func TestExpInPlace(t *testing.T) {
	saved := useAsm
	defer func() { useAsm = saved }()
	for _, asm := range []bool{saved, false} {
		useAsm = asm
		checkExp(t)
	}
}

func checkExp(t *testing.T) {
	var xs []float32
	for x := float32(-87.2); x < 88.3; x += 0.0013 {
		xs = append(xs, x)
	}
	got := append([]float32(nil), xs...)
	expInPlace(got)
	worst := 0.0
	for i, x := range xs {
		want := math.Exp(float64(x))
		worst = math.Max(worst, math.Abs(float64(got[i])-want)/want)
	}
	if worst > 2.4e-7 { // 2 ulp of float32
		t.Errorf("max relative error %.3g over [-87, 88]", worst)
	}
	inf := float32(math.Inf(1))
	special := []float32{0, -inf, -1e30, 1e30, inf, -100, float32(math.NaN())}
	expInPlace(special)
	for i, want := range []float32{1, 0, 0, inf, inf} {
		if special[i] != want {
			t.Errorf("special case %d: got %g, want %g", i, special[i], want)
		}
	}
	if special[5] <= 0 || special[5] > 1e-43 {
		t.Errorf("e^-100 = %g, want a tiny subnormal", special[5])
	}
	if special[6] == special[6] {
		t.Errorf("e^NaN = %g, want NaN", special[6])
	}
	// A block of 8 with one special value in the middle, between blocks of
	// ordinary values: the ordinary ones are still right.
	x := make([]float32, 27)
	for i := range x {
		x[i] = float32(i)*0.25 - 3
	}
	x[11] = 1e30
	y := append([]float32(nil), x...)
	expInPlace(y)
	for i := range x {
		want := math.Exp(float64(x[i]))
		if i == 11 {
			if !math.IsInf(float64(y[i]), 1) {
				t.Errorf("e^1e30 = %g in a block, want +Inf", y[i])
			}
			continue
		}
		if e := math.Abs(float64(y[i])-want) / want; e > 2.4e-7 {
			t.Errorf("x=%g next to a special value: relative error %.3g", x[i], e)
		}
	}
}

func BenchmarkExpInPlace(b *testing.B) {
	x := make([]float32, 4096)
	for b.Loop() {
		for i := range x {
			x[i] = float32(i%64) * -0.1
		}
		expInPlace(x)
	}
}

func BenchmarkMathExp(b *testing.B) {
	x := make([]float32, 4096)
	for b.Loop() {
		for i := range x {
			x[i] = float32(math.Exp(float64(float32(i%64) * -0.1)))
		}
	}
}
