package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDPMatchesWidened: SgemmBF16 through the VDPBF16PS kernels gives
// the bits of Sgemm on the widened operands — odd and even k (an odd
// block ends in a half pair), k over several blocks, every short tile of
// rows, columns ending inside a DP panel and past a column block
// (ncMaxDP), beta 0 and 1 onto C holding values, alpha not 1, serial and
// parallel (B packed per chunk and shared; A swapped per block and whole,
// with odd k blocks), both layouts of B.
func TestDPMatchesWidened(t *testing.T) {
	if !useAsm || !useWide || !useDP {
		t.Skip("no AVX-512 BF16 on this machine")
	}
	r := rand.New(rand.NewPCG(53, 54))
	shapes := [][3]int{
		{4, 32, 2}, {5, 33, 1}, {6, 64, 3}, {7, 16, 255}, {12, 31, 256}, {13, 100, 257},
		{16, 352, 896}, {24, 80, 513}, {37, 200, 70}, {170, 48, 9}, {200, 4100, 40},
		{256, 512, 300}, {96, 1024, 511}, {400, 96, 256}, {64, 600, 257}, {4, 4100, 3}, {5, 4100, 129},
		{8, 64, 65}, {9, 48, 65}, {10, 40, 130}, {11, 64, 33}, {15, 33, 300}, {23, 96, 257}, {190, 70, 31},
	}
	for i, s := range shapes {
		for _, transB := range []bool{false, true} {
			for _, beta := range []float32{0, 1} {
				g := newCase(r, false, transB, s[0], s[1], s[2], []float32{1, 0.75}[i%2], beta, r.IntN(2)*3)
				a16, aw := toBF16(g.a)
				b16, bw := toBF16(g.b)
				g.a, g.b = aw, bw
				want := g.run(Sgemm)
				got := append([]float32(nil), g.c...)
				SgemmBF16(false, transB, g.m, g.n, g.k, g.alpha, a16, g.lda, b16, g.ldb, g.beta, got, g.ldc)
				sameBits(t, g.String(), got, want)
				got = append(got[:0], g.c...)
				SgemmBF16(false, transB, g.m, g.n, g.k, g.alpha, a16, g.lda, b16, g.ldb, g.beta, got, g.ldc)
				sameBits(t, g.String()+" (again)", got, want)
			}
		}
	}
}

// BenchmarkSgemmBF16DP: SgemmBF16 with and without the VDPBF16PS kernels
// on a 0.5B model's training shapes (x·Wᵀ over 512 tokens, and
// one dX = dY·W) and a prefill's.
func BenchmarkSgemmBF16DP(b *testing.B) {
	if !useAsm || !useWide || !hasBF16 {
		b.Skip("no AVX-512 BF16 on this machine")
	}
	for _, s := range [][4]int{{512, 1152, 896, 1}, {512, 9728, 896, 1}, {512, 896, 4864, 1}, {2048, 4864, 896, 1}, {512, 896, 9728, 0}} {
		m, n, k, transB := s[0], s[1], s[2], s[3] == 1
		ldb := n
		if transB {
			ldb = k
		}
		r := rand.New(rand.NewPCG(1, 2))
		a16, _ := toBF16(randMatrix(r, m*k))
		w16, _ := toBF16(randMatrix(r, n*k))
		c := make([]float32, m*n)
		for _, dp := range []bool{false, true} {
			name := map[bool]string{false: "widen", true: "dp"}[dp]
			b.Run(fmt.Sprintf("%s/%dx%dx%d/%s", map[bool]string{false: "NN", true: "NT"}[transB], m, n, k, name), func(b *testing.B) {
				saved := useDP
				useDP = dp
				defer func() { useDP = saved }()
				b.SetBytes(0)
				for b.Loop() {
					SgemmBF16(false, transB, m, n, k, 1, a16, k, w16, ldb, 0, c, n)
				}
				b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestPackedDPMatchesWidened: a PackedB of DP panels (PackBDP) multiplied
// by a bf16 A (SgemmPackedBF16) gives the bits of Sgemm on the widened
// operands — for a decoding step's few rows (at most DotMaxRows through
// the dot products, as Sgemm's), short tiles, odd k, edge columns — and
// so does a float32 A by the same PackedB (SgemmPacked packs from B's
// stored bf16 as it goes), with and without the VDPBF16PS kernels.
func TestPackedDPMatchesWidened(t *testing.T) {
	saved := useDP
	defer func() { useDP = saved }()
	r := rand.New(rand.NewPCG(55, 56))
	for _, dp := range []bool{true, false} {
		useDP = saved && dp
		for i, s := range [][3]int{{1, 40, 33}, {2, 64, 300}, {3, 100, 7}, {4, 32, 64}, {6, 33, 257}, {8, 96, 200}, {11, 40, 9}, {16, 352, 896}, {16, 4100, 64}, {24, 80, 513}, {100, 160, 70}} {
			for _, transB := range []bool{false, true} {
				g := newCase(r, false, transB, s[0], s[1], s[2], []float32{1, 0.75}[i%2], 0, r.IntN(2)*3)
				a16, aw := toBF16(g.a)
				b16, bw := toBF16(g.b)
				g.a, g.b = aw, bw
				want := g.run(Sgemm)
				p := PackBDP(nil, transB, g.k, g.n, b16, g.ldb)
				if p.DP() != HasDP() {
					t.Fatalf("PackBDP made DP panels: %v, HasDP %v", p.DP(), HasDP())
				}
				got := append([]float32(nil), g.c...)
				SgemmPackedBF16(g.m, g.alpha, a16, g.lda, p, g.beta, got, g.ldc)
				sameBits(t, g.String()+" SgemmPackedBF16", got, want)
				got = append(got[:0], g.c...)
				SgemmPacked(g.m, g.alpha, aw, g.lda, p, g.beta, got, g.ldc)
				sameBits(t, g.String()+" SgemmPacked", got, want)
			}
		}
	}
}
