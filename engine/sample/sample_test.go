package sample

import (
	"math"
	"slices"
	"sort"
	"testing"
)

// refProbs is the naive oracle: the full distribution Sample draws from,
// computed the obvious way (full sort, float64 throughout).
func refProbs(logits []float32, o Options) []float64 {
	n := len(logits)
	x := make([]float64, n)
	for i, v := range logits {
		x[i] = float64(v / o.Temperature)
		if math.IsNaN(x[i]) {
			x[i] = math.Inf(-1)
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return x[order[a]] > x[order[b]] })
	keep := make([]bool, n)
	for _, i := range order {
		keep[i] = !math.IsInf(x[i], -1)
	}
	if o.TopK > 0 && o.TopK < n {
		thr := x[order[o.TopK-1]]
		for i := range keep {
			keep[i] = keep[i] && x[i] >= thr
		}
	}
	p := make([]float64, n)
	m := math.Inf(-1)
	for i := range x {
		if keep[i] {
			m = math.Max(m, x[i])
		}
	}
	var z float64
	for i := range x {
		if keep[i] {
			p[i] = math.Exp(x[i] - m)
			z += p[i]
		}
	}
	for i := range p {
		p[i] /= z
	}
	if o.TopP > 0 && o.TopP < 1 {
		var before float64
		for _, i := range order {
			if !keep[i] {
				continue
			}
			if before >= float64(o.TopP) {
				p[i] = 0
			}
			before += p[i]
		}
		var z float64
		for _, q := range p {
			z += q
		}
		for i := range p {
			p[i] /= z
		}
	}
	return p
}

func logs(p ...float64) []float32 {
	out := make([]float32, len(p))
	for i, q := range p {
		out[i] = float32(math.Log(q))
	}
	return out
}

func TestGreedy(t *testing.T) {
	var s Sampler
	cases := []struct {
		logits []float32
		want   int
	}{
		{[]float32{0.1, 3, -2, 2.9}, 1},
		{[]float32{5, 1, 5}, 0}, // tie: lowest index
		{[]float32{float32(math.NaN()), -1, -3}, 1},
		{[]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, 0},
		{[]float32{1, float32(math.Inf(1)), float32(math.Inf(1))}, 1},
	}
	for _, c := range cases {
		if got := s.Sample(c.logits, Options{}, nil); got != c.want {
			t.Errorf("greedy %v = %d, want %d", c.logits, got, c.want)
		}
	}
	if got := s.Sample(nil, Options{Temperature: 1}, NewRNG(1)); got != -1 {
		t.Errorf("empty row: got %d, want -1", got)
	}
}

func TestTopK1IsGreedy(t *testing.T) {
	var s Sampler
	rng := NewRNG(7)
	row := make([]float32, 500)
	for trial := 0; trial < 200; trial++ {
		for i := range row {
			row[i] = 4 * (rng.Float32() - 0.5)
		}
		want := s.Sample(row, Options{}, nil)
		if got := s.Sample(row, Options{Temperature: 1.3, TopK: 1}, rng); got != want {
			t.Fatalf("trial %d: top-k 1 gave %d, greedy %d", trial, got, want)
		}
	}
}

func TestSampleDoesNotModifyLogits(t *testing.T) {
	row := []float32{1, float32(math.NaN()), 3, float32(math.Inf(-1)), 2}
	keep := slices.Clone(row)
	var s Sampler
	s.Sample(row, Options{Temperature: 0.7, TopK: 2, TopP: 0.9}, NewRNG(1))
	for i := range row {
		if math.Float32bits(row[i]) != math.Float32bits(keep[i]) {
			t.Fatalf("logits[%d] changed: %v → %v", i, keep[i], row[i])
		}
	}
}

