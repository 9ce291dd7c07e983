package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// The naive twins below compute each op in float64 with plain loops; they
// are the oracles for the kernels (and for any optimised rewrite of them).

func randn(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

func maxRelErr(got []float32, want []float64) float64 {
	var scale, worst float64
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i, w := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-w))
		if math.IsNaN(float64(got[i])) {
			return math.Inf(1)
		}
	}
	return worst / math.Max(scale, 1e-30)
}

// naiveAttention is causal attention of one head, query rows at positions
// past…past+n−1, in float64; it also returns the probabilities.
func naiveAttention(q, k, v []float32, n, past, hd, ldq, ldkv int) (out, att []float64) {
	W := past + n
	out, att = make([]float64, n*hd), make([]float64, n*W)
	for i := 0; i < n; i++ {
		valid := past + i + 1
		m := math.Inf(-1)
		for j := 0; j < valid; j++ {
			var s float64
			for p := 0; p < hd; p++ {
				s += float64(q[i*ldq+p]) * float64(k[j*ldkv+p])
			}
			att[i*W+j] = s / math.Sqrt(float64(hd))
			m = math.Max(m, att[i*W+j])
		}
		var sum float64
		for j := 0; j < valid; j++ {
			att[i*W+j] = math.Exp(att[i*W+j] - m)
			sum += att[i*W+j]
		}
		for j := 0; j < valid; j++ {
			att[i*W+j] /= sum
			for p := 0; p < hd; p++ {
				out[i*hd+p] += att[i*W+j] * float64(v[j*ldkv+p])
			}
		}
	}
	return out, att
}

func TestAttendHeadMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct{ n, past int }{{1, 0}, {5, 0}, {70, 0}, {1, 33}, {3, 100}, {130, 17}} {
		const hd, ld = 8, 24 // a head inside wider rows, as in the packed layout
		W := tc.past + tc.n
		q, k, v := randn(rng, tc.n*ld, 1), randn(rng, W*ld, 1), randn(rng, W*ld, 1)
		out := make([]float32, tc.n*ld)
		AttendHead(out[4:], make([]float32, AttendScratch(tc.n, tc.past)), q[4:], k[8:], v[8:], tc.n, tc.past, hd, ld, ld, ld)
		wantOut, wantAtt := naiveAttention(q[4:], k[8:], v[8:], tc.n, tc.past, hd, ld, ld)
		gotOut := make([]float32, tc.n*hd)
		for i := 0; i < tc.n; i++ {
			copy(gotOut[i*hd:], out[4+i*ld:4+i*ld+hd])
		}
		if e := maxRelErr(gotOut, wantOut); e > 1e-5 {
			t.Errorf("n=%d past=%d: out error %.2e", tc.n, tc.past, e)
		}
		if tc.past == 0 {
			att := make([]float32, W*W)
			for i := range att {
				att[i] = float32(math.NaN()) // every entry must be written
			}
			AttentionProbs(att, q[4:], k[8:], W, hd, ld, ld)
			if e := maxRelErr(att, wantAtt); e > 1e-5 {
				t.Errorf("n=%d: probabilities error %.2e", tc.n, e)
			}
		}
	}
}

// TestAttendLastMatchesNaive checks one decoding step for GQA groups of 1 to
// 5 heads, head sizes on and off the 32- and 64-float blocks of
// gemm.Combine, against the naive attention of each head's query at the
// last position.
func TestAttendLastMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ group, W, hd int }{{1, 1, 8}, {1, 37, 32}, {2, 100, 16}, {4, 257, 32}, {5, 9, 8}, {3, 70, 12}, {1, 50, 64}, {2, 33, 104}} {
		ldk := tc.hd + 8
		q, k, v := randn(rng, tc.group*tc.hd, 1), randn(rng, tc.W*ldk, 1), randn(rng, tc.W*ldk, 1)
		out := make([]float32, tc.group*tc.hd)
		AttendLast(out, make([]float32, tc.W), q, k, v, tc.group, tc.W, tc.hd, ldk)
		for h := 0; h < tc.group; h++ {
			want, _ := naiveAttention(q[h*tc.hd:], k, v, 1, tc.W-1, tc.hd, tc.hd, ldk)
			if e := maxRelErr(out[h*tc.hd:(h+1)*tc.hd], want); e > 1e-5 {
				t.Errorf("group=%d W=%d hd=%d head %d: error %.2e", tc.group, tc.W, tc.hd, h, e)
			}
		}
	}
}

