package hf

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/sample"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

// BenchmarkQwen05B runs a model of Qwen2.5-0.5B's shape (hidden 896, 24
// layers, 14 heads sharing 2 key/value heads, MLP 4864, vocabulary 151936,
// tied; 494M parameters) with random weights, as RAGEN's smallest policy:
//
//	load     Save it as a Hugging Face directory (F32, 2 GB) and Load it back
//	rollout  2 sequences: a 64-token prompt each, 32 sampled tokens
//	decode   16 sequences: a 128-token prompt each, 128 sampled tokens (the
//	         workload of `ragen bench`'s decode row): the decoder's creation
//	         (packing the weights), the prefill and the 127 one-token steps
//	         timed apart; tok/s counts the 2048 sampled tokens over all three
//	decode-bf16  the same after rounding every parameter to bf16, which is
//	         what Load makes of a bf16 checkpoint (Qwen2.5's are): the
//	         decoder keeps its weights as bf16 panels (decision 44)
//	step     forward + backward over the 2 × 96 tokens with a policy-gradient
//	         surrogate on the 32 response tokens, then an AdamW update
//	lora     the same step training rank-16 LoRA adapters on every linear
//	         layer of the frozen model (model.WithLoRA)
//	lora-long  the LoRA step over 4 × 512 tokens with activation
//	         recomputation (SetRecompute), RAGEN-sized
//	lora-bf16  the lora step after rounding every parameter to bf16 (a
//	         bf16 checkpoint): the frozen base holds its matrices as bf16
//	         only (decision 44)
//
// The decode rows run two decoders in turn, the second (suffix _2nd)
// packing into the first's freed panels as a training run's later rollouts
// do, and also report cpu_s, the process's CPU seconds over each.
//
// Peak memory is the process's: run one sub-benchmark after load at a
// time to compare them (-bench 'Qwen05B/(load|lora)$').
//
// reporting seconds, tokens/s and the peak resident memory (maxrss). It
// needs about 10 GB (parameters, gradients and two AdamW moments of 2 GB
// each) and minutes on 2 cores:
//
//	RAGEN_BIG=1 go test ./engine/hf -run '^$' -bench Qwen05B -benchtime 1x -timeout 30m
func BenchmarkQwen05B(b *testing.B) {
	if os.Getenv("RAGEN_BIG") == "" {
		b.Skip("needs ~10 GB and minutes: set RAGEN_BIG=1 to run it")
	}
	c := Qwen05BConfig()
	tok, err := tokenizer.Load("../tokenizer/testdata/env512.tokenizer.json")
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(b.TempDir(), "qwen05b")
	{
		m, err := model.New(c, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := Save(dir, m, tok, nil); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	var m *model.Model
	b.Run("load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m = nil
			runtime.GC()
			start := time.Now()
			if m, _, _, err = Load(dir, Options{}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "s/load")
		}
		reportMemory(b)
	})
	const B, prompt, gen = 2, 64, 32
	rng := rand.New(rand.NewPCG(7, 7))
	prompts := make([][]int, B)
	for i := range prompts {
		for range prompt {
			prompts[i] = append(prompts[i], rng.IntN(c.VocabSize))
		}
	}
	b.Run("rollout", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d, err := m.NewDecoder()
			if err != nil {
				b.Fatal(err)
			}
			reqs := make([]model.Request, B)
			for s := range reqs {
				reqs[s] = model.Request{ID: s, Prompt: prompts[s], RNG: sample.NewRNG(uint64(s))}
			}
			start := time.Now()
			out, err := d.Generate(reqs, model.GenerateOptions{Sample: sample.Options{Temperature: 1}, MaxNew: gen})
			if err != nil {
				b.Fatal(err)
			}
			sec := time.Since(start).Seconds()
			n := 0
			for _, o := range out {
				n += len(o)
			}
			b.ReportMetric(sec, "s/rollout")
			b.ReportMetric(float64(n)/sec, "generated_tok/s")
		}
		reportMemory(b)
	})
	b.Run("step", func(b *testing.B) {
		opt, err := m.NewAdamW(optim.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		const T = prompt + gen
		var tokens []int
		for s := range B {
			tokens = append(tokens, prompts[s]...)
			for range gen {
				tokens = append(tokens, rng.IntN(c.VocabSize))
			}
		}
		lens := []int{T, T}
		dlp := make([]float32, B*T)
		for s := range B {
			for i := prompt; i < T; i++ { // −A/n per response token: the PPO gradient at ratio 1
				dlp[s*T+i] = float32(rng.NormFloat64()) / (B * gen)
			}
		}
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if _, err := m.Forward(tokens, lens, model.Want{LM: true}); err != nil {
				b.Fatal(err)
			}
			m.ZeroGrad()
			if err := m.Backward(model.Grad{LogProb: dlp}); err != nil {
				b.Fatal(err)
			}
			if _, err := m.Step(opt); err != nil {
				b.Fatal(err)
			}
			sec := time.Since(start).Seconds()
			b.ReportMetric(sec, "s/step")
			b.ReportMetric(float64(B*T)/sec, "train_tok/s")
		}
		reportMemory(b)
	})
	// decode runs two decoders one after the other: the first packs its
	// weights into fresh memory, the second into the first's freed panels,
	// as the rollouts of a training run after the first do.
	decode := func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			decodeOnce(b, m, "")
			decodeOnce(b, m, "_2nd")
		}
		reportMemory(b)
	}
	b.Run("decode", decode)
	b.Run("decode-bf16", func(b *testing.B) {
		for i, v := range m.Params.Data {
			m.Params.Data[i] = backend.RoundBF16(v)
		}
		decode(b)
	})
	// At BF16 precision the activations are rounded to bf16 as well (what
	// PyTorch's bfloat16 decoder computes): bf16 × bf16 products, on the
	// VDPBF16PS panels where the CPU has the instruction (decision 53).
	b.Run("decode-at-bf16", func(b *testing.B) {
		if err := m.Use(m.Backend(), backend.BF16); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := m.Use(m.Backend(), backend.F32); err != nil {
				b.Fatal(err)
			}
		}()
		decode(b)
	})
	loraStep := func(b *testing.B, B, T int, recompute bool) {
		a, err := m.WithLoRA(model.LoRA{Rank: 16, Alpha: 32, Targets: []string{"all-linear"}}, false, 1)
		if err != nil {
			b.Fatal(err)
		}
		a.SetRecompute(recompute)
		opt, err := a.NewAdamW(optim.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		tokens, lens := make([]int, B*T), make([]int, B)
		for i := range tokens {
			tokens[i] = rng.IntN(c.VocabSize)
		}
		dlp := make([]float32, B*T)
		for s := range B {
			lens[s] = T
			for i := T / 2; i < T; i++ {
				dlp[s*T+i] = float32(rng.NormFloat64()) / float32(B*T/2)
			}
		}
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if _, err := a.Forward(tokens, lens, model.Want{LM: true}); err != nil {
				b.Fatal(err)
			}
			a.ZeroGrad()
			if err := a.Backward(model.Grad{LogProb: dlp}); err != nil {
				b.Fatal(err)
			}
			if _, err := a.Step(opt); err != nil {
				b.Fatal(err)
			}
			sec := time.Since(start).Seconds()
			b.ReportMetric(sec, "s/step")
			b.ReportMetric(float64(B*T)/sec, "train_tok/s")
		}
		b.ReportMetric(float64(a.NumParams())/1e6, "trainable_M")
		reportMemory(b)
	}
	b.Run("lora", func(b *testing.B) { loraStep(b, B, prompt+gen, false) })
	b.Run("lora-bf16", func(b *testing.B) {
		if len(m.Params.Data) == m.Layout.Size { // not frozen yet
			for i, v := range m.Params.Data {
				m.Params.Data[i] = backend.RoundBF16(v)
			}
		}
		loraStep(b, B, prompt+gen, false)
	})
	b.Run("lora-long", func(b *testing.B) { loraStep(b, 4, 512, true) })
}

