package gemm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSgemmPackedMatchesSgemm: a product from a PackedB equals Sgemm on the
// same operands bit for bit (both kernels, both layouts of B, odd sizes, the
// dot-product rows m ≤ 3, shapes above and below the parallel threshold).
func TestSgemmPackedMatchesSgemm(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, transB := range []bool{false, true} {
			for _, s := range [][3]int{{1, 17, 33}, {3, 40, 16}, {4, 100, 7}, {16, 352, 128}, {13, 31, 300}, {64, 512, 128}, {7, 0, 5}} {
				m, n, k := s[0], s[1], s[2]
				t.Run(fmt.Sprintf("transB=%v/%dx%dx%d", transB, m, n, k), func(t *testing.T) {
					g := newCase(r, false, transB, m, n, k, 0.5, 1.25, 3)
					want := g.run(Sgemm)
					p := PackB(transB, k, n, g.b, g.ldb)
					got := append([]float32(nil), g.c...)
					SgemmPacked(m, g.alpha, g.a, g.lda, p, g.beta, got, g.ldc)
					if !slices.Equal(got, want) {
						t.Fatal("SgemmPacked differs from Sgemm")
					}
					g.check(t, got)
				})
			}
		}
	})
}

func TestPackBBadSizesPanic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("PackB with a short slice did not panic")
		}
	}()
	PackB(false, 4, 4, make([]float32, 15), 4)
}