// TestAttentionBackwardMatchesNaive checks the packed GQA backward against
// float64 finite differences of Σ dout·out for a few elements of q, k, v.
func TestAttentionBackwardMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	lens := []int{3, 70, 9}
	const nH, nKV, hd = 4, 2, 4
	T, C, KV := 82, nH*hd, nKV*hd
	q, k, v, dout := randn(rng, T*C, 1), randn(rng, T*KV, 1), randn(rng, T*KV, 1), randn(rng, T*C, 1)
	out := make([]float32, T*C)
	AttentionForward(out, q, k, v, lens, nH, nKV, hd)
	dq, dk, dv := make([]float32, T*C), make([]float32, T*KV), make([]float32, T*KV)
	AttentionBackward(dq, dk, dv, dout, q, k, v, lens, nH, nKV, hd)

	// loss(q, k, v) = Σ dout·attention(q, k, v), in float64.
	loss := func() float64 {
		var s float64
		o := 0
		for _, L := range lens {
			for h := 0; h < nH; h++ {
				g := h / (nH / nKV)
				y, _ := naiveAttention(q[o*C+h*hd:], k[o*KV+g*hd:], v[o*KV+g*hd:], L, 0, hd, C, KV)
				for i := 0; i < L; i++ {
					for p := 0; p < hd; p++ {
						s += y[i*hd+p] * float64(dout[(o+i)*C+h*hd+p])
					}
				}
			}
			o += L
		}
		return s
	}
	for _, x := range []struct {
		name    string
		p, grad []float32
	}{{"q", q, dq}, {"k", k, dk}, {"v", v, dv}} {
		for trial := 0; trial < 8; trial++ {
			i := rng.IntN(len(x.p))
			old := x.p[i]
			const h = 1e-2
			x.p[i] = old + h
			lp := loss()
			x.p[i] = old - h
			lm := loss()
			x.p[i] = old
			fd := (lp - lm) / (2 * h)
			if math.Abs(fd-float64(x.grad[i])) > 2e-3*math.Max(1, math.Abs(fd)) {
				t.Errorf("d%s[%d]: backward %g, finite difference %g", x.name, i, x.grad[i], fd)
			}
		}
	}
}

func TestLogSoftmaxMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const N, V = 5, 300
	logits := randn(rng, N*V, 4)
	logits[7] = 80 // a large logit: max subtraction keeps it finite
	targets := []int{3, -1, 299, 0, 17}
	lse, lp, ent := make([]float32, N), make([]float32, N), make([]float32, N)
	LogSoftmaxForward(lse, lp, ent, logits, targets, N, V)
	a, b := randn(rng, N, 1), randn(rng, N, 1)
	dlogits := make([]float32, N*V)
	LogSoftmaxBackward(dlogits, logits, lse, ent, targets, a, b, N, V)
	for n := 0; n < N; n++ {
		z := logits[n*V : n*V+V]
		m := math.Inf(-1)
		for _, x := range z {
			m = math.Max(m, float64(x))
		}
		var s float64
		for _, x := range z {
			s += math.Exp(float64(x) - m)
		}
		l := m + math.Log(s)
		var h float64
		p := make([]float64, V)
		for j, x := range z {
			p[j] = math.Exp(float64(x) - l)
			h -= p[j] * (float64(x) - l)
		}
		wantLp := 0.0
		if targets[n] >= 0 {
			wantLp = float64(z[targets[n]]) - l
		}
		if math.Abs(float64(lp[n])-wantLp) > 1e-4 || math.Abs(float64(ent[n])-h) > 1e-4 {
			t.Errorf("row %d: logprob %g entropy %g, want %g %g", n, lp[n], ent[n], wantLp, h)
		}
		want := make([]float64, V)
		for j := range want {
			lpj := float64(z[j]) - l
			if targets[n] >= 0 {
				want[j] = -float64(a[n]) * p[j]
				if j == targets[n] {
					want[j] += float64(a[n])
				}
			}
			want[j] -= float64(b[n]) * p[j] * (lpj + h)
		}
		if e := maxRelErr(dlogits[n*V:n*V+V], want); e > 1e-4 {
			t.Errorf("row %d: dlogits error %.2e", n, e)
		}
	}
}

func TestRMSNormBackwardFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const N, C = 3, 10
	const eps = 1e-6
	x, w, dy := randn(rng, N*C, 1), randn(rng, C, 1), randn(rng, N*C, 1)
	y, rstd := make([]float32, N*C), make([]float32, N)
	RMSNormForward(y, rstd, x, w, N, C, eps)
	dx, dw := make([]float32, N*C), make([]float32, C)
	RMSNormBackward(dx, dw, dy, x, w, rstd, N, C)
	loss := func() float64 {
		var s float64
		for n := 0; n < N; n++ {
			var ss float64
			for c := 0; c < C; c++ {
				ss += float64(x[n*C+c]) * float64(x[n*C+c])
			}
			r := 1 / math.Sqrt(ss/C+eps)
			for c := 0; c < C; c++ {
				s += float64(dy[n*C+c]) * float64(x[n*C+c]) * r * float64(w[c])
			}
		}
		return s
	}
	for _, p := range []struct {
		name    string
		v, grad []float32
	}{{"x", x, dx}, {"w", w, dw}} {
		for i := range p.v {
			old := p.v[i]
			p.v[i] = old + 1e-3
			lp := loss()
			p.v[i] = old - 1e-3
			lm := loss()
			p.v[i] = old
			if fd := (lp - lm) / 2e-3; math.Abs(fd-float64(p.grad[i])) > 1e-3*math.Max(1, math.Abs(fd)) {
				t.Errorf("d%s[%d]: backward %g, finite difference %g", p.name, i, p.grad[i], fd)
			}
		}
	}
}

func TestRopeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const T, nH, hd, maxPos = 6, 2, 8, 32
	cos, sin := make([]float32, maxPos*hd/2), make([]float32, maxPos*hd/2)
	RopeTables(cos, sin, maxPos, hd, 10000)
	pos := []int{0, 1, 2, 31, 5, 0}
	x := randn(rng, T*nH*hd, 1)
	y := slices.Clone(x)
	RopeForward(y, cos, sin, pos, T, nH, hd)
	if !slices.Equal(y[:nH*hd], x[:nH*hd]) {
		t.Error("position 0 must be the identity")
	}
	// Rotation pairs (j, j+hd/2) by angle pos·θ^(−2j/hd).
	j, p := 1, 3
	a := float64(pos[p]) * math.Pow(10000, -2*float64(j)/hd)
	x1, x2 := float64(x[p*nH*hd+j]), float64(x[p*nH*hd+j+hd/2])
	if got, want := float64(y[p*nH*hd+j]), x1*math.Cos(a)-x2*math.Sin(a); math.Abs(got-want) > 1e-5 {
		t.Errorf("rotated element %g, want %g", got, want)
	}
	RopeBackward(y, cos, sin, pos, T, nH, hd)
	for i := range x {
		if math.Abs(float64(y[i]-x[i])) > 1e-5 {
			t.Fatalf("backward is not the inverse rotation at %d: %g vs %g", i, y[i], x[i])
		}
	}
}

// TestMaxOfSumOf checks the unrolled reductions against plain loops for
// lengths around their blocks of four.
func TestMaxOfSumOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for n := 1; n <= 11; n++ {
		x := randn(rng, n, 1)
		m, s := x[0], 0.0
		for _, v := range x {
			m = max(m, v)
			s += float64(v)
		}
		if got := maxOf(x); got != m {
			t.Errorf("n=%d: maxOf = %v, want %v", n, got, m)
		}
		if got := sumOf(x); math.Abs(float64(got)-s) > 1e-5 {
			t.Errorf("n=%d: sumOf = %v, want %v", n, got, s)
		}
	}
}

// TestRopeHeadMatchesRopeForward: one head rotated out of place gives the
// bits RopeForward gives in place, and leaves its source alone.
func TestRopeHeadMatchesRopeForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const T, nH, hd, maxPos = 3, 3, 16, 40
	cos, sin := make([]float32, maxPos*hd/2), make([]float32, maxPos*hd/2)
	RopeTables(cos, sin, maxPos, hd, 10000)
	pos := []int{7, 0, 39}
	x := randn(rng, T*nH*hd, 1)
	want := slices.Clone(x)
	RopeForward(want, cos, sin, pos, T, nH, hd)
	got := make([]float32, len(x))
	src := slices.Clone(x)
	for r, p := range pos {
		for h := 0; h < nH; h++ {
			at := (r*nH + h) * hd
			RopeHead(got[at:at+hd], src[at:at+hd], cos[p*hd/2:(p+1)*hd/2], sin[p*hd/2:(p+1)*hd/2])
		}
	}
	if !slices.Equal(got, want) {
		t.Error("RopeHead differs from RopeForward")
	}
	if !slices.Equal(src, x) {
		t.Error("RopeHead changed its source")
	}
}

