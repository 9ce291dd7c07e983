package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotsMatchesNaive checks Dots against the naive product A·Bᵀ with one
// row, over row counts around the groups of eight, k around the 8-step
// blocks, and padded rows of B (so ignoring ldb reads the padding).
func TestDotsMatchesNaive(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range []int{0, 1, 7, 8, 9, 16, 23, 130} {
			for _, k := range []int{0, 1, 7, 8, 15, 32, 37, 64, 129} {
				ldb := k + 3
				a, b := randMatrix(r, k), randMatrix(r, max(n*ldb, 1))
				got, want := make([]float32, n), make([]float32, n)
				Dots(got, a, b, k, ldb)
				naive(false, true, 1, n, k, 1, a, k, b, ldb, 0, want, max(n, 1))
				for i := range got {
					tol := 1e-5 * float64(k+1)
					if d := math.Abs(float64(got[i] - want[i])); d > tol {
						t.Fatalf("n=%d k=%d: out[%d] = %v, naive %v", n, k, i, got[i], want[i])
					}
				}
			}
		}
	})
}

// TestCombineMatchesNaive checks Combine against the naive product A·B with
// one row, over widths around the 32- and 64-column blocks, k odd and even
// (comb32 pairs the steps), and padded rows of B.
func TestCombineMatchesNaive(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, n := range []int{0, 1, 8, 31, 32, 33, 64, 65, 96, 100, 128, 136} {
			for _, k := range []int{0, 1, 2, 3, 7, 8, 64, 129} {
				ldb := n + 5
				w, b := randMatrix(r, k), randMatrix(r, max(k*ldb, 1))
				got, want := make([]float32, n), make([]float32, n)
				for i := range got {
					got[i] = float32(math.NaN()) // Combine overwrites out
				}
				Combine(got, w, b, k, ldb)
				naive(false, false, 1, n, k, 1, w, max(k, 1), b, ldb, 0, want, max(n, 1))
				for i := range got {
					tol := 1e-5 * float64(k+1)
					if d := math.Abs(float64(got[i] - want[i])); !(d <= tol) {
						t.Fatalf("n=%d k=%d: out[%d] = %v, naive %v", n, k, i, got[i], want[i])
					}
				}
			}
		}
	})
}

func TestCombineRejectsShortOperands(t *testing.T) {
	for _, c := range []struct {
		name string
		w, b []float32
		k    int
	}{
		{"short w", make([]float32, 3), make([]float32, 64*4), 4},
		{"short b", make([]float32, 8), make([]float32, 64*8-1), 8},
		{"negative k", nil, nil, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			Combine(make([]float32, 64), c.w, c.b, c.k, 64)
		})
	}
}

func TestDotsRejectsShortOperands(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []float32
		k    int
	}{
		{"short a", make([]float32, 3), make([]float32, 64), 4},
		{"short b", make([]float32, 8), make([]float32, 8*7), 8},
		{"negative k", nil, nil, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			Dots(make([]float32, 8), c.a, c.b, c.k, max(c.k, 1))
		})
	}
}

func BenchmarkDots(b *testing.B) {
	for _, c := range []struct{ n, k int }{{256, 32}, {32, 256}} {
		b.Run(fmt.Sprintf("n%d_k%d", c.n, c.k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			a, m, out := randMatrix(r, c.k), randMatrix(r, c.n*c.k), make([]float32, c.n)
			for b.Loop() {
				Dots(out, a, m, c.k, c.k)
			}
		})
	}
}
