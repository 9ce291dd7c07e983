package sample

// This file keeps Sampler as it was before its numerators went through
// vmath.Exp and its draw through a binary search over prefix sums (decision
// 47), verbatim but for its name, as the oracle of
// TestSameTokensAsBefore: the new code must draw the same token from every
// row, with every option.

import (
	"math"
	"slices"
	"testing"
)

// refSampler draws tokens from rows of logits. It keeps its scratch buffers
// between calls (no allocation once they have grown to the vocabulary
// size); the zero value is ready to use. Not safe for concurrent use: give
// each goroutine its own.
type refSampler struct {
	x    []float32 // (V) logits / temperature, NaN → -Inf
	cand []int32   // (≤V) token ids still in the running, ascending
	p    []float64 // (≤V) exp(x - max) of each candidate, unnormalised
	heap []int32   // (≤V) positions into cand: the top-p max-heap
	kth  []float32 // (k) top-k min-heap of values
}

// Sample returns the next token id for one row of logits (length V, the
// vocabulary); it does not modify logits. It takes exactly one draw from rng
// when rng is non-nil (greedy decoding ignores it and accepts nil; sampling
// with a nil rng uses u = 0, the lowest kept token id).
// Options are assumed valid (see Validate); out-of-range values degrade to
// greedy / off. An empty row returns -1; a row with no finite logit returns
// token 0.
func (s *refSampler) Sample(logits []float32, o Options, rng *RNG) int {
	var u float64
	if rng != nil {
		u = rng.Float64()
	}
	if len(logits) == 0 {
		return -1
	}
	if !(o.Temperature > 0) || math.IsInf(float64(o.Temperature), 1) {
		return argmax(logits)
	}
	s.scale(logits, o.Temperature)
	s.candidates(o.TopK)
	if len(s.cand) == 0 {
		return 0
	}

	// Softmax numerators in float64 over the candidates: p_j = exp(x_j - max).
	m := float32(math.Inf(-1))
	for _, i := range s.cand {
		m = max(m, s.x[i])
	}
	s.p = s.p[:0]
	for _, i := range s.cand {
		s.p = append(s.p, math.Exp(float64(s.x[i])-float64(m)))
	}

	if o.TopP > 0 && o.TopP < 1 && len(s.cand) > 1 {
		s.nucleus(float64(o.TopP))
	}

	// Inverse CDF over the kept candidates in ascending token id.
	var z float64
	for _, q := range s.p {
		z += q
	}
	t := u * z
	var c float64
	last := 0
	for j, q := range s.p {
		if q == 0 {
			continue
		}
		c += q
		last = j
		if t < c {
			return int(s.cand[j])
		}
	}
	return int(s.cand[last]) // u·z rounded up to z: the last token with mass
}

// scale fills s.x with logits / T, NaN as -Inf. If some entries are +Inf
// the limit distribution is uniform over them: they become 0, the rest -Inf.
func (s *refSampler) scale(logits []float32, temp float32) {
	s.x = slices.Grow(s.x[:0], len(logits))[:len(logits)]
	inf := false
	for i, v := range logits {
		v /= temp
		if v != v {
			v = float32(math.Inf(-1))
		}
		inf = inf || math.IsInf(float64(v), 1)
		s.x[i] = v
	}
	if !inf {
		return
	}
	for i, v := range s.x {
		if math.IsInf(float64(v), 1) {
			s.x[i] = 0
		} else {
			s.x[i] = float32(math.Inf(-1))
		}
	}
}

// candidates fills s.cand with the ids, ascending, of the tokens that
// survive top-k (all finite ones when k is off). The k-th largest value is
// found with a size-k min-heap: O(V log k), no sort of the vocabulary.
func (s *refSampler) candidates(k int) {
	thr := float32(math.Inf(-1))
	if k > 0 && k < len(s.x) {
		h := s.kth[:0]
		for _, v := range s.x {
			switch {
			case len(h) < k:
				h = append(h, v)
				siftUpMin(h, len(h)-1)
			case v > h[0]:
				h[0] = v
				siftDownMin(h, 0)
			}
		}
		s.kth = h
		thr = h[0]
	}
	s.cand = s.cand[:0]
	for i, v := range s.x {
		if v >= thr && !math.IsInf(float64(v), -1) {
			s.cand = append(s.cand, int32(i))
		}
	}
}

// nucleus applies top-p to the candidates: it pops them from a max-heap by
// probability (ties: lower id first) until the popped mass reaches p·z, so
// only the kept tokens are ordered, and then zeroes the mass of the others.
// A token is kept when the mass popped before it is < p·z; the first one
// always is.
func (s *refSampler) nucleus(p float64) {
	var z float64
	for _, q := range s.p {
		z += q
	}
	h := s.heap[:0]
	for j := range s.p {
		h = append(h, int32(j))
	}
	for j := len(h)/2 - 1; j >= 0; j-- {
		siftDown(h, j, s.p)
	}
	target := p * z
	var mass float64
	n := len(h)
	for n > 0 && mass < target {
		top := h[0]
		mass += s.p[top]
		n--
		h[0], h[n] = h[n], top // popped positions collect at the end
		siftDown(h[:n], 0, s.p)
	}
	for _, j := range h[:n] { // the tail that did not make the nucleus
		s.p[j] = 0
	}
	s.heap = h
}

