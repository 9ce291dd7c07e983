package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/sample"
)

// TestDecoderMatchesForward drives the cache through prefill, batched
// one-token steps, an environment chunk appended to some sequences, a
// sequence leaving, and a long chunk that spans several attention blocks,
// checking every step's logits against a full forward.
func TestDecoderMatchesForward(t *testing.T) {
	c := Tiny()
	c.TieWordEmbeddings = false
	m, err := New(c, 11)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 12)
	rng := rand.New(rand.NewPCG(13, 13))
	d, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	hist := map[int][]int{}
	appendStep := func(what string, ids []int, lens ...int) {
		t.Helper()
		chunks := make([][]int, len(ids))
		for i, id := range ids {
			chunks[i] = randomBatch(rng, c.VocabSize, lens[i])
			hist[id] = append(hist[id], chunks[i]...)
		}
		logits, err := d.Append(ids, chunks)
		if err != nil {
			t.Fatal(err)
		}
		checkLogits(t, m, what, hist, ids, logits, 1e-5)
		for _, id := range ids {
			if d.Len(id) != len(hist[id]) {
				t.Errorf("%s: Len(%d) = %d, want %d", what, id, d.Len(id), len(hist[id]))
			}
		}
	}
	appendStep("prefill", []int{10, 20, 30}, 5, 9, 1)
	for step := 0; step < 4; step++ {
		appendStep("generate", []int{10, 20, 30}, 1, 1, 1)
	}
	appendStep("environment chunk", []int{30, 10}, 6, 3)
	appendStep("generate after chunk", []int{10, 20, 30}, 1, 1, 1)
	d.Remove(20)
	if d.Len(20) != 0 || !slices.Equal(d.IDs(), []int{10, 30}) {
		t.Errorf("after Remove(20): ids %v", d.IDs())
	}
	appendStep("after a sequence left", []int{30, 10}, 1, 1)
	appendStep("new sequence joins", []int{40, 10}, 70, 1)
	appendStep("long chunk over a cached prefix", []int{40, 30}, 90, 2)
}

