//go:build cuda

package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/sample"
)

// Benchmarks for scripts/gpu-check: a training step (forward, backward,
// AdamW) and batched decoding, reported as tokens/s, for the small preset
// and a Qwen2-0.5B-shaped model with random weights, each at f32 and bf16
// (sub-benchmarks model/precision).

var precisions = []backend.Precision{backend.F32, backend.BF16}

// benchModelOn returns a model of m on g at precision p, from one random
// initialisation per model (model.New of 0.5B parameters takes seconds on
// the host, and a benchmark function runs more than once).
func benchModelOn(b *testing.B, g *Backend, m benchModel, p backend.Precision) *model.Model {
	mm, err := model.New(m.cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	if err := mm.Use(g, p); err != nil {
		b.Fatal(err)
	}
	return mm
}

type benchModel struct {
	name       string
	cfg        model.Config
	seqs, seqL int // training batch
	slots      int // decoding batch
}

func qwen05B() model.Config {
	c := model.Small()
	c.VocabSize, c.HiddenSize, c.NumLayers = 151936, 896, 24
	c.NumHeads, c.NumKVHeads, c.IntermediateSize = 14, 2, 4864
	c.MaxPositions, c.RopeTheta = 2048, 1e6
	return c
}

func benchModels() []benchModel {
	small := model.Small()
	small.VocabSize = 512
	return []benchModel{
		{"small", small, 16, 256, 64},
		{"qwen2-0.5b", qwen05B(), 4, 512, 32},
	}
}

func BenchmarkTrainStep(b *testing.B) {
	g := open(b)
	for _, m := range benchModels() {
		for _, p := range precisions {
			b.Run(m.name+"/"+string(p), func(b *testing.B) { benchTrainStep(b, g, m, p) })
		}
	}
}

func benchTrainStep(b *testing.B, g *Backend, m benchModel, p backend.Precision) {
	tr := benchModelOn(b, g, m, p)
	defer tr.Free()
	opt, err := tr.NewAdamW(optim.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Free()
	rng := rand.New(rand.NewPCG(1, 1))
	lens := make([]int, m.seqs)
	toks := make([]int, m.seqs*m.seqL)
	for i := range lens {
		lens[i] = m.seqL
	}
	for i := range toks {
		toks[i] = rng.IntN(m.cfg.VocabSize)
	}
	dlp := make([]float32, len(toks))
	for i := range dlp {
		dlp[i] = -1 / float32(len(toks)) // maximise the mean log-likelihood
	}
	b.ResetTimer()
	for range b.N {
		if _, err := tr.Forward(toks, lens, model.Want{LM: true}); err != nil {
			b.Fatal(err)
		}
		tr.ZeroGrad()
		if err := tr.Backward(model.Grad{LogProb: dlp}); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.ClipGradNorm(1); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.Step(opt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(toks))/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkDecode generates steps tokens for each of slots sequences (one
// prompt token each, no stop sequence) with Decoder.Generate: the rollout's
// decoding loop, sampling on the device.
func BenchmarkDecode(b *testing.B) {
	g := open(b)
	for _, m := range benchModels() {
		for _, p := range precisions {
			b.Run(m.name+"/"+string(p), func(b *testing.B) { benchDecode(b, g, m, p) })
		}
	}
}

func benchDecode(b *testing.B, g *Backend, m benchModel, p backend.Precision) {
	const steps = 128
	tr := benchModelOn(b, g, m, p)
	defer tr.Free()
	dec, err := tr.NewDecoder()
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	o := model.GenerateOptions{Sample: sample.Options{Temperature: 1, TopK: 50, TopP: 0.9}, MaxNew: steps}
	b.ResetTimer()
	for range b.N {
		reqs := make([]model.Request, m.slots)
		for i := range reqs {
			reqs[i] = model.Request{ID: i, Prompt: []int{0}, RNG: sample.NewRNG(uint64(i))}
		}
		if _, err := dec.Generate(reqs, o); err != nil {
			b.Fatal(err)
		}
		for i := range reqs {
			dec.Remove(i)
		}
	}
	b.ReportMetric(float64(b.N*steps*m.slots)/b.Elapsed().Seconds(), "tok/s")
}