// TestSwiGLURowsMatchesNaive checks the fused-layout activation against the
// float64 formula on rows of [gate | up], I not a multiple of the exp block.
func TestSwiGLURowsMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const N, I = 5, 300
	gu := randn(rng, N*2*I, 3)
	out := make([]float32, N*I)
	SwiGLURows(out, gu, N, I)
	for n := 0; n < N; n++ {
		for i := 0; i < I; i++ {
			g, u := float64(gu[2*n*I+i]), float64(gu[(2*n+1)*I+i])
			want := g / (1 + math.Exp(-g)) * u
			if got := float64(out[n*I+i]); math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Fatalf("row %d, element %d: %g, want %g", n, i, got, want)
			}
		}
	}
}

// TestReductionsIndependentOfGOMAXPROCS runs the kernels that reduce over
// rows with 1 and 2 threads and requires identical bits.
func TestReductionsIndependentOfGOMAXPROCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	const N, C, V = 700, 96, 50
	x, w, dy := randn(rng, N*C, 1), randn(rng, C, 1), randn(rng, N*C, 1)
	tokens := make([]int, N)
	for i := range tokens {
		tokens[i] = rng.IntN(V)
	}
	run := func(procs int) []float32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		y, rstd := make([]float32, N*C), make([]float32, N)
		RMSNormForward(y, rstd, x, w, N, C, 1e-6)
		dx, dw, db, dwte := make([]float32, N*C), make([]float32, C), make([]float32, C), make([]float32, V*C)
		RMSNormBackward(dx, dw, dy, x, w, rstd, N, C)
		ColumnSum(db, dy, N, C)
		EmbeddingBackward(dwte, dy, tokens, N, C)
		return slices.Concat(y, dx, dw, db, dwte)
	}
	if !slices.Equal(run(1), run(2)) {
		t.Error("results differ between GOMAXPROCS=1 and 2")
	}
}

func TestSwiGLUBackwardFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 300 // more than one exp block
	gate, up, dout := randn(rng, n, 3), randn(rng, n, 1), randn(rng, n, 1)
	out := make([]float32, n)
	SwiGLUForward(out, gate, up, n)
	dgate, dup := make([]float32, n), make([]float32, n)
	SwiGLUBackward(dgate, dup, dout, gate, up, n)
	f := func(g, u float64) float64 { return g / (1 + math.Exp(-g)) * u }
	for i := 0; i < n; i++ {
		g, u := float64(gate[i]), float64(up[i])
		if want := f(g, u); math.Abs(float64(out[i])-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Fatalf("out[%d] = %g, want %g", i, out[i], want)
		}
		const h = 1e-4
		dg := float64(dout[i]) * (f(g+h, u) - f(g-h, u)) / (2 * h)
		du := float64(dout[i]) * g / (1 + math.Exp(-g))
		if math.Abs(float64(dgate[i])-dg) > 1e-4*math.Max(1, math.Abs(dg)) || math.Abs(float64(dup[i])-du) > 1e-5*math.Max(1, math.Abs(du)) {
			t.Fatalf("element %d: dgate %g dup %g, want %g %g", i, dgate[i], dup[i], dg, du)
		}
	}
}

// TestLogSoftmaxRowsInterleaved checks LogSoftmaxForward, whose rows go
// four at a time with their sums interleaved, bit for bit against one row
// at a time with the sums in index order, for row counts that leave
// groups of four and single rows, a vocabulary that is no multiple of
// the exp block, and rows of ties, signed zeros and a huge logit.
func TestLogSoftmaxRowsInterleaved(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const V = 3*expBlock + 37
	for _, N := range []int{1, 3, 4, 9, 14} {
		logits := randn(rng, N*V, 3)
		if N > 2 {
			clear(logits[V : 2*V]) // a row of ties
			logits[V+5] = float32(math.Copysign(0, -1))
			logits[2*V+V-1] = 90
		}
		targets := make([]int, N)
		for n := range targets {
			targets[n] = rng.IntN(V+1) - 1
		}
		lse, lp, ent := make([]float32, N), make([]float32, N), make([]float32, N)
		LogSoftmaxForward(lse, lp, ent, logits, targets, N, V)
		for n := range N {
			z := logits[n*V : n*V+V]
			m := z[0]
			for _, v := range z[1:] {
				m = max(m, v)
			}
			// The code before decision 54, one row at a time.
			var s, u float32
			var e [expBlock]float32
			for b := 0; b < V; b += expBlock {
				c := min(expBlock, V-b)
				for j := 0; j < c; j++ {
					e[j] = z[b+j] - m
				}
				expInPlace(e[:c])
				for j := 0; j < c; j++ {
					s += e[j]
					u += e[j] * (z[b+j] - m)
				}
			}
			ls := float32(math.Log(float64(s)))
			wantLse, wantEnt, wantLp := m+ls, ls-u/s, float32(0)
			if targets[n] >= 0 {
				wantLp = z[targets[n]] - wantLse
			}
			if math.Float32bits(lse[n]) != math.Float32bits(wantLse) || math.Float32bits(ent[n]) != math.Float32bits(wantEnt) || math.Float32bits(lp[n]) != math.Float32bits(wantLp) {
				t.Errorf("N=%d row %d: lse %v, entropy %v, logprob %v; one row in order gives %v, %v, %v", N, n, lse[n], ent[n], lp[n], wantLse, wantEnt, wantLp)
			}
		}
	}
}

