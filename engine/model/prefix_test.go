package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
)

// sharedBatch is a batch whose sequences share prefixes of every kind:
// a group's prompt (1 and 0 share 150 tokens, 128 of them aligned), a
// shorter one (2: 64), a chain (4 takes 192 positions from 1, whose first
// 128 are 0's rows), a copy (5 = 0: 192, leaving 8 rows), a sequence of
// two rows of its own (6), and ones too short or too different to share.
func sharedBatch(rng *rand.Rand, vocab int) (tokens, lens []int) {
	fresh := func(n int) []int { return randomBatch(rng, vocab, n) }
	s0 := fresh(200)
	s1 := append(slices.Clone(s0[:150]), fresh(60)...)
	s2 := append(slices.Clone(s0[:70]), fresh(100)...)
	s3 := fresh(90)
	s4 := append(slices.Clone(s1[:200]), fresh(10)...)
	s5 := slices.Clone(s0)
	s6 := slices.Clone(s0[:130])
	s7 := slices.Clone(s0[:40])
	for _, s := range [][]int{s0, s1, s2, s3, s4, s5, s6, s7} {
		tokens = append(tokens, s...)
		lens = append(lens, len(s))
	}
	return tokens, lens
}

// TestForwardSharedPrefixes checks that sharing prefixes changes no
// float: a batch whose sequences share them runs fewer rows (with chains
// of sharing), and every log-prob, entropy, value, parameter gradient and
// attention map is the bits of the pass that runs every row — LoRA and
// full models, F32 and BF16, with and without Targets, with and without
// SetRecompute, with the LM head in one block and in blocks of 3 rows.
// Want.NoGrad gives the same numbers and refuses Backward.
func TestForwardSharedPrefixes(t *testing.T) {
	c := Tiny()
	c.ValueHead = true
	rng := rand.New(rand.NewPCG(5, 7))
	tokens, lens := sharedBatch(rng, c.VocabSize)
	T := len(tokens)
	targets := make([]bool, T)
	for i := range targets {
		targets[i] = rng.IntN(4) != 0
	}
	dlp, dent, dval := make([]float32, T), make([]float32, T), make([]float32, T)
	for i := range T {
		dlp[i], dent[i], dval[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	wantPast := []int{0, 128, 64, 0, 192, 192, 128, 0}
	const follower, layer, head = 4, 1, 3 // an attention map to compare
	defer func(v int) { maxHeadLogits = v }(maxHeadLogits)
	for _, p := range []backend.Precision{backend.F32, backend.BF16} {
		for _, lora := range []bool{true, false} {
			m := testPolicy(t, c, lora, p)
			for _, recompute := range []bool{false, true} {
				m.SetRecompute(recompute)
				for _, blockRows := range []int{0, 3} {
					maxHeadLogits = 1 << 26
					if blockRows > 0 {
						maxHeadLogits = blockRows * c.VocabSize
					}
					for _, tg := range [][]bool{nil, targets} {
						name := fmt.Sprintf("%s/%s recompute %v, head blocks of %d, targets %v",
							map[bool]string{true: "lora", false: "full"}[lora], p, recompute, blockRows, tg != nil)
						g := Grad{LogProb: slices.Clone(dlp), Entropy: slices.Clone(dent), Value: dval}
						for i := range tg {
							if !tg[i] {
								g.LogProb[i], g.Entropy[i] = 0, 0
							}
						}
						type result struct{ lp, ent, val, grads, att []float32 }
						run := func(share, noGrad bool) (r result) {
							prefixSharing = share
							defer func() { prefixSharing = true }()
							out, err := m.Forward(tokens, lens, Want{LM: true, Value: true, Targets: tg, NoGrad: noGrad})
							if err != nil {
								t.Fatal(err)
							}
							if m.ws.prefixed != share {
								t.Fatalf("%s: prefixed %v, want %v", name, m.ws.prefixed, share)
							}
							r.lp, r.ent, r.val = slices.Clone(out.LogProb), slices.Clone(out.Entropy), slices.Clone(out.Value)
							att, err := m.AttentionMap(layer, follower, head)
							if err != nil {
								t.Fatal(err)
							}
							r.att = slices.Clone(att.Data().([]float32))
							if noGrad {
								return r
							}
							m.ZeroGrad()
							if err := m.Backward(g); err != nil {
								t.Fatal(err)
							}
							r.grads = slices.Clone(m.Grads.Data)
							return r
						}
						ref := run(false, false)
						same := func(what string, got, want []float32) {
							t.Helper()
							for i := range want {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s: %s %d is %v, without sharing %v", name, what, i, got[i], want[i])
								}
							}
						}
						for _, noGrad := range []bool{false, true} {
							r := run(true, noGrad)
							if !slices.Equal(m.ws.past, wantPast) || m.ws.T != T-(128+64+192+192+128) {
								t.Fatalf("%s: past %v, %d rows computed; want %v, %d", name, m.ws.past, m.ws.T, wantPast, T-(128+64+192+192+128))
							}
							same("log-prob", r.lp, ref.lp)
							same("entropy", r.ent, ref.ent)
							same("value", r.val, ref.val)
							same("attention map entry", r.att, ref.att)
							if !noGrad {
								same("gradient", r.grads, ref.grads)
							} else if err := m.Backward(g); err == nil || !strings.Contains(err.Error(), "NoGrad") {
								t.Errorf("%s: Backward after a NoGrad Forward: err %v", name, err)
							}
						}
					}
				}
			}
			// Logits are the batch's rows: no sharing.
			if _, err := m.Forward(tokens, lens, Want{Logits: true, NoGrad: true}); err != nil || m.ws.prefixed {
				t.Errorf("NoGrad with Logits: err %v, prefixed %v", err, m.ws.prefixed)
			}
		}
	}
}

// TestSharedPrefixRule: without NoGrad a prefix is shared only when it
// saves a quarter of the batch's rows (Backward copies every row); with
// it, always; and a NoGrad Forward leaves nothing for Backward, shared or
// not.
func TestSharedPrefixRule(t *testing.T) {
	c := Tiny()
	m := testPolicy(t, c, false, backend.F32)
	rng := rand.New(rand.NewPCG(3, 4))
	s0 := randomBatch(rng, c.VocabSize, 250)
	s1 := append(slices.Clone(s0[:64]), randomBatch(rng, c.VocabSize, 186)...)
	s2 := randomBatch(rng, c.VocabSize, 14)
	for _, tc := range []struct {
		name           string
		tokens         []int
		lens           []int
		noGrad, shared bool
	}{
		{"64 of 500 rows saved", slices.Concat(s0, s1), []int{250, 250}, false, false},
		{"64 of 500 rows saved, NoGrad", slices.Concat(s0, s1), []int{250, 250}, true, true},
		{"no prefix in common, NoGrad", slices.Concat(s0, s2), []int{250, 14}, true, false},
	} {
		if _, err := m.Forward(tc.tokens, tc.lens, Want{LM: true, NoGrad: tc.noGrad}); err != nil {
			t.Fatal(err)
		}
		if m.ws.prefixed != tc.shared {
			t.Errorf("%s: prefixed %v", tc.name, m.ws.prefixed)
		}
		err := m.Backward(Grad{LogProb: make([]float32, len(tc.tokens))})
		if tc.noGrad && (err == nil || !strings.Contains(err.Error(), "NoGrad")) || !tc.noGrad && err != nil {
			t.Errorf("%s: Backward: err %v", tc.name, err)
		}
	}
}

// TestSharedPrefixHeadRows: a fresh BF16 model whose LM head runs on more
// rows than the prefixed batch computes (4 copies of one sequence: 260
// head rows from 68 computed, more than slot 0's bf16 scratch for the
// blocks holds) gets the floats of the unshared batch.
func TestSharedPrefixHeadRows(t *testing.T) {
	c := Tiny()
	s := randomBatch(rand.New(rand.NewPCG(6, 6)), c.VocabSize, 65)
	tokens := slices.Concat(s, s, s, s)
	lens := []int{65, 65, 65, 65}
	var lps [2][]float32
	for i, share := range []bool{false, true} {
		m := testPolicy(t, c, false, backend.BF16)
		prefixSharing = share
		out, err := m.Forward(tokens, lens, Want{LM: true, NoGrad: true})
		prefixSharing = true
		if err != nil {
			t.Fatal(err)
		}
		if m.ws.prefixed != share {
			t.Fatalf("prefixed %v, want %v", m.ws.prefixed, share)
		}
		lps[i] = slices.Clone(out.LogProb)
	}
	for i := range lps[0] {
		if math.Float32bits(lps[0][i]) != math.Float32bits(lps[1][i]) {
			t.Fatalf("token %d: log-prob %v shared, %v not", i, lps[1][i], lps[0][i])
		}
	}
}

// testPolicy is a random model of c at precision p on the CPU: rank-4
// adapters on every linear layer of a bf16 base when lora, else a full
// model.
func testPolicy(t *testing.T, c Config, lora bool, p backend.Precision) *Model {
	t.Helper()
	if lora {
		return loraPolicy(t, c, LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}, true, cpu.New(), p)
	}
	m, err := New(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 4)
	if err := m.Use(cpu.New(), p); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSharedPrefixesRandom runs random batches — sequences made of
// pieces of earlier ones and fresh tokens, of lengths around the
// 64-position blocks — with and without shared prefixes and compares
// every output and gradient bit for bit.
func TestSharedPrefixesRandom(t *testing.T) {
	c := Tiny()
	c.ValueHead = true
	rng := rand.New(rand.NewPCG(11, 12))
	sharedTrials := 0
	for _, p := range []backend.Precision{backend.F32, backend.BF16} {
		m := testPolicy(t, c, true, p)
		for trial := range 16 {
			seqs := [][]int{randomBatch(rng, c.VocabSize, 120+rng.IntN(130))}
			for range 1 + rng.IntN(6) {
				var s []int
				if rng.IntN(4) != 0 {
					from := seqs[rng.IntN(len(seqs))]
					s = slices.Clone(from[:min(len(from), 64+rng.IntN(len(from)))])
					s = append(s, randomBatch(rng, c.VocabSize, 1+rng.IntN(60))...)
				} else {
					s = randomBatch(rng, c.VocabSize, 20+rng.IntN(200))
				}
				seqs = append(seqs, s[:min(len(s), c.MaxPositions)])
			}
			var tokens, lens []int
			for _, s := range seqs {
				tokens, lens = append(tokens, s...), append(lens, len(s))
			}
			T := len(tokens)
			targets := make([]bool, T)
			g := Grad{LogProb: make([]float32, T), Entropy: make([]float32, T), Value: make([]float32, T)}
			for i := range T {
				targets[i] = rng.IntN(3) != 0
				if targets[i] {
					g.LogProb[i], g.Entropy[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				}
				g.Value[i] = float32(rng.NormFloat64())
			}
			var outs [2][]float32
			var shared bool
			for k, share := range []bool{false, true} {
				prefixSharing = share
				out, err := m.Forward(tokens, lens, Want{LM: true, Value: true, Targets: targets})
				if err == nil {
					shared = shared || m.ws.prefixed
					outs[k] = slices.Concat(out.LogProb, out.Entropy, out.Value)
					m.ZeroGrad()
					err = m.Backward(g)
					outs[k] = append(outs[k], m.Grads.Data...)
				}
				prefixSharing = true
				if err != nil {
					t.Fatal(err)
				}
			}
			if shared {
				sharedTrials++
			}
			for i := range outs[0] {
				if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
					t.Fatalf("%s, trial %d (lens %v, shared %v): value %d is %v shared, %v not", p, trial, lens, shared, i, outs[1][i], outs[0][i])
				}
			}
		}
	}
	if sharedTrials < 12 {
		t.Fatalf("only %d of 32 trials shared a prefix", sharedTrials)
	}
}
