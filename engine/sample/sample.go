package sample

import (
	"fmt"
	"math"
	"slices"

	"github.com/ragen-go/ragen/engine/vmath"
)

// Options selects how a token is drawn. The zero value is greedy decoding.
type Options struct {
	// Temperature divides the logits before filtering; 0 = greedy (argmax).
	// Must be ≥ 0 and finite. HF's default is 1.
	Temperature float32
	// TopK keeps the TopK most likely tokens (ties at the cut-off kept);
	// 0 = off. Must be ≥ 0; TopK ≥ vocabulary size is off too.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP (nucleus sampling); 0 or 1 = off. Must be in [0, 1].
	TopP float32
}

// Validate reports the first invalid field, by its config name.
func (o Options) Validate() error {
	if t := float64(o.Temperature); !(t >= 0) {
		return fmt.Errorf("temperature: must be >= 0 (got %v)", o.Temperature)
	} else if math.IsInf(t, 1) {
		return fmt.Errorf("temperature: must be finite (got %v)", o.Temperature)
	}
	if o.TopK < 0 {
		return fmt.Errorf("top_k: must be >= 0 (got %d)", o.TopK)
	}
	if p := float64(o.TopP); math.IsNaN(p) || p < 0 || p > 1 {
		return fmt.Errorf("top_p: must be in [0, 1] (got %v)", o.TopP)
	}
	return nil
}

// Check reports a row of logits that cannot give a meaningful distribution:
// empty, containing NaN or +Inf (an overflow upstream), or all -Inf. Sample
// itself never fails on such rows (see the package doc); callers that would
// rather stop call Check first.
func Check(logits []float32) error {
	if len(logits) == 0 {
		return fmt.Errorf("logits: empty row")
	}
	finite := false
	for i, v := range logits {
		switch {
		case v != v:
			return fmt.Errorf("logits: NaN at token %d", i)
		case math.IsInf(float64(v), 1):
			return fmt.Errorf("logits: +Inf at token %d", i)
		case !math.IsInf(float64(v), -1):
			finite = true
		}
	}
	if !finite {
		return fmt.Errorf("logits: every one of the %d tokens is -Inf", len(logits))
	}
	return nil
}

// Sampler draws tokens from rows of logits. It keeps its scratch buffers
// between calls (no allocation once they have grown to the vocabulary
// size); the zero value is ready to use. Not safe for concurrent use: give
// each goroutine its own.
type Sampler struct {
	x    []float32 // (V) logits / temperature, NaN → -Inf
	cand []int32   // (≤V) token ids still in the running, ascending; unused when all are
	p    []float64 // (≤V) exp(x - max) of each candidate, unnormalised, then their prefix sums
	heap []int32   // (≤V) positions into cand: the top-p max-heap
	kth  []float32 // (k) top-k min-heap of values
}

// expBlock is how many numerators Sample computes at a time, exponential and
// prefix sums together while they are in the L1 cache (8 KB of float64s).
const expBlock = 1024

// Sample returns the next token id for one row of logits (length V, the
// vocabulary); it does not modify logits. It takes exactly one draw from rng
// when rng is non-nil (greedy decoding ignores it and accepts nil; sampling
// with a nil rng uses u = 0, the lowest kept token id).
// Options are assumed valid (see Validate); out-of-range values degrade to
// greedy / off. An empty row returns -1; a row with no finite logit returns
// token 0.
func (s *Sampler) Sample(logits []float32, o Options, rng *RNG) int {
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
	m, all := s.scale(logits, o.Temperature)
	if o.TopK > 0 && o.TopK < len(s.x) {
		all = false
		s.topK(o.TopK)
	} else if !all {
		s.finite()
	}
	n := len(s.x)
	if !all {
		n = len(s.cand)
	}
	if n == 0 {
		return 0
	}
	// id is the token id of candidate j.
	id := func(j int) int {
		if all {
			return j
		}
		return int(s.cand[j])
	}

	// Softmax numerators in float64 over the candidates, p_j = exp(x_j - m)
	// with m the largest x, a block at a time; then their prefix sums
	// c_j = p_0 + … + p_j, added in order as a running sum (the sum of the
	// draw below, so it must not be reassociated). Top-p needs every p_j
	// before it sums.
	s.p = slices.Grow(s.p[:0], n)[:n]
	nucleus := o.TopP > 0 && o.TopP < 1 && n > 1
	var c float64
	last := 0 // the last candidate with p_j ≠ 0 (one has p_j = 1)
	for lo := 0; lo < n; lo += expBlock {
		blk := s.p[lo:min(lo+expBlock, n)]
		if all {
			vmath.ExpShifted(blk, s.x[lo:lo+len(blk)], float64(m))
		} else {
			for j, i := range s.cand[lo : lo+len(blk)] {
				blk[j] = float64(s.x[i]) - float64(m)
			}
			vmath.Exp(blk)
		}
		if !nucleus {
			c, last = prefixSums(blk, lo, c, last)
		}
	}
	if nucleus {
		s.nucleus(float64(o.TopP))
		c, last = prefixSums(s.p, 0, 0, 0)
	}
	return id(draw(s.p, u*c, last))
}

