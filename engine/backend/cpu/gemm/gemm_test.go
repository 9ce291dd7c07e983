package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// kernels runs f once with each micro-kernel this machine has: the
// AVX-512 tiles two panels wide, the AVX2 ones, the portable Go one.
func kernels(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	savedAsm, savedWide := useAsm, useWide
	defer func() { useAsm, useWide = savedAsm, savedWide }()
	if savedAsm && savedWide {
		useAsm, useWide = true, true
		t.Run("avx512", f)
	}
	if savedAsm {
		useAsm, useWide = true, false
		t.Run("avx2", f)
	}
	useAsm, useWide = false, false
	t.Run("go", f)
}

// TestWideKernelsMatchNarrow: the AVX-512 kernels, two panels wide, give
// every element the bits of the AVX2 ones, over the four layouts, the
// row counts that end in each short tile (in place and packed), column
// counts with and without a whole pair of panels, k across kcMax, and
// a beta whose merge of a partial tile rounds differently from an FMA
// (0.3: a power of two would scale C exactly). Notebooks run on either kind of machine reproduce the same numbers.
func TestWideKernelsMatchNarrow(t *testing.T) {
	if !useAsm || !useWide {
		t.Skip("no AVX-512 on this machine")
	}
	defer func() { useWide = true }()
	r := rand.New(rand.NewPCG(11, 12))
	ms := []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 16, 20, 24, 31, 200}
	ns := []int{16, 31, 32, 33, 48, 64, 80, 100, 1030}
	ks := []int{1, 7, 64, 257, 600}
	betas := []float32{0, 1, 0.3}
	for trial := 0; trial < 120; trial++ {
		m, n, k := ms[r.IntN(len(ms))], ns[r.IntN(len(ns))], ks[r.IntN(len(ks))]
		tr := [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}}[trial%4]
		g := newCase(r, tr[0], tr[1], m, n, k, 0.75, betas[trial%3], r.IntN(2)*3)
		for _, f := range []struct {
			name string
			run  func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
		}{{"Sgemm", Sgemm}, {"SgemmSerial", SgemmSerial}, {"SgemmPacked", sgemmPacked}} {
			if f.name == "SgemmPacked" && g.transA {
				continue
			}
			useWide = false
			want := g.run(f.run)
			useWide = true
			got := g.run(f.run)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %v: C[%d] = %v (AVX-512), %v (AVX2)", f.name, g, i, got[i], want[i])
				}
			}
		}
	}
}

// sgemmPacked is SgemmPacked in Sgemm's signature (A not transposed).
func sgemmPacked(_, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	SgemmPacked(m, alpha, a, lda, PackB(transB, k, n, b, ldb), beta, c, ldc)
}

func randMatrix(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// gemmCase is one product with its operands laid out with padded leading
// dimensions, so a kernel that ignores ld reads the padding and fails.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int
}

func newCase(r *rand.Rand, transA, transB bool, m, n, k int, alpha, beta float32, pad int) *gemmCase {
	g := &gemmCase{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	g.lda, g.ldb, g.ldc = ac+pad, bc+pad, n+pad
	g.a = randMatrix(r, ar*g.lda)
	g.b = randMatrix(r, br*g.ldb)
	g.c = randMatrix(r, m*g.ldc)
	return g
}

func (g *gemmCase) run(f func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) []float32 {
	c := append([]float32(nil), g.c...)
	f(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
	return c
}

// check compares got with the naive product. Reassociating a float32 sum of
// k terms moves it by up to about k·eps·Σ|terms| in the worst case and
// sqrt(k)·eps·Σ|terms| typically; the bound is 1e-5·sqrt(k) relative to the
// sum of magnitudes. Elements outside the m×n block (the ldc padding) must be
// untouched.
func (g *gemmCase) check(t *testing.T, got []float32) {
	t.Helper()
	want := g.run(naive)
	abs := func(x []float32) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(math.Abs(float64(v)))
		}
		return y
	}
	scale := append([]float32(nil), abs(g.c)...)
	beta := float32(math.Abs(float64(g.beta)))
	naive(g.transA, g.transB, g.m, g.n, g.k, float32(math.Abs(float64(g.alpha))), abs(g.a), g.lda, abs(g.b), g.ldb, beta, scale, g.ldc)
	tol := 1e-5 * math.Sqrt(float64(max(g.k, 1)))
	bad := 0
	for idx := range got {
		i, j := idx/g.ldc, idx%g.ldc
		if j >= g.n {
			if math.Float32bits(got[idx]) != math.Float32bits(g.c[idx]) {
				t.Fatalf("%v: padding C[%d][%d] changed from %v to %v", g, i, j, g.c[idx], got[idx])
			}
			continue
		}
		d := math.Abs(float64(got[idx] - want[idx]))
		if !(d <= tol*float64(scale[idx])+1e-30) {
			bad++
			if bad <= 3 {
				t.Errorf("%v: C[%d][%d] = %v, naive %v (|diff| %.3g > %.3g)", g, i, j, got[idx], want[idx], d, tol*float64(scale[idx]))
			}
		}
	}
	if bad > 3 {
		t.Errorf("%v: %d elements differ", g, bad)
	}
}