// BenchmarkLogSoftmaxForward is the LM head's log-softmax over Qwen2.5's
// vocabulary, 16 rows a call.
func BenchmarkLogSoftmaxForward(b *testing.B) {
	const N, V = 16, 151936
	rng := rand.New(rand.NewPCG(1, 1))
	logits := randn(rng, N*V, 3)
	targets := make([]int, N)
	lse, lp, ent := make([]float32, N), make([]float32, N), make([]float32, N)
	b.SetBytes(N * V * 4)
	for b.Loop() {
		LogSoftmaxForward(lse, lp, ent, logits, targets, N, V)
	}
}

// TestAttentionForwardPrefixedMatchesWhole: sequences whose first keys and
// values are another's rows (a chain of two, a prefix ending inside the
// other's own rows, a sequence of 2 rows of its own) get the bits
// AttentionForward gives the whole sequences.
func TestAttentionForwardPrefixedMatchesWhole(t *testing.T) {
	const nH, nKV, hd = 4, 2, 16
	C, KV := nH*hd, nKV*hd
	rng := rand.New(rand.NewPCG(8, 9))
	// The whole batch: sequences of 200, 210, 130 and 90 rows; 1 shares
	// 128 positions with 0, 2 shares 192 with 1 (so 0's rows, then
	// 1's own), 3 shares none.
	whole := []int{200, 210, 130 + 64, 90}
	past := []int{0, 128, 192, 0}
	T := 0
	for _, L := range whole {
		T += L
	}
	q, k, v := randn(rng, T*C, 1), randn(rng, T*KV, 1), randn(rng, T*KV, 1)
	// Make the shared rows equal, as the computation would.
	o1, o2 := whole[0], whole[0]+whole[1]
	copy(k[o1*KV:(o1+128)*KV], k[:128*KV])
	copy(v[o1*KV:(o1+128)*KV], v[:128*KV])
	copy(k[o2*KV:(o2+192)*KV], k[o1*KV:(o1+192)*KV])
	copy(v[o2*KV:(o2+192)*KV], v[o1*KV:(o1+192)*KV])
	want := make([]float32, T*C)
	AttentionForward(want, q, k, v, whole, nH, nKV, hd)

	// The computed rows: each sequence without its shared positions.
	var keep, lens, keyRows []int
	o := 0
	for s, L := range whole {
		for i := past[s]; i < L; i++ {
			keep = append(keep, o+i)
		}
		lens = append(lens, L-past[s])
		o += L
	}
	rowOf := make([]int, T) // batch row → computed row
	for r, b := range keep {
		rowOf[b] = r
	}
	for i := range 128 {
		rowOf[o1+i] = rowOf[i]
	}
	for i := range 192 {
		rowOf[o2+i] = rowOf[o1+i]
	}
	keyRows = rowOf
	gather := func(x []float32, w int) []float32 {
		y := make([]float32, len(keep)*w)
		for r, b := range keep {
			copy(y[r*w:(r+1)*w], x[b*w:(b+1)*w])
		}
		return y
	}
	out := make([]float32, len(keep)*C)
	AttentionForwardPrefixed(out, gather(q, C), gather(k, KV), gather(v, KV), lens, past, keyRows, nH, nKV, hd)
	for r, b := range keep {
		for j := range C {
			if math.Float32bits(out[r*C+j]) != math.Float32bits(want[b*C+j]) {
				t.Fatalf("row %d (batch row %d) column %d: %v, whole %v", r, b, j, out[r*C+j], want[b*C+j])
			}
		}
	}
}