// decodeOnce makes a decoder of m, prefills 16 prompts of 128 tokens and
// samples 128 tokens each, and reports its phases under the names given
// the suffix.
func decodeOnce(b *testing.B, m *model.Model, suffix string) {
	c := m.Config
	const B, prompt, gen = 16, 128, 128
	rng := rand.New(rand.NewPCG(9, 9))
	cpu0 := cpuTime()
	start := time.Now()
	d, err := m.NewDecoder()
	if err != nil {
		b.Fatal(err)
	}
	pack := time.Since(start)
	ids, prompts := make([]int, B), make([][]int, B)
	reqs := make([]model.Request, B)
	for s := range ids {
		ids[s] = s
		for range prompt {
			prompts[s] = append(prompts[s], rng.IntN(c.VocabSize))
		}
		reqs[s] = model.Request{ID: s, RNG: sample.NewRNG(uint64(s))}
	}
	t := time.Now()
	logits, err := d.Append(ids, prompts)
	if err != nil {
		b.Fatal(err)
	}
	var smp sample.Sampler
	for s := range reqs { // the first token, as Generate samples it
		reqs[s].Prompt = []int{smp.Sample(logits[s*c.VocabSize:(s+1)*c.VocabSize], sample.Options{Temperature: 1}, reqs[s].RNG)}
	}
	prefill := time.Since(t)
	t = time.Now()
	out, err := d.Generate(reqs, model.GenerateOptions{Sample: sample.Options{Temperature: 1}, MaxNew: gen - 1})
	if err != nil {
		b.Fatal(err)
	}
	steps := time.Since(t)
	n := B
	for _, o := range out {
		n += len(o)
	}
	d.Close()
	total := time.Since(start).Seconds()
	b.ReportMetric(pack.Seconds(), "pack_s"+suffix)
	b.ReportMetric(prefill.Seconds(), "prefill_s"+suffix)
	b.ReportMetric(steps.Seconds()/(gen-1)*1e3, "ms/step"+suffix)
	b.ReportMetric(float64(n)/total, "tok/s"+suffix)
	b.ReportMetric(cpuTime()-cpu0, "cpu_s"+suffix)
}