func (g *gemmCase) String() string {
	return fmt.Sprintf("transA=%v transB=%v m=%d n=%d k=%d alpha=%v beta=%v lda=%d ldb=%d ldc=%d",
		g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.beta, g.lda, g.ldb, g.ldc)
}

func TestSgemmMatchesNaive(t *testing.T) {
	sizes := []int{1, 3, 6, 7, 16, 17, 33, 65, 127, 255}
	scalars := [][2]float32{{1, 0}, {1, 1}, {0.5, -2}, {-1.25, 0.75}}
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		trials := 60
		if testing.Short() {
			trials = 20
		}
		for trial := 0; trial < trials; trial++ {
			m := sizes[r.IntN(len(sizes))]
			n := sizes[r.IntN(len(sizes))]
			k := sizes[r.IntN(len(sizes))]
			s := scalars[trial%len(scalars)]
			for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				g := newCase(r, tr[0], tr[1], m, n, k, s[0], s[1], r.IntN(3)*5)
				g.check(t, g.run(SgemmSerial))
				g.check(t, g.run(Sgemm))
			}
		}
	})
}

// TestSgemmBlocking covers the shapes that cross the cache blocks (k past
// kcMax, rows past mcMax, columns past ncMax) and the parallel split.
func TestSgemmBlocking(t *testing.T) {
	// The last shape has lda = 1024 (A·B with pad 0): rows crowd one L1
	// set, so A is packed even with the assembly kernel (crowdedRows).
	shapes := [][3]int{{257, 129, 300}, {170, 33, 513}, {7, 4100, 20}, {340, 200, 64}, {40, 70, 1024}}
	if testing.Short() {
		shapes = shapes[:2]
	}
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for i, s := range shapes {
			tr := [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}}[i%4]
			pad := 3
			if s[2] == 1024 {
				pad = 0
			}
			g := newCase(r, tr[0], tr[1], s[0], s[1], s[2], 0.5, 0.25, pad)
			g.check(t, g.run(Sgemm))
		}
	})
}

func TestSgemmBetaZeroIgnoresNaN(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, s := range [][3]int{{6, 16, 8}, {7, 17, 9}, {64, 64, 300}} {
			g := newCase(r, false, false, s[0], s[1], s[2], 1, 0, 0)
			for i := range g.c {
				g.c[i] = float32(math.NaN())
			}
			got := g.run(Sgemm)
			for i, v := range got {
				if math.IsNaN(float64(v)) {
					t.Fatalf("%v: C[%d] is NaN: beta = 0 must not read C", g, i)
				}
			}
			g.c = make([]float32, len(g.c)) // the oracle multiplies 0 by beta
			g.check(t, got)
		}
	})
}

func TestSgemmNothingToSum(t *testing.T) {
	c := []float32{1, 2, 3, 4}
	nan := float32(math.NaN())
	// k == 0: C = beta·C, and A, B may be empty.
	Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 3, c, 2)
	if c[0] != 3 || c[3] != 12 {
		t.Errorf("k=0, beta=3: C = %v, want [3 6 9 12]", c)
	}
	// alpha == 0: A and B are not read (NaNs there do not leak).
	Sgemm(false, false, 2, 2, 1, 0, []float32{nan, nan}, 1, []float32{nan, nan}, 2, 0, c, 2)
	if c[0] != 0 || c[3] != 0 {
		t.Errorf("alpha=0, beta=0: C = %v, want zeros", c)
	}
	Sgemm(false, false, 0, 5, 5, 1, nil, 5, nil, 5, 0, nil, 5) // empty C
}

// TestSgemmRowsMatchPackedA: reading A in place (kernelAVX2Rows and its
// 1–5-row variants for the last tile, with the prefetching Pf variants up to
// streamRows rows; their AVX-512 twins) gives the bits of the packed-A
// kernel, reached here through the same product with A stored transposed
// and colsInPlace off; and so does reading the transposed A in place (the
// Cols kernels): also where a short tile of rows in place writes C itself
// (beta 0 and 1) and the packed one goes through the scratch tile.
func TestSgemmRowsMatchPackedA(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernel")
	}
	kernels(t, func(t *testing.T) {
		if !useAsm {
			t.Skip("portable kernel: A is always packed")
		}
		for _, beta := range []float32{0.3, 1, 0} {
			rowsMatchPackedA(t, beta)
		}
	})
}