// TestMatchesOracle draws from random rows under random options and checks
// that each token is the one the naive oracle's inverse CDF gives for the
// same uniform draw.
func TestMatchesOracle(t *testing.T) {
	var s Sampler
	gen := NewRNG(99)
	rng := NewRNG(3)
	for trial := 0; trial < 2000; trial++ {
		n := 1 + int(gen.Uint64()%40)
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(int(gen.Uint64()%9)) - 4 // small integers: many ties
			if gen.Uint64()%13 == 0 {
				row[i] = float32(math.Inf(-1))
			}
		}
		row[gen.Uint64()%uint64(n)] = 1 // at least one finite logit
		o := Options{
			Temperature: []float32{0.5, 1, 2}[gen.Uint64()%3],
			TopK:        int(gen.Uint64() % 6),
			TopP:        []float32{0, 0.3, 0.6, 0.9, 1}[gen.Uint64()%5],
		}
		peek := *rng
		u := peek.Float64()
		got := s.Sample(row, o, rng)
		p := refProbs(row, o)
		want, c := -1, 0.0
		for i, q := range p {
			if q == 0 {
				continue
			}
			c += q
			want = i
			if u < c {
				break
			}
		}
		if got != want {
			t.Fatalf("trial %d: row %v %+v u=%v: got %d, oracle %d (probs %v)", trial, row, o, u, got, want, p)
		}
		if *rng != peek {
			t.Fatalf("trial %d: Sample did not take exactly one draw", trial)
		}
	}
}

// TestDistribution checks the empirical frequencies against the exact
// filtered distribution with a chi-square test (fixed seeds: the test is
// deterministic; the bound is the 0.1% critical value).
func TestDistribution(t *testing.T) {
	base := logs(0.1, 0.2, 0.3, 0.4)
	norm := func(p ...float64) []float64 {
		var z float64
		for _, q := range p {
			z += q
		}
		for i := range p {
			p[i] /= z
		}
		return p
	}
	cases := []struct {
		name string
		o    Options
		want []float64
	}{
		{"t1", Options{Temperature: 1}, []float64{0.1, 0.2, 0.3, 0.4}},
		{"t2", Options{Temperature: 2}, norm(math.Sqrt(.1), math.Sqrt(.2), math.Sqrt(.3), math.Sqrt(.4))},
		{"t0.5", Options{Temperature: 0.5}, norm(.01, .04, .09, .16)},
		{"topk2", Options{Temperature: 1, TopK: 2}, norm(0, 0, .3, .4)},
		{"topp0.35", Options{Temperature: 1, TopP: 0.35}, []float64{0, 0, 0, 1}},
		{"topp0.5", Options{Temperature: 1, TopP: 0.5}, norm(0, 0, .3, .4)},
		{"topp0.75", Options{Temperature: 1, TopP: 0.75}, norm(0, .2, .3, .4)},
		{"topk3+topp0.6", Options{Temperature: 1, TopK: 3, TopP: 0.6}, norm(0, 0, .3, .4)}, // p renormalised over top-3: .4/.9 < .6
		{"topk3+topp0.4", Options{Temperature: 1, TopK: 3, TopP: 0.4}, []float64{0, 0, 0, 1}},
	}
	var s Sampler
	const draws = 40000
	for ci, c := range cases {
		rng := NewRNG(uint64(1000 + ci))
		count := make([]int, len(base))
		for i := 0; i < draws; i++ {
			count[s.Sample(base, c.o, rng)]++
		}
		var chi2 float64
		df := -1
		for i, p := range c.want {
			if p == 0 {
				if count[i] != 0 {
					t.Errorf("%s: token %d drawn %d times, want never", c.name, i, count[i])
				}
				continue
			}
			e := p * draws
			chi2 += (float64(count[i]) - e) * (float64(count[i]) - e) / e
			df++
		}
		crit := []float64{0, 10.83, 13.82, 16.27}[max(df, 0)]
		if chi2 > crit {
			t.Errorf("%s: counts %v, want probs %v: chi² %.2f > %.2f (df %d)", c.name, count, c.want, chi2, crit, df)
		}
	}
}

func TestTopKKeepsTies(t *testing.T) {
	// HF's TopKLogitsWarper keeps every token tied with the k-th value.
	var s Sampler
	rng := NewRNG(5)
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		seen[s.Sample([]float32{1, 2, 2, 0}, Options{Temperature: 1, TopK: 1}, rng)] = true
	}
	if !seen[1] || !seen[2] || seen[0] || seen[3] {
		t.Errorf("top-k 1 with a tie drew %v, want tokens 1 and 2 only", seen)
	}
}

