package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// toBF16 returns x's values truncated to bfloat16, as bf16 bits and as
// the float32s they widen to.
func toBF16(x []float32) ([]uint16, []float32) {
	h, w := make([]uint16, len(x)), make([]float32, len(x))
	narrow(h, x)
	widen(w, h)
	return h, w
}

// sameBits fails the test unless got and want are equal bit for bit.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: C[%d] = %v, want %v (float32 product of the widened values)", what, i, got[i], want[i])
		}
	}
}

// bf16Shapes cover the dot-product rows (m ≤ 3), the short tiles of rows
// in place and the streaming ones (m ≤ 24), k across kcMax and past the
// last multiple of 16, columns with and without whole pairs of panels,
// and the parallel path.
var bf16Shapes = [][3]int{{1, 17, 33}, {3, 40, 16}, {2, 64, 300}, {4, 100, 7}, {16, 352, 128}, {13, 31, 300}, {24, 80, 257}, {64, 512, 128}, {200, 48, 70},
	{7, 64, 70}, {10, 64, 70}, {23, 64, 70}}

// TestSgemmBF16MatchesWidened: a product of bf16 operands equals Sgemm
// on the widened values bit for bit, with every kernel this machine has,
// in the four layouts, for betas whose merge rounds differently (0.3).
func TestSgemmBF16MatchesWidened(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		for i, s := range bf16Shapes {
			for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				g := newCase(r, tr[0], tr[1], s[0], s[1], s[2], 0.75, []float32{0, 1, 0.3}[i%3], r.IntN(2)*3)
				a16, aw := toBF16(g.a)
				b16, bw := toBF16(g.b)
				g.a, g.b = aw, bw
				want := g.run(Sgemm)
				got := append([]float32(nil), g.c...)
				SgemmBF16(g.transA, g.transB, g.m, g.n, g.k, g.alpha, a16, g.lda, b16, g.ldb, g.beta, got, g.ldc)
				sameBits(t, g.String(), got, want)
				g.check(t, got)
			}
		}
	})
}

// TestSgemmBF16BMatchesWidened: a float32 A by a bf16 B equals Sgemm on
// the widened B bit for bit, with every kernel, in the four layouts.
func TestSgemmBF16BMatchesWidened(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for i, s := range bf16Shapes {
			for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				g := newCase(r, tr[0], tr[1], s[0], s[1], s[2], 0.75, []float32{0, 1, 0.3}[i%3], r.IntN(2)*3)
				b16, bw := toBF16(g.b)
				g.b = bw
				want := g.run(Sgemm)
				got := append([]float32(nil), g.c...)
				SgemmBF16B(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, b16, g.ldb, g.beta, got, g.ldc)
				sameBits(t, g.String(), got, want)
				g.check(t, got)
			}
		}
	})
}

// TestPackedBF16MatchesSgemm: bf16 panels (from bf16 storage, PackBBF16,
// and from bf16-exact float32, PackBNarrow) give the bits of Sgemm on the
// widened B, through the bf16 in-place kernels (AVX2 with and without
// prefetching, AVX-512), the widened panels where A is packed (lda 1024:
// crowdedRows; the portable kernel) and dot4BF16 for m ≤ 3.
func TestPackedBF16MatchesSgemm(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		shapes := append(bf16Shapes, [3]int{40, 70, 1024}, [3]int{3, 70, 1024}, [3]int{7, 0, 5})
		for i, s := range shapes {
			for _, transB := range []bool{false, true} {
				pad := 3
				if s[2] == 1024 {
					pad = 0
				}
				g := newCase(r, false, transB, s[0], s[1], s[2], 0.5, []float32{0, 1, 0.3}[i%3], pad)
				b16, bw := toBF16(g.b)
				g.b = bw
				want := g.run(Sgemm)
				for _, p := range []*PackedB{PackBBF16(nil, transB, g.k, g.n, b16, g.ldb), PackBNarrow(nil, transB, g.k, g.n, bw, g.ldb)} {
					if g.n > 0 && !p.BF16() {
						t.Fatal("bf16 PackedB without bf16 panels")
					}
					got := append([]float32(nil), g.c...)
					SgemmPacked(g.m, g.alpha, g.a, g.lda, p, g.beta, got, g.ldc)
					sameBits(t, fmt.Sprintf("%v (b16 %v)", g, p.b16 != nil), got, want)
				}
			}
		}
	})
}

func TestPackBNarrowRefusesInexact(t *testing.T) {
	defer func() {
		if msg := fmt.Sprint(recover()); !strings.Contains(msg, "row 1 of b holds a value that is not a bfloat16") {
			t.Fatalf("panic %q", msg)
		}
	}()
	b := []float32{1, 2, 3, 4, 5, 6.1}
	PackBNarrow(nil, true, 3, 2, b, 3)
}

func TestExactBF16(t *testing.T) {
	if !ExactBF16([]float32{0, 1, -2.5, float32(math.Inf(1))}) || ExactBF16([]float32{1, 0.1}) {
		t.Fatal("ExactBF16 is wrong")
	}
}

// TestPackIntoReusedMemory: packing into the dirty panels of an earlier
// PackedB (PackBInto, PackBBF16, PackBNarrow) overwrites all of them: the
// products equal those of fresh packs, padding of a last partial panel
// included.
func TestPackIntoReusedMemory(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for _, s := range [][3]int{{16, 37, 40}, {2, 37, 40}, {7, 100, 300}} {
			g := newCase(r, false, true, s[0], s[1], s[2], 1, 0, 0)
			b16, bw := toBF16(g.b)
			g.b = bw
			want := g.run(Sgemm)
			f32 := make([]float32, PanelsLen(g.k, g.n))
			h16 := make([]uint16, PanelsLen(g.k, g.n))
			for i := range f32 {
				f32[i], h16[i] = float32(math.NaN()), 0x7fc1
			}
			for _, p := range []*PackedB{PackBInto(f32, true, g.k, g.n, bw, g.ldb), PackBBF16(h16, true, g.k, g.n, b16, g.ldb), PackBNarrow(h16, true, g.k, g.n, bw, g.ldb)} {
				if d, d16 := p.Panels(); len(d) > 0 && &d[0] != &f32[0] || len(d16) > 0 && &d16[0] != &h16[0] {
					t.Fatal("packed into new memory, not the memory given")
				}
				got := append([]float32(nil), g.c...)
				SgemmPacked(g.m, g.alpha, g.a, g.lda, p, g.beta, got, g.ldc)
				sameBits(t, g.String(), got, want)
			}
		}
	})
}

// TestWidenMatchesScalar: widen (the assembly packRowBF16 for the leading
// multiples of 16, where there is one) gives bf16 of each value, for
// lengths around the multiples of 16 and every 16-bit pattern (NaNs,
// infinities and subnormals included).
func TestWidenMatchesScalar(t *testing.T) {
	kernels(t, func(t *testing.T) {
		src := make([]uint16, 1<<16+7)
		for i := range src {
			src[i] = uint16(i * 40503) // odd: every pattern once in 2¹⁶
		}
		for _, n := range []int{0, 1, 15, 16, 17, 31, 33, 255, 1 << 16, len(src)} {
			dst := make([]float32, n)
			widen(dst, src)
			for i, h := range src[:n] {
				if got, want := math.Float32bits(dst[i]), uint32(h)<<16; got != want {
					t.Fatalf("n=%d: widen gave %#08x at %d, want %#08x", n, got, i, want)
				}
			}
		}
	})
}