func rowsMatchPackedA(t *testing.T, beta float32) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, m := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 23, 24, 25, 26, 27, 28, 29, 31, 200} {
		n, k := 40, 70
		if m == 200 {
			k = 300 // two k blocks, and a row block after the first
		}
		a, b := randMatrix(r, m*k), randMatrix(r, k*n)
		at := make([]float32, k*m)
		for i := 0; i < m; i++ {
			for p := 0; p < k; p++ {
				at[p*m+i] = a[i*k+p]
			}
		}
		c0, c1, c2 := randMatrix(r, m*n), make([]float32, m*n), make([]float32, m*n)
		copy(c1, c0)
		copy(c2, c0)
		SgemmSerial(false, false, m, n, k, 0.5, a, k, b, n, beta, c0, n)
		SgemmSerial(true, false, m, n, k, 0.5, at, m, b, n, beta, c1, n)
		func() {
			colsInPlace = false
			defer func() { colsInPlace = true }()
			SgemmSerial(true, false, m, n, k, 0.5, at, m, b, n, beta, c2, n)
		}()
		for i := range c0 {
			if math.Float32bits(c0[i]) != math.Float32bits(c2[i]) || math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
				t.Fatalf("m=%d beta=%v: C[%d] = %v (A in place), %v (transposed A in place), %v (A packed)", m, beta, i, c0[i], c1[i], c2[i])
			}
		}
	}
}

// TestSgemmDeterministic: the same product is bit-identical whatever
// GOMAXPROCS, and Sgemm equals SgemmSerial bit for bit.
func TestSgemmDeterministic(t *testing.T) {
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, s := range [][3]int{{300, 130, 270}, {64, 520, 96}} {
			g := newCase(r, false, true, s[0], s[1], s[2], 1, 0.5, 1)
			serial := g.run(SgemmSerial)
			prev := runtime.GOMAXPROCS(1)
			one := g.run(Sgemm)
			runtime.GOMAXPROCS(2)
			two := g.run(Sgemm)
			runtime.GOMAXPROCS(prev)
			for i := range serial {
				if math.Float32bits(one[i]) != math.Float32bits(two[i]) || math.Float32bits(one[i]) != math.Float32bits(serial[i]) {
					t.Fatalf("%v: C[%d] = %v (GOMAXPROCS=1), %v (GOMAXPROCS=2), %v (serial)", g, i, one[i], two[i], serial[i])
				}
			}
		}
	})
}

func TestSgemmBadArgumentsPanic(t *testing.T) {
	a := make([]float32, 6)
	cases := []struct {
		name string
		call func()
		want string
	}{
		{"negative", func() { Sgemm(false, false, -1, 2, 3, 1, a, 3, a, 2, 0, a, 2) }, "negative dimension"},
		{"short lda", func() { Sgemm(false, false, 2, 2, 3, 1, a, 2, a, 2, 0, a, 2) }, "lda = 2 < 3"},
		{"short a", func() { Sgemm(true, false, 4, 2, 3, 1, a, 4, a, 2, 0, make([]float32, 8), 2) }, "len(a) = 6 < 12"},
		{"short c", func() { SgemmSerial(false, false, 2, 3, 3, 1, a, 3, make([]float32, 9), 3, 0, a[:5], 3) }, "len(c) = 5 < 6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q, want it to contain %q", msg, tc.want)
				}
			}()
			tc.call()
		})
	}
}

// TestPartition: the chunk grid covers C with steps that are multiples of
// the register tile, and depends on the shape only.
func TestPartition(t *testing.T) {
	for _, s := range [][3]int{{512, 128, 128}, {256, 8192, 256}, {1024, 1024, 1024}, {5, 3000, 700}, {3000, 7, 700}} {
		rs, cs := partition(s[0], s[1], s[2], parChunkFlops)
		if rs%mr != 0 || cs%nr != 0 || rs <= 0 || cs <= 0 {
			t.Errorf("partition%v = %d, %d: not positive multiples of %d, %d", s, rs, cs, mr, nr)
		}
		chunks := ((s[0] + rs - 1) / rs) * ((s[1] + cs - 1) / cs)
		if chunks > parMaxChunks {
			t.Errorf("partition%v: %d chunks > %d", s, chunks, parMaxChunks)
		}
	}
	if rs, cs := partition(1024, 1024, 1024, parChunkFlops); rs != 258 || cs != 256 {
		t.Errorf("partition(1024,1024,1024) = %d×%d tiles, want a 4×4 grid of 258×256", rs, cs)
	}
}

func TestCrowdedRows(t *testing.T) {
	for _, c := range []struct {
		lda  int
		want bool
	}{{128, false}, {256, false}, {512, false}, {1024, true}, {1020, true}, {2048, true}, {1000, false}, {4096 + 4, true}} {
		if got := crowdedRows(c.lda, mr); got != c.want {
			t.Errorf("crowdedRows(%d, mr) = %v, want %v", c.lda, got, c.want)
		}
	}
	// Twelve rows: 1 KiB apart, three share a set; 2 KiB apart, six.
	if crowdedRows(256, mrTall) || !crowdedRows(512, mrTall) {
		t.Errorf("crowdedRows(256, mrTall) = %v, crowdedRows(512, mrTall) = %v: want false, true", crowdedRows(256, mrTall), crowdedRows(512, mrTall))
	}
}