func TestNonFinite(t *testing.T) {
	var s Sampler
	rng := NewRNG(11)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for i := 0; i < 100; i++ {
		if got := s.Sample([]float32{nan, 0, nan}, Options{Temperature: 1}, rng); got != 1 {
			t.Fatalf("NaN row: got %d, want 1", got)
		}
		if got := s.Sample([]float32{3, inf, 2, inf}, Options{Temperature: 1, TopP: 0.5}, rng); got != 1 && got != 3 {
			t.Fatalf("+Inf row: got %d, want 1 or 3", got)
		}
		if got := s.Sample([]float32{-inf, nan}, Options{Temperature: 1, TopK: 1}, rng); got != 0 {
			t.Fatalf("no finite logit: got %d, want fallback 0", got)
		}
	}
	for _, c := range []struct {
		row  []float32
		want string
	}{
		{nil, "logits: empty row"},
		{[]float32{1, nan}, "logits: NaN at token 1"},
		{[]float32{inf, 1}, "logits: +Inf at token 0"},
		{[]float32{-inf, -inf}, "logits: every one of the 2 tokens is -Inf"},
	} {
		err := Check(c.row)
		if err == nil || err.Error() != c.want {
			t.Errorf("Check(%v) = %v, want %q", c.row, err, c.want)
		}
	}
	if err := Check([]float32{-inf, 0}); err != nil {
		t.Errorf("Check of a valid row: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Temperature: -1}, "temperature: must be >= 0 (got -1)"},
		{Options{Temperature: float32(math.NaN())}, "temperature: must be >= 0 (got NaN)"},
		{Options{Temperature: float32(math.Inf(1))}, "temperature: must be finite (got +Inf)"},
		{Options{TopK: -3}, "top_k: must be >= 0 (got -3)"},
		{Options{TopP: 1.5}, "top_p: must be in [0, 1] (got 1.5)"},
		{Options{Temperature: 1, TopK: 50, TopP: 1}, ""},
	} {
		err := c.o.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.o, err, c.want)
		}
	}
}

func TestRNG(t *testing.T) {
	// The first splitmix64 output for seed 0 is a well-known constant.
	r := NewRNG(0)
	if r.s[0] != 0xe220a8397b1dcdaf {
		t.Fatalf("splitmix64(0) = %#x, want 0xe220a8397b1dcdaf", r.s[0])
	}
	// First outputs for seed 12345 of xoshiro256starstar.c and
	// splitmix64.c (prng.di.unimi.it), compiled with gcc.
	ref := NewRNG(12345)
	for i, want := range []uint64{0xbe6a36374160d49b, 0x214aaa0637a688c6, 0xf69d16de9954d388} {
		if got := ref.Uint64(); got != want {
			t.Fatalf("draw %d of seed 12345 = %#x, want %#x", i, got, want)
		}
	}
	a, b := NewRNG(42), NewRNG(42)
	for i := 0; i < 1000; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same seed, different streams")
		}
	}
	c := NewRNG(43)
	same := 0
	for i := 0; i < 1000; i++ {
		if a.Uint64() == c.Uint64() {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 42 and 43 agree on %d of 1000 draws", same)
	}
	var sum float64
	for i := 0; i < 100000; i++ {
		f, g := r.Float64(), r.Float32()
		if f < 0 || f >= 1 || g < 0 || g >= 1 {
			t.Fatalf("draw out of [0,1): %v %v", f, g)
		}
		sum += f
	}
	if mean := sum / 100000; math.Abs(mean-0.5) > 0.005 {
		t.Errorf("mean of Float64 draws %v, want ≈ 0.5", mean)
	}
}

