package vmath

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// kernel names a set of vector loops for the tests.
type kernel struct {
	name  string
	loops vectorLoops
}

// eachKernel runs f with Exp set to each vector loop this CPU has, then to
// the scalar code alone.
func eachKernel(t *testing.T, f func(t *testing.T)) {
	saved := vec
	defer func() { vec = saved }()
	for _, k := range append(vectorKernels(), kernel{"scalar", vectorLoops{}}) {
		vec = k.loops
		t.Run(k.name, f)
	}
}

// checkBits compares Exp of xs with math.Exp, bit for bit (NaNs too).
func checkBits(t *testing.T, xs []float64) {
	t.Helper()
	got := append([]float64(nil), xs...)
	Exp(got)
	bad := 0
	for i, x := range xs {
		if want := math.Exp(x); math.Float64bits(got[i]) != math.Float64bits(want) {
			if bad++; bad <= 5 {
				t.Errorf("Exp(%v) [%#x, index %d] = %v [%#x], math.Exp gives %v [%#x]",
					x, math.Float64bits(x), i, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d values differ in all", bad)
	}
}

// TestExpRandom compares 3 million values with math.Exp: uniform over the
// range where the result is finite and not 0, the range sampling uses,
// tiny ones, and arbitrary bit patterns (every exponent, NaNs, infinities,
// subnormal inputs).
func TestExpRandom(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(24, 1))
		xs := make([]float64, 0, 3<<20)
		for range 1 << 20 {
			xs = append(xs, -750+rng.Float64()*1465)
		}
		for range 1 << 20 {
			xs = append(xs, -40*rng.Float64())
		}
		for range 1 << 19 {
			xs = append(xs, math.Ldexp(rng.Float64()-0.5, -rng.IntN(1080)))
		}
		for range 1 << 19 {
			xs = append(xs, math.Float64frombits(rng.Uint64()))
		}
		checkBits(t, xs)
	})
}

// edges are the special inputs and the boundaries of the sequences'
// range, each with its neighbours a few ulps either side.
func edges() []float64 {
	inf := math.Inf(1)
	// k = round(x·log2e) changes at x = (k ± ½)·ln2: the covered range
	// ends where k leaves [−1022, 1023].
	centres := []float64{
		0, 1, -1, overflow, 709.78, 709.7, 709.4, -708.39, -708.4, -708.5, -709.1, -744.44,
		-745.13321910194110842, -745.2, -740, -730, -720, 1e-300, -1e-300,
		(1023 + 0.5) * math.Ln2, (-1022 - 0.5) * math.Ln2, (1022 + 0.5) * math.Ln2, (-1021 - 0.5) * math.Ln2,
		0.5 * math.Ln2, -0.5 * math.Ln2, 1.5 * math.Ln2, -1.5 * math.Ln2,
	}
	xs := []float64{math.Copysign(0, -1), inf, -inf, math.NaN(), math.Float64frombits(0x7ff8000000000123),
		math.Float64frombits(0xfff0000000000001), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.MaxFloat64, -math.MaxFloat64, 5e-324, 2.2250738585072014e-308}
	for _, c := range centres {
		for _, x := range []float64{c, math.Nextafter(c, inf), math.Nextafter(c, -inf)} {
			xs = append(xs, x)
			for range 40 {
				x = math.Nextafter(x, inf)
				xs = append(xs, x)
			}
			x = c
			for range 40 {
				x = math.Nextafter(x, -inf)
				xs = append(xs, x)
			}
		}
	}
	return xs
}

// TestExpEdges compares the special values and the range's boundaries,
// each alone, in a slice of them, and at every position of a block of
// ordinary values (so a vector that holds one goes to the scalar code and
// its neighbours still come out right), for slice lengths that end in
// every tail length.
func TestExpEdges(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		es := edges()
		checkBits(t, es)
		for _, e := range es {
			checkBits(t, []float64{e})
		}
		ordinary := func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(i)*0.37 - 5
			}
			return xs
		}
		for _, e := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 710, -709, -746, 709.5, 1e300} {
			for pos := range 40 {
				xs := ordinary(40)
				xs[pos] = e
				checkBits(t, xs)
			}
		}
		for n := range 70 {
			checkBits(t, ordinary(n))
		}
	})
}

// TestExpTies runs over inputs where x·log2e is a half-integer or
// within a few ulps of one, where k's rounding (to nearest even) decides.
func TestExpTies(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		var xs []float64
		for k := -1023; k <= 1024; k++ {
			c := (float64(k) + 0.5) / log2e
			for i, x := 0, math.Nextafter(c, -1e9); i < 8; i++ {
				xs = append(xs, x)
				x = math.Nextafter(x, 1e9)
			}
		}
		ties := 0
		for _, x := range xs {
			if v := x * log2e; v == math.Floor(v)+0.5 {
				ties++
			}
		}
		if ties < 100 {
			t.Fatalf("only %d of the inputs make x·log2e a half-integer", ties)
		}
		checkBits(t, xs)
	})
}