// cpuTime is the process's user + system CPU time in seconds: on a machine
// shared with other jobs it says what the work cost when the wall clock
// says mostly how long it waited for a core.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// reportMemory reports the process's peak resident set and the Go heap in
// use, in GB, and the live heap after a collection (what the row's models
// hold, without garbage not yet collected).
func reportMemory(b *testing.B) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/(1<<20), "maxrss_GB") // Maxrss is in KiB on Linux
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<30), "heap_GB")
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<30), "live_GB")
}

// BenchmarkLoadPretrained loads the Hugging Face directory named by
// RAGEN_HF_DIR (go run ./scripts/randomhf DIR writes a random
// Qwen2.5-0.5B-shaped one in bf16) as the base of rank-16 LoRA adapters on
// every linear layer, as ragen train -pretrained DIR -lora-rank 16 does,
// and reports the seconds and the process's peak memory:
//
//	float32  Load, then WithLoRA (which holds the matrices as bf16 only
//	         when they are bf16-exact, after the float32 model was built)
//	frozen   Load with Options.Frozen, then WithLoRA: a bf16 checkpoint's
//	         matrices go from the files into bf16 storage
//
// The peak is the process's: run one sub-benchmark per process,
//
//	RAGEN_HF_DIR=/tmp/qwen05b go test ./engine/hf -run '^$' -bench 'LoadPretrained/frozen$' -benchtime 1x
func BenchmarkLoadPretrained(b *testing.B) {
	dir := os.Getenv("RAGEN_HF_DIR")
	if dir == "" {
		b.Skip("set RAGEN_HF_DIR to a Hugging Face model directory (go run ./scripts/randomhf DIR)")
	}
	for _, frozen := range []bool{false, true} {
		name := map[bool]string{false: "float32", true: "frozen"}[frozen]
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cpu0, start := cpuTime(), time.Now()
				m, _, _, err := Load(dir, Options{Frozen: frozen})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.WithLoRA(model.LoRA{Rank: 16, Alpha: 32, Targets: []string{"all-linear"}}, false, 1); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/load")
				b.ReportMetric(cpuTime()-cpu0, "cpu_s")
				runtime.KeepAlive(m)
			}
			reportMemory(b)
		})
	}
}

// BenchmarkDecodeLoRA decodes with a policy of rank-16 LoRA adapters on
// every linear layer of the Hugging Face directory named by RAGEN_HF_DIR,
// loaded frozen as ragen train -pretrained DIR -lora-rank 16 loads it (a
// bf16 checkpoint: the base is bf16 only), its B set to small random
// values (a trained adapter, not the fresh one that computes the base): 16
// sequences of a 128-token prompt and 128 sampled tokens, twice, as two
// rollouts of a run (decodeOnce's metrics, suffix _2nd for the second),
// the process's peak memory and what the policy holds after them
// (live_GB). One process per run:
//
//	RAGEN_HF_DIR=/tmp/qwen05b go test ./engine/hf -run '^$' -bench DecodeLoRA -benchtime 1x
func BenchmarkDecodeLoRA(b *testing.B) {
	dir := os.Getenv("RAGEN_HF_DIR")
	if dir == "" {
		b.Skip("set RAGEN_HF_DIR to a Hugging Face model directory (go run ./scripts/randomhf DIR)")
	}
	base, _, _, err := Load(dir, Options{Frozen: true})
	if err != nil {
		b.Fatal(err)
	}
	a, err := base.WithLoRA(model.LoRA{Rank: 16, Alpha: 32, Targets: []string{"all-linear"}}, false, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, v := range a.Layout.Views {
		if x := a.Params.Slice(v.Name); len(v.Shape) == 2 && v.Shape[1] == 16 { // a B [out, r]
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 0.01)
			}
		}
	}
	if err := a.Upload(); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		decodeOnce(b, a, "")
		decodeOnce(b, a, "_2nd")
	}
	reportMemory(b) // live_GB: the base, what it keeps for decoding, the adapters
	runtime.KeepAlive(a)
}