// prefixSums replaces p[j] by c + p[0] + … + p[j], summed in order, and
// returns the last sum and the position, offset + j, of the last nonzero
// p[j] (or last when there is none).
func prefixSums(p []float64, offset int, c float64, last int) (float64, int) {
	for j, q := range p {
		if q != 0 {
			last = offset + j
		}
		c += q
		p[j] = c
	}
	return c, last
}

// draw inverts the CDF of the candidates in ascending token id: given the
// prefix sums c of their masses (p_j ≥ 0) and t = u·c_n in [0, c_n], the
// first candidate j with t < c_j, found by binary search as c is
// non-decreasing. That c_j exceeds c_{j-1} ≤ t, so p_j ≠ 0: it is the
// candidate a walk adding up the nonzero masses in order stops at. No
// candidate qualifies when t = c_n, which u < 1 never gives (u·c_n rounds
// below c_n); the walk drew the last one with mass then, and so does draw.
func draw(c []float64, t float64, last int) int {
	j, _ := slices.BinarySearchFunc(c, t, func(c, t float64) int {
		if c <= t {
			return -1
		}
		return 1
	})
	if j == len(c) {
		return last
	}
	return j
}

// argmax returns the index of the largest logit, the lowest index on ties;
// NaN never wins; a row of NaN gives 0.
func argmax(logits []float32) int {
	best := -1
	for i, v := range logits {
		if v == v && (best < 0 || v > logits[best]) {
			best = i
		}
	}
	return max(best, 0)
}

// scale fills s.x with logits / T, NaN as -Inf, and returns the largest
// (-Inf when there is none; of equal zeros, the first: the numerators
// x - m are the same whatever zero m is) and whether every value is
// finite. If some entries are +Inf the limit distribution is uniform over
// them: they become 0, the rest -Inf.
func (s *Sampler) scale(logits []float32, temp float32) (m float32, finite bool) {
	s.x = slices.Grow(s.x[:0], len(logits))[:len(logits)]
	x := s.x[:len(logits)]
	negInf := float32(math.Inf(-1))
	m = negInf
	nonFinite := false
	// Dividing by a power of two is multiplying by its reciprocal, which is
	// exact: both round the same real number once. The default
	// temperatures (1 for rollouts, 0.5 for validation) are.
	recip, exact := reciprocal(temp)
	for i, v := range logits {
		if exact {
			v *= recip
		} else {
			v /= temp
		}
		if v-v != 0 { // NaN or ±Inf
			nonFinite = true
			if v != v {
				v = negInf
			}
		}
		if v > m { // not max(m, v): its handling of NaN and ±0 makes a chain ~10 cycles long
			m = v
		}
		x[i] = v
	}
	if !nonFinite {
		return m, true
	}
	if !math.IsInf(float64(m), 1) {
		return m, false
	}
	for i, v := range x {
		if math.IsInf(float64(v), 1) {
			x[i] = 0
		} else {
			x[i] = negInf
		}
	}
	return 0, false
}

// reciprocal returns 1/t and whether it is exact: t a normal power of two
// (1/t is then representable, if as a subnormal for t = 2¹²⁷).
func reciprocal(t float32) (float32, bool) {
	b := math.Float32bits(t)
	e := b >> 23 & 0xff
	return 1 / t, b&0x7fffff == 0 && e > 0 && e < 0xff
}

// topK fills s.cand with the ids, ascending, of the tokens that survive
// top-k: the finite ones at least the k-th largest value, found with a
// size-k min-heap (O(V log k), no sort of the vocabulary).
func (s *Sampler) topK(k int) {
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
	s.keep(h[0])
}

// finite fills s.cand with the ids, ascending, of the finite tokens.
func (s *Sampler) finite() { s.keep(float32(math.Inf(-1))) }

// keep fills s.cand with the ids, ascending, of the tokens with a value
// ≥ thr other than -Inf.
func (s *Sampler) keep(thr float32) {
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
func (s *Sampler) nucleus(p float64) {
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

func siftUpMin(h []float32, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent] <= h[i] {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func siftDownMin(h []float32, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && h[r] < h[l] {
			c = r
		}
		if h[i] <= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// siftDown restores the max-heap of positions h keyed by (p desc, position
// asc) below i.
func siftDown(h []int32, i int, p []float64) {
	before := func(a, b int32) bool { return p[a] > p[b] || (p[a] == p[b] && a < b) }
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && before(h[r], h[l]) {
			c = r
		}
		if !before(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