// checkShifted compares ExpShifted of xs and m with math.Exp of
// float64(x) − m, bit for bit, writing into a longer dst whose extra
// element must stay.
func checkShifted(t *testing.T, xs []float32, m float64) {
	t.Helper()
	dst := make([]float64, len(xs)+1)
	dst[len(xs)] = 42
	ExpShifted(dst, xs, m)
	bad := 0
	for i, x := range xs {
		if want := math.Exp(float64(x) - m); math.Float64bits(dst[i]) != math.Float64bits(want) {
			if bad++; bad <= 5 {
				t.Errorf("ExpShifted(%v − %v) [index %d] = %v [%#x], math.Exp gives %v [%#x]",
					x, m, i, dst[i], math.Float64bits(dst[i]), want, math.Float64bits(want))
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d values differ in all", bad)
	}
	if dst[len(xs)] != 42 {
		t.Errorf("ExpShifted wrote past len(x)")
	}
}

// TestExpShifted runs ExpShifted over float32 logits less shifts: random
// ones, the range's boundaries and special values (in x and in m), at
// every position of a block and with every tail length.
func TestExpShifted(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(24, 2))
		xs := make([]float32, 1<<20)
		for i := range xs {
			xs[i] = float32(120 * (rng.Float64() - 0.5))
		}
		for _, m := range []float64{0, 60, -60, 0.1, 700, -700, 1e10, -1e10, math.NaN(), math.Inf(1), math.Inf(-1)} {
			checkShifted(t, xs[:1<<16], m)
		}
		checkShifted(t, xs, 60)
		var es []float32
		for _, e := range edges() {
			x := float32(e)
			es = append(es, x)
			for range 40 {
				x = math.Nextafter32(x, float32(math.Inf(1)))
				es = append(es, x)
			}
			x = float32(e)
			for range 40 {
				x = math.Nextafter32(x, float32(math.Inf(-1)))
				es = append(es, x)
			}
		}
		for _, m := range []float64{0, 1e-3, -1e-3, 0.5} {
			checkShifted(t, es, m)
		}
		for _, e := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 710, -709, -746, 1e30} {
			for pos := range 40 {
				x := make([]float32, 40)
				for i := range x {
					x[i] = float32(i)*0.37 - 5
				}
				x[pos] = e
				checkShifted(t, x, 0.25)
			}
		}
		for n := range 70 {
			checkShifted(t, xs[:n], 1)
		}
	})
}

// TestSequences checks the sequence Exp takes on this machine — on amd64
// the FMA one where math.Exp fuses, the plain one where it does not — and
// runs the comparisons again in a child process under GODEBUG=cpu.fma=off,
// which math obeys, so the plain sequence is checked on an FMA machine too.
func TestSequences(t *testing.T) {
	child := os.Getenv("VMATH_CHILD") != ""
	if want := expectedPath(child); path != want {
		t.Fatalf("path %d, want %d (GODEBUG=%q)", path, want, os.Getenv("GODEBUG"))
	}
	if path != viaFMA || child || !fmaSwitchable {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^(TestSequences|TestExpRandom|TestExpEdges|TestExpTies|TestExpShifted)$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GODEBUG=cpu.fma=off", "VMATH_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("under GODEBUG=cpu.fma=off: %v\n%s", err, out)
	}
}

// TestProbesTellPathsApart: choosePath can tell the sequences apart only
// on inputs where they differ.
func TestProbesTellPathsApart(t *testing.T) {
	for _, x := range probes {
		if expFMA(x) == expPlain(x) {
			t.Errorf("probe %v: both sequences give %v", x, expFMA(x))
		}
	}
}

// FuzzExp compares Exp with math.Exp on any input, alone and at each
// position of a vector-loop block.
func FuzzExp(f *testing.F) {
	for _, x := range []float64{0, -1, 700, -708.4, 709.78, -745.1, math.NaN()} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		xs := make([]float64, 37)
		for i := range xs {
			xs[i] = -float64(i) / 3
		}
		xs[int(math.Float64bits(x)%37)] = x
		checkBits(t, xs)
	})
}

// BenchmarkExp runs math.Exp and Exp with each vector loop and with the
// scalar code over a row of Qwen2.5's vocabulary of sampling's values (in
// [−32, 0]); fill is the cost of refilling the row, included in the others.
func BenchmarkExp(b *testing.B) {
	x := make([]float64, 151936) // a row of Qwen2.5's vocabulary
	fill := func() {
		for i := range x {
			x[i] = -float64(i%4096) / 128
		}
	}
	b.Run("math", func(b *testing.B) {
		for b.Loop() {
			fill()
			for i, v := range x {
				x[i] = math.Exp(v)
			}
		}
	})
	saved := vec
	defer func() { vec = saved }()
	for _, k := range append(vectorKernels(), kernel{"scalar", vectorLoops{}}) {
		vec = k.loops
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				fill()
				Exp(x)
			}
		})
	}
	b.Run("fill", func(b *testing.B) {
		for b.Loop() {
			fill()
		}
	})
}