// TestStreamIndependentOfBatch: a sequence's tokens depend on its own seed
// and logits only, whatever else is sampled in between.
func TestStreamIndependentOfBatch(t *testing.T) {
	row := logs(0.05, 0.15, 0.3, 0.5)
	o := Options{Temperature: 1, TopP: 0.9}
	var s Sampler
	alone := NewRNG(8)
	var want []int
	for i := 0; i < 50; i++ {
		want = append(want, s.Sample(row, o, alone))
	}
	mine, other := NewRNG(8), NewRNG(9)
	wide := make([]float32, 1000)
	for i := range wide {
		wide[i] = float32(i%7) - 3
	}
	for i := 0; i < 50; i++ {
		s.Sample(wide, Options{Temperature: 0.8, TopK: 40}, other) // a neighbour in the batch
		if got := s.Sample(row, o, mine); got != want[i] {
			t.Fatalf("token %d: %d with a neighbour, %d alone", i, got, want[i])
		}
	}
}

func TestStopper(t *testing.T) {
	s := NewStopper([][]int{{7, 8, 9}, {8, 9}, {5}, {}, {1, 1, 2}})
	for _, c := range []struct {
		toks []int
		want bool
	}{
		{nil, false},
		{[]int{1, 2, 3}, false},
		{[]int{9}, false},
		{[]int{8, 9}, true}, // the shorter of two overlapping stops
		{[]int{0, 7, 8, 9}, true},
		{[]int{7, 8}, false},
		{[]int{3, 5}, true},
		{[]int{1, 1, 1, 2}, true}, // a stop whose prefix repeats
		{[]int{1, 2}, false},
		{[]int{5, 6}, false}, // only the end counts
	} {
		if got := s.Match(c.toks); got != c.want {
			t.Errorf("Match(%v) = %v, want %v", c.toks, got, c.want)
		}
	}
	if NewStopper(nil).Match([]int{1}) {
		t.Error("empty stopper matched")
	}
	var nilStop *Stopper
	if nilStop.Match([]int{1}) {
		t.Error("nil stopper matched")
	}
	// NewStopper copies its input.
	stops := [][]int{{4, 2}}
	s = NewStopper(stops)
	stops[0][1] = 3
	if !s.Match([]int{4, 2}) {
		t.Error("stopper aliased its input")
	}
}

func BenchmarkSample(b *testing.B) {
	const vocab = 151936 // Qwen2.5
	row := make([]float32, vocab)
	r := NewRNG(1)
	for i := range row {
		row[i] = 8 * (r.Float32() - 0.5)
	}
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"greedy", Options{}},
		{"t1", Options{Temperature: 1}},
		{"topk50", Options{Temperature: 1, TopK: 50}},
		{"topp0.9", Options{Temperature: 1, TopP: 0.9}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var s Sampler
			for b.Loop() {
				s.Sample(row, c.o, r)
			}
		})
		b.Run(c.name+"-before", func(b *testing.B) { // the code before decision 47
			var s refSampler
			for b.Loop() {
				s.Sample(row, c.o, r)
			}
		})
	}
}

// A stop string matches however the tokens spell it, at the token that
// completes it, even when that token runs past its end — and only there.
func TestStringStopper(t *testing.T) {
	vocab := []string{"</", "answer", ">", "</answer>", ">\n", "x", "</ans", "wer>", "Right", "<"}
	text := func(id int) string { return vocab[id] }
	s := NewStringStopper(text, []string{"</answer>", ""})
	for _, c := range []struct {
		toks []int
		want bool
	}{
		{nil, false},
		{[]int{8}, false},
		{[]int{8, 0, 1, 2}, true},    // "</" "answer" ">"
		{[]int{8, 3}, true},          // one token
		{[]int{0, 1, 4}, true},       // the last token runs past the string
		{[]int{6, 7}, true},          // split mid-word
		{[]int{9, 5, 0, 1, 2}, true}, // "<x</answer>"
		{[]int{0, 1}, false},
		{[]int{3, 5}, false}, // completed before the last token: not this token's doing
		{[]int{0, 1, 5, 2}, false},
	} {
		if got := s.Match(c.toks); got != c.want {
			t.Errorf("Match(%v) = %v, want %v", c.toks, got, c.want)
		}
	}
	if NewStringStopper(text, nil).Match([]int{3}) {
		t.Error("a stopper without strings matched")
	}
}