// TestSameTokensAsBefore draws from rows of many kinds with every option
// and checks that Sampler gives the token refSampler (the code before)
// gives, from the same RNG state, and leaves the RNG where it does: rows
// of random logits at several scales, of small integers (ties), with -Inf,
// NaN and +Inf among them, with values far below the maximum (numerators
// that underflow, and blocks the vector exponential leaves to the scalar
// code), rows of one token, and rows of Qwen2.5's vocabulary size.
func TestSameTokensAsBefore(t *testing.T) {
	var s Sampler
	var ref refSampler
	gen := NewRNG(2024)
	inf := float32(math.Inf(1))
	temps := []float32{1, 0.5, 2, 0.7, 1.3, 0.25, 1e-3, 1e-30, 3e-39, 1e30}
	for trial := range 3000 {
		n := 1 + int(gen.Uint64()%3000)
		switch trial % 100 {
		case 0:
			n = 151936
		case 1:
			n = 1
		}
		row := make([]float32, n)
		scale := []float32{0.01, 1, 4, 30, 1e3, 1e6}[gen.Uint64()%6]
		kind := gen.Uint64() % 5
		for i := range row {
			switch kind {
			case 0, 1:
				row[i] = scale * (gen.Float32() - 0.5)
			case 2:
				row[i] = float32(int(gen.Uint64()%9)) - 4
			case 3: // mostly far below one large value
				row[i] = -scale * 100 * gen.Float32()
			case 4:
				row[i] = scale * float32(gen.Uint64()%3)
			}
			switch gen.Uint64() % 97 {
			case 0:
				row[i] = -inf
			case 1:
				if trial%3 == 0 {
					row[i] = float32(math.NaN())
				}
			case 2:
				if trial%7 == 0 {
					row[i] = inf
				}
			case 3:
				row[i] = -3e38
			}
		}
		o := Options{
			Temperature: temps[gen.Uint64()%uint64(len(temps))],
			TopK:        []int{0, 0, 1, 2, 5, 50, n - 1, n, n + 3}[gen.Uint64()%9],
			TopP:        []float32{0, 0, 1, 0.1, 0.5, 0.9, 0.999}[gen.Uint64()%7],
		}
		r1, r2 := NewRNG(uint64(trial)), NewRNG(uint64(trial))
		for range 3 {
			got, want := s.Sample(row, o, r1), ref.Sample(row, o, r2)
			if got != want || *r1 != *r2 {
				t.Fatalf("trial %d (n %d, kind %d, %+v): token %d, before %d", trial, n, kind, o, got, want)
			}
			// The masses too, bit for bit: a token moves only when the
			// draw falls between two differing sums, which a change of an
			// ulp seldom makes happen.
			if o.Temperature > 0 && len(ref.p) > 0 {
				c, _ := prefixSums(slices.Clone(ref.p), 0, 0, 0)
				if len(s.p) != len(ref.p) || math.Float64bits(s.p[len(s.p)-1]) != math.Float64bits(c) {
					t.Fatalf("trial %d (n %d, kind %d, %+v): %d masses summing to %v, before %d summing to %v",
						trial, n, kind, o, len(s.p), s.p[len(s.p)-1], len(ref.p), c)
				}
			}
		}
	}
}

// TestDrawMatchesWalk compares draw, a binary search over prefix sums,
// with the walk it replaced, on masses with zeros (underflowed or cut by
// top-p), masses too small to change the running sum, and t = u·z for u
// near 0 and 1, and t = z, where the walk falls back to the last token
// with mass (u·z < z for every u < 1, but the walk guards against it).
func TestDrawMatchesWalk(t *testing.T) {
	gen := NewRNG(7)
	walk := func(p []float64, t float64) int {
		var c float64
		last := 0
		for j, q := range p {
			if q == 0 {
				continue
			}
			c += q
			last = j
			if t < c {
				return j
			}
		}
		return last
	}
	for trial := range 20000 {
		n := 1 + int(gen.Uint64()%20)
		p := make([]float64, n)
		for j := range p {
			switch gen.Uint64() % 4 {
			case 0:
				p[j] = 0
			case 1:
				p[j] = 1e-20 // absorbed by a sum near 1
			default:
				p[j] = gen.Float64()
			}
		}
		p[gen.Uint64()%uint64(n)] = 1
		c := append([]float64(nil), p...)
		z, last := prefixSums(c, 0, 0, 0)
		for _, t2 := range []float64{0, gen.Float64() * z, (1 - 0x1p-53) * z, 0.5 * z, z} {
			if got, want := draw(c, t2, last), walk(p, t2); got != want {
				t.Fatalf("trial %d: p %v t %v: draw %d, walk %d", trial, p, t2, got, want)
			}
		}
	}
}
