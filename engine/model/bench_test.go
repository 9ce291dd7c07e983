package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/sample"
)

// BenchmarkTrainStepSmall times one training step at the Small preset with
// vocabulary 512 and a value head, on B=16 sequences of T=256 tokens (the
// PyTorch baseline's setting, ~5.5k tok/s on the 2-core machines): forward,
// loss = cross-entropy + ½·MSE(value), backward, and an AdamW update written
// inline over the flat buffers (so the benchmark does not depend on
// engine/optim; the update is a few ms of the step).
func BenchmarkTrainStepSmall(b *testing.B) { benchTrainStep(b, 16, 256) }

// BenchmarkTrainStepSmallLong is the same step on 4 sequences of 1024
// tokens, the length of a Sokoban trajectory near the context's end, where
// attention (quadratic in T) weighs most.
func BenchmarkTrainStepSmallLong(b *testing.B) { benchTrainStep(b, 4, 1024) }

// BenchmarkTrainStepSmallBF16 is BenchmarkTrainStepSmall at precision
// bf16 on the CPU: every product reads bf16 operands (GemmBF16), and the
// weights' bf16 copy is refreshed after each update.
func BenchmarkTrainStepSmallBF16(b *testing.B) { benchTrainStepAt(b, Small(), 16, 256, backend.BF16) }

func benchTrainStep(b *testing.B, B, T int) { benchTrainStepConfig(b, Small(), B, T) }

func benchTrainStepConfig(b *testing.B, c Config, B, T int) {
	benchTrainStepAt(b, c, B, T, backend.F32)
}

func benchTrainStepAt(b *testing.B, c Config, B, T int, p backend.Precision) {
	c.VocabSize, c.ValueHead = 512, true
	m, err := New(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	if p != backend.F32 {
		if err := m.Use(cpu.New(), p); err != nil {
			b.Fatal(err)
		}
	}
	lens := make([]int, B)
	for i := range lens {
		lens[i] = T
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := randomBatch(rng, c.VocabSize, lens...)
	returns := make([]float32, B*T)
	for i := range returns {
		returns[i] = float32(rng.NormFloat64())
	}
	dlp, dv := make([]float32, B*T), make([]float32, B*T)
	mom, vel := make([]float32, len(m.Params.Data)), make([]float32, len(m.Params.Data))
	n := float32(B * (T - 1))
	b.ResetTimer()
	start := time.Now()
	for step := 1; step <= b.N; step++ {
		out, err := m.Forward(tokens, lens, Want{LM: true, Value: true})
		if err != nil {
			b.Fatal(err)
		}
		for i := range tokens {
			if i%T == 0 {
				continue
			}
			dlp[i] = -1 / n
			dv[i] = (out.Value[i] - returns[i]) / n
		}
		m.ZeroGrad()
		if err := m.Backward(Grad{LogProb: dlp, Value: dv}); err != nil {
			b.Fatal(err)
		}
		adamw(m.Params.Data, m.Grads.Data, mom, vel, step)
		m.Refresh()
	}
	b.ReportMetric(float64(b.N*B*T)/time.Since(start).Seconds(), "tok/s")
}

// adamw is a plain AdamW update (lr 3e-4, β 0.9/0.95, decay 0.1 on all).
func adamw(p, g, m, v []float32, t int) {
	const lr, b1, b2, eps, wd = 3e-4, 0.9, 0.95, 1e-8, 0.1
	c1, c2 := float32(1-math.Pow(b1, float64(t))), float32(1-math.Pow(b2, float64(t)))
	for i := range p {
		m[i] = b1*m[i] + (1-b1)*g[i]
		v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
		p[i] -= lr * ((m[i]/c1)/(float32(math.Sqrt(float64(v[i]/c2)))+eps) + wd*p[i])
	}
}

// BenchmarkDecodeSmall and BenchmarkDecodeBase time batched generation
// with the KV cache as `ragen bench` does: 16 sequences, a 128-token prompt
// each (the decoder's creation and the prefill included in the time), 128
// new tokens sampled at temperature 1. tok/s counts generated tokens.
// Between decodes, untimed, the decoder is closed and the heap collected,
// as the bench and a training run between rollouts do: otherwise each
// decode's KV cache and scratch took fresh pages, and faulting them in
// cost the small preset a quarter of its time (15.2–15.5k against
// 21.2–21.3k tok/s; the base preset's rate moved within the noise).
func BenchmarkDecodeSmall(b *testing.B) { benchDecode(b, Small()) }

func BenchmarkDecodeBase(b *testing.B) { benchDecode(b, Base()) }

func benchDecode(b *testing.B, c Config) {
	c.VocabSize = 512
	m, err := New(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	const B, P, N = 16, 128, 128
	rng := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	var took time.Duration
	for it := 0; it < b.N; it++ {
		start := time.Now()
		d, err := m.NewDecoder()
		if err != nil {
			b.Fatal(err)
		}
		reqs := make([]Request, B)
		for i := range reqs {
			reqs[i] = Request{ID: i, Prompt: randomBatch(rng, c.VocabSize, P), RNG: sample.NewRNG(uint64(i))}
		}
		if _, err := d.Generate(reqs, GenerateOptions{Sample: sample.Options{Temperature: 1}, MaxNew: N}); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		d.Close()
		runtime.GC()
	}
	b.ReportMetric(float64(b.N*B*N)/took.Seconds(), "tok/s")
}

// BenchmarkTrainStepBase is BenchmarkTrainStepSmall at the Base preset.
func BenchmarkTrainStepBase(b *testing.B) { benchTrainStepConfig(b, Base(), 16, 256) }
