package cpu

import (
	"math"
	"testing"
)

func TestExp32(t *testing.T) {
	worst := 0.0
	for x := float32(-87.2); x < 88.3; x += 0.0013 {
		want := math.Exp(float64(x))
		e := math.Abs(float64(exp32(x))-want) / want
		worst = math.Max(worst, e)
	}
	if worst > 2.4e-7 { // 2 ulp of float32
		t.Errorf("max relative error %.3g over [-87, 88]", worst)
	}
	for _, tc := range []struct{ x, want float32 }{
		{0, 1}, {float32(math.Inf(-1)), 0}, {-1e30, 0}, {1e30, float32(math.Inf(1))}, {float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		if got := exp32(tc.x); got != tc.want {
			t.Errorf("exp32(%g) = %g, want %g", tc.x, got, tc.want)
		}
	}
	if got := exp32(float32(math.NaN())); got == got {
		t.Errorf("exp32(NaN) = %g", got)
	}
	if got := exp32(-100); got <= 0 || got > 1e-43 {
		t.Errorf("exp32(-100) = %g, want a tiny subnormal", got)
	}
}

func BenchmarkExp32(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i%64) * -0.1
	}
	for b.Loop() {
		for i, v := range x {
			x[i] = exp32(v) - 1
		}
	}
}

func BenchmarkMathExp(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i%64) * -0.1
	}
	for b.Loop() {
		for i, v := range x {
			x[i] = float32(math.Exp(float64(v))) - 1
		}
	}
}
