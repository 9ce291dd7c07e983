package sample

import (
	"fmt"
	"math"
	"slices"
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

// scale fills s.x with logits / T, NaN as -Inf. If some entries are +Inf
// the limit distribution is uniform over them: they become 0, the rest -Inf.
func (s *Sampler) scale(logits []float32, temp float32) {
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
func (s *Sampler) candidates(k int) {
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