func TestDecoderBadInput(t *testing.T) {
	m, err := New(Tiny(), 1)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := m.NewDecoder()
	if _, err := d.Append([]int{1}, [][]int{{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	long := make([]int, 254)
	for _, tc := range []struct {
		ids    []int
		chunks [][]int
		err    string
	}{
		{nil, nil, "decoder: empty batch: no sequences"},
		{[]int{1, 2}, [][]int{{1}}, "decoder: 2 ids but 1 chunks"},
		{[]int{1, 1}, [][]int{{1}, {2}}, "decoder: sequence 1 appears twice in one step"},
		{[]int{1, 2}, [][]int{{1}, {4, 100}}, "decoder: sequence 2: token 1: id 100 out of range [0, 96)"},
		{[]int{1}, [][]int{{}}, "decoder: sequence 1: nothing to append (empty chunk)"},
		{[]int{1}, [][]int{long}, "decoder: sequence 1: length 257 would exceed max_position_embeddings 256"},
	} {
		if _, err := d.Append(tc.ids, tc.chunks); err == nil || err.Error() != tc.err {
			t.Errorf("got %v, want %q", err, tc.err)
		}
	}
	if d.Len(1) != 3 || d.Len(2) != 0 {
		t.Errorf("a failed Append changed the cache: lengths %d, %d", d.Len(1), d.Len(2))
	}
	if _, err := d.Generate([]Request{{ID: 5, Prompt: []int{1}}}, GenerateOptions{Sample: sample.Options{Temperature: 1}, MaxNew: 3}); err == nil || !strings.Contains(err.Error(), "needs an RNG") {
		t.Errorf("sampling without RNG: got %v", err)
	}
	if _, err := d.Generate([]Request{{ID: 5, Prompt: []int{1}}}, GenerateOptions{MaxNew: 0}); err == nil || !strings.Contains(err.Error(), "max_new_tokens") {
		t.Errorf("MaxNew 0: got %v", err)
	}
	if _, err := d.Generate([]Request{{ID: 5, Prompt: []int{1}}}, GenerateOptions{Sample: sample.Options{TopP: 2}, MaxNew: 3}); err == nil || !strings.Contains(err.Error(), "top_p") {
		t.Errorf("bad top_p: got %v", err)
	}
	c := Tiny()
	c.LMHead, c.ValueHead = false, true
	critic, _ := New(c, 1)
	if _, err := critic.NewDecoder(); err == nil {
		t.Error("decoder for a model without LM head: no error")
	}
}

// generateOne runs one Generate call over fresh sequences with the given
// prompts and per-sequence seeds.
func generateOne(t *testing.T, m *Model, prompts [][]int, seeds []uint64, o GenerateOptions) [][]int {
	t.Helper()
	d, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]Request, len(prompts))
	for i := range prompts {
		reqs[i] = Request{ID: i, Prompt: prompts[i], RNG: sample.NewRNG(seeds[i])}
	}
	out, err := d.Generate(reqs, o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGenerateIndependentOfBatch samples each sequence alone and inside a
// batch, with 1 and 2 threads: its tokens must not change.
func TestGenerateIndependentOfBatch(t *testing.T) {
	m, err := New(Tiny(), 21)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 22)
	rng := rand.New(rand.NewPCG(23, 23))
	prompts := [][]int{randomBatch(rng, 96, 7), randomBatch(rng, 96, 3), randomBatch(rng, 96, 12)}
	seeds := []uint64{101, 102, 103}
	o := GenerateOptions{Sample: sample.Options{Temperature: 1, TopK: 40, TopP: 0.95}, MaxNew: 24}
	batch := generateOne(t, m, prompts, seeds, o)
	for i := range prompts {
		alone := generateOne(t, m, prompts[i:i+1], seeds[i:i+1], o)[0]
		if !slices.Equal(alone, batch[i]) {
			t.Errorf("sequence %d: alone %v, in a batch %v", i, alone, batch[i])
		}
		if len(alone) != o.MaxNew {
			t.Errorf("sequence %d: %d tokens, want MaxNew %d", i, len(alone), o.MaxNew)
		}
	}
	prev := runtime.GOMAXPROCS(1)
	one := generateOne(t, m, prompts, seeds, o)
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(slices.Concat(one...), slices.Concat(batch...)) {
		t.Errorf("GOMAXPROCS=1 gives %v, default gives %v", one, batch)
	}
}

// TestGenerateStopsAndContinues checks stop sequences and the multi-turn
// flow: generate, append an environment reply, generate again — with the
// same tokens as running the whole history through a fresh decoder.
func TestGenerateStopsAndContinues(t *testing.T) {
	m, err := New(Tiny(), 31)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 32)
	prompt := []int{4, 8, 15, 16, 23, 42}
	greedy := generateOne(t, m, [][]int{prompt}, []uint64{0}, GenerateOptions{MaxNew: 12})[0]
	stop := greedy[4:6]
	want := greedy[:6]
	for k := 2; k < 6; k++ { // the stop pair may occur earlier
		if slices.Equal(greedy[k-2:k], stop) {
			want = greedy[:k]
			break
		}
	}
	stopper := sample.NewStopper([][]int{{95, 94, 93}, stop})
	got := generateOne(t, m, [][]int{prompt}, []uint64{0}, GenerateOptions{MaxNew: 12, Stop: stopper})[0]
	if !slices.Equal(got, want) {
		t.Fatalf("with stop %v: got %v, want %v (greedy run %v)", stop, got, want, greedy)
	}

	// Turn 2: environment reply, then generate again.
	d, _ := m.NewDecoder()
	o := GenerateOptions{Sample: sample.Options{Temperature: 0.8}, MaxNew: 5}
	rngA := sample.NewRNG(7)
	turn1, err := d.Generate([]Request{{ID: 1, Prompt: prompt, RNG: rngA}}, o)
	if err != nil {
		t.Fatal(err)
	}
	reply := []int{9, 9, 3}
	turn2, err := d.Generate([]Request{{ID: 1, Prompt: reply, RNG: rngA}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len(1) != len(prompt)+5+len(reply)+5 {
		t.Errorf("length after two turns %d", d.Len(1))
	}
	// A fresh decoder given the whole history at once continues identically.
	d2, _ := m.NewDecoder()
	rngB := sample.NewRNG(7)
	if _, err := d2.Generate([]Request{{ID: 1, Prompt: prompt, RNG: rngB}}, o); err != nil {
		t.Fatal(err)
	}
	d2.Remove(1)
	hist := slices.Concat(prompt, turn1[0], reply)
	again, err := d2.Generate([]Request{{ID: 1, Prompt: hist, RNG: rngB}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again[0], turn2[0]) {
		t.Errorf("turn 2 from the cache %v, from a fresh prefill %v", turn2[0], again[0])
	}

	// Generation stops at max_position_embeddings instead of failing.
	d3, _ := m.NewDecoder()
	long := make([]int, m.Config.MaxPositions-3)
	out, err := d3.Generate([]Request{{ID: 1, Prompt: long}}, GenerateOptions{MaxNew: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out[0]) != 3 || d3.Len(1) != m.Config.MaxPositions {
		t.Errorf("near the position limit: generated %d tokens, length %d", len(out[0]), d3.Len(1))
	}
	if _, err := d3.Generate([]Request{{ID: 1}}, GenerateOptions{MaxNew: 1}); err == nil {
		t.Error("generating past max_position_embeddings: no error")
	}
}

// TestSharedPrompts: new sequences of one Append with the same chunk (a
// GRPO group's prompt) run it once, the others get its keys and values
// copied; their logits, then and at the next step, are the bits of
// sequences run one by one. A step left with at most gemm.DotMaxRows rows shares
// nothing (its products would sum in another order).
func TestSharedPrompts(t *testing.T) {
	m, err := New(Tiny(), 41)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 42)
	rng := rand.New(rand.NewPCG(43, 43))
	p, q := randomBatch(rng, 96, 10), randomBatch(rng, 96, 7)
	V := m.Config.VocabSize
	ids := []int{0, 1, 2, 3}
	next := [][]int{{5}, {6}, {7}, {8}}

	shared, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	fresh := []*cacheSeq{{}, {}, {}, {}}
	if got := shared.sharedPrompts(fresh, [][]int{p, p, q, p}); !slices.Equal(got, []int{0, 0, 2, 0}) {
		t.Fatalf("sharedPrompts: %v, want [0 0 2 0]", got)
	}
	if got := shared.sharedPrompts(fresh[:3], [][]int{{1}, {1}, {2}}); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("sharedPrompts of 2 rows left: %v, want none shared", got)
	}
	first, err := shared.Append(ids, [][]int{p, p, q, p})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 3} {
		if !slices.Equal(first[i*V:(i+1)*V], first[:V]) {
			t.Errorf("sequence %d, sharing sequence 0's prompt: other logits", i)
		}
	}
	got, err := shared.Append(ids, next)
	if err != nil {
		t.Fatal(err)
	}
	got = slices.Clone(got)

	alone, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	for i, chunk := range [][]int{p, p, q, p} {
		if _, err := alone.Append(ids[i:i+1], [][]int{chunk}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := alone.Append(ids, next)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ids {
		for j := i * V; j < (i+1)*V; j++ {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("sequence %d after its shared prompt: logit %d is %v, run alone %v", i, j-i*V, got[j], want[j])
			}
		}
	}
}

// TestDecodeGroups: a small model's decoding steps, run as groups of
// sequences side by side (Decoder.groups), give the logits of whole steps
// bit for bit — through a prefill, steps of 19 down to 3 sequences (19:
// groups of 8 and 8 + 3), and environment replies of several rows — and
// that a step is cut only into groups of more than gemm.DotMaxRows rows,
// none with more than twice the mean.
func TestDecodeGroups(t *testing.T) {
	c := Tiny()
	m, err := New(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 4)
	V := c.VocabSize
	trace := func(grouped bool) (logits []float32, split int) {
		groupSteps = grouped
		defer func() { groupSteps = true }()
		d, err := m.NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		rng := rand.New(rand.NewPCG(8, 1))
		var ids []int
		var chunks [][]int
		for i := range 19 {
			ids = append(ids, i)
			chunks = append(chunks, randomBatch(rng, V, 3+5*i))
		}
		for step := range 14 {
			seqs := make([]backend.DecodeSeq, len(ids))
			for i, id := range ids {
				seqs[i] = backend.DecodeSeq{Rows: len(chunks[i]), Past: d.Len(id)}
			}
			if len(d.groups(seqs)) > 1 {
				split++
			}
			out, err := d.Append(ids, chunks)
			if err != nil {
				t.Fatal(err)
			}
			logits = append(logits, out...)
			for i := range ids {
				chunks[i] = []int{rng.IntN(V)}
			}
			if step == 5 { // environment replies
				chunks[2] = append(chunks[2], randomBatch(rng, V, 9)...)
				chunks[7] = append(chunks[7], randomBatch(rng, V, 4)...)
			}
			if step >= 6 && len(ids) > 3 { // episodes end
				d.Remove(ids[0])
				ids, chunks = ids[1:], chunks[1:]
				if len(ids) > 5 {
					d.Remove(ids[len(ids)-1])
					ids, chunks = ids[:len(ids)-1], chunks[:len(chunks)-1]
				}
			}
		}
		return logits, split
	}
	d, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows := func(n ...int) []backend.DecodeSeq {
		seqs := make([]backend.DecodeSeq, len(n))
		for i, r := range n {
			seqs[i].Rows = r
		}
		return seqs
	}
	ones := func(k int) []int { return slices.Repeat([]int{1}, k) }
	for _, tc := range []struct {
		name string
		seqs []backend.DecodeSeq
		want [][2]int // each group's first sequence and rows
	}{
		{"16 rows", rows(ones(16)...), [][2]int{{0, 8}, {8, 8}}},
		{"19 rows: the last 3 join", rows(ones(19)...), [][2]int{{0, 8}, {8, 11}}},
		{"12 rows: 8 and 4", rows(ones(12)...), [][2]int{{0, 8}, {8, 4}}},
		{"7 rows: whole", rows(ones(7)...), nil},
		{"11 rows: 8 + 3, whole", rows(ones(11)...), nil},
		{"a long reply: uneven, whole", rows(slices.Concat(ones(8), []int{200}, ones(7))...), nil},
		{"prefills", rows(30, 40, 35, 50), [][2]int{{0, 30}, {1, 40}, {2, 35}, {3, 50}}},
	} {
		var got [][2]int
		for _, g := range d.groups(tc.seqs) {
			got = append(got, [2]int{g.lo, g.rows})
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: groups %v, want %v", tc.name, got, tc.want)
		}
	}
	want, _ := trace(false)
	got, split := trace(true)
	if split < 5 {
		t.Fatalf("only %d steps ran as groups", split)
	}
	if len(got) != len(want) {
		t.Fatalf("%d logits, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: %v in groups, %v whole", i, got[i], want[i])
		}
	}
}
