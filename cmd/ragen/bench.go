package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/sample"
	"github.com/ragen-go/ragen/engine/train"
)

func init() {
	register("bench", "training and decoding speed side by side with PyTorch; GEMM against OpenBLAS", runBench)
}

// Workload of `ragen bench`, the one of research/perf.md: B sequences of
// T tokens per training step, vocabulary 512; decoding generates benchNew
// tokens for benchB sequences after a benchPrompt-token prompt (prefill
// included in the time).
const (
	benchB, benchT, benchVocab = 16, 256, 512
	benchPrompt, benchNew      = 128, 128
)

// blasPeerThreads is the OpenBLAS SGEMM peer's thread count (ours runs on
// GOMAXPROCS, 2 on the reference machine).
const blasPeerThreads = 2

// gemmShapes are research/perf.md's SGEMM shapes (M, N, K).
var gemmShapes = [][3]int{{512, 128, 128}, {512, 512, 128}, {512, 128, 512}, {4096, 256, 256}, {256, 8192, 256}, {1024, 1024, 1024}}

type benchOpts struct {
	quick, skipTorch, skipGEMM bool
	rounds, steps, newTokens   int
	qwenRounds                 int // rounds of the qwen2.5-0.5b rows
	torchThreads, blasThreads  int
	presets                    []string
	qwenRows                   []string // the qwen2.5-0.5b rows to run: decode, lora, full
	python, scripts            string
	blas                       blasTuning // the peers' OpenBLAS setting
}

const benchUsage = `usage: ragen bench [flags]

Times our training step and decoding against the same model in PyTorch
(scripts/bench/torch_peer.py), in alternating rounds, and SGEMM against
OpenBLAS (scripts/bench/openblas_peer.c, built with gcc). Run it from the
repository root on a machine as idle as you can get; the load average is
printed with the results.

The peers are tuned as a user would: when OpenBLAS (Debian's picks its
kernels by CPU model) falls back to a core narrower than the CPU allows,
both peers run with OPENBLAS_CORETYPE set to the best one (SkylakeX for
AVX-512, Haswell for AVX2 + FMA, Sandybridge for AVX); an
OPENBLAS_CORETYPE of yours is kept. The first lines say what was used.

-presets qwen2.5-0.5b adds the scale RAGEN trains: random bf16-exact
weights of Qwen2.5-0.5B's shape (494M parameters), decoding (the model
as a bf16 checkpoint loads, at F32 against PyTorch in float32 and at
BF16 against it in bfloat16), forward + backward + AdamW with rank-16
LoRA adapters on all linear layers and of the full model, and the peak
memory of each row on each side. It is not in the default: about 8 minutes
with -quick and half an hour without on 2 busy cores, and each side's full
update needs about 10 GB (the full row runs ours, then PyTorch's).

`

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), benchUsage); fs.PrintDefaults() }
	quick := fs.Bool("quick", false, "short run: 2 rounds, 1 training step and 32 new tokens per round, shorter GEMM timing")
	skipTorch := fs.Bool("skip-torch", false, "do not run the PyTorch peer")
	skipGEMM := fs.Bool("skip-gemm", false, "do not run the GEMM comparison")
	rounds := fs.Int("rounds", 0, "rounds of ours/theirs alternation (default 5, 2 with -quick; "+qwenPreset+": 3, 2 with -quick)")
	presets := fs.String("presets", "small,base", "comma-separated model presets to run: small, base, "+qwenPreset+" (see above)")
	qwenRows := fs.String("qwen-rows", strings.Join(qwenRowNames, ","), "comma-separated rows of "+qwenPreset+" to run: decode, lora, full (the full row needs ~10 GB)")
	python := fs.String("python", "/usr/bin/python3", "Python interpreter with torch (Debian's python3-torch)")
	scripts := fs.String("scripts", "scripts/bench", "directory of the peer programs (torch_peer.py, openblas_peer.c)")
	// research/perf.md: only one of torch's OpenMP pool and OpenBLAS's may
	// use both cores. torch 1 + OpenBLAS 2 is within 7% of the best setting
	// at d=128 and the best at d=256 on an idle machine, and degrades
	// gracefully on a busy one (torch 2 + OpenBLAS 1 lost 5–7× there).
	torchThreads := fs.Int("torch-threads", 1, "PyTorch peer: torch.set_num_threads")
	blasThreads := fs.Int("openblas-threads", 2, "PyTorch peer: OPENBLAS_NUM_THREADS")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of our side (the peers run in their own processes) to this file (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := benchOpts{quick: *quick, skipTorch: *skipTorch, skipGEMM: *skipGEMM, rounds: *rounds,
		steps: 3, newTokens: benchNew, python: *python, scripts: *scripts,
		torchThreads: *torchThreads, blasThreads: *blasThreads}
	if o.quick {
		o.steps, o.newTokens = 1, 32
	}
	o.qwenRounds = o.rounds
	if o.rounds == 0 {
		o.rounds, o.qwenRounds = 5, 3 // a qwen round takes minutes
		if o.quick {
			o.rounds, o.qwenRounds = 2, 2
		}
	}
	if o.rounds < 1 {
		return fmt.Errorf("-rounds: must be ≥ 1 (got %d)", o.rounds)
	}
	if o.torchThreads < 1 || o.blasThreads < 1 {
		return fmt.Errorf("-torch-threads, -openblas-threads: must be ≥ 1 (got %d, %d)", o.torchThreads, o.blasThreads)
	}
	for _, r := range strings.Split(*qwenRows, ",") {
		if !slices.Contains(qwenRowNames, r) {
			return fmt.Errorf("-qwen-rows: unknown row %q (want some of %s)", r, strings.Join(qwenRowNames, ", "))
		}
		o.qwenRows = append(o.qwenRows, r)
	}
	for _, p := range strings.Split(*presets, ",") {
		if _, err := benchConfig(p); err != nil {
			return fmt.Errorf("-presets: %w", err)
		}
		o.presets = append(o.presets, p)
	}
	if slices.ContainsFunc(o.presets, func(p string) bool { return p != qwenPreset }) {
		fmt.Printf("ragen bench: B=%d T=%d vocab=%d; decode %d sequences, %d-token prompt, %d new tokens; %d rounds, best-of and median\n",
			benchB, benchT, benchVocab, benchB, benchPrompt, o.newTokens, o.rounds)
	}
	fmt.Printf("load average at start: %s\n", loadAvg())
	// The OpenBLAS peer serves both to ask OpenBLAS which core it picks and
	// for the GEMM rows; without it (no gcc or libopenblas-dev) the PyTorch
	// peer's interpreter loading torch, and so OpenBLAS, asks.
	var blasBin, blasWhy string
	if !o.skipGEMM || !o.skipTorch {
		blasBin, blasWhy = buildBLASPeer(o.scripts)
		if blasBin != "" {
			defer os.RemoveAll(filepath.Dir(blasBin))
		}
		var probe func() *exec.Cmd
		switch {
		case blasBin != "":
			probe = func() *exec.Cmd { return exec.Command(blasBin, "1", "0", "1,1,1") }
		case !o.skipTorch:
			probe = func() *exec.Cmd { return exec.Command(o.python, "-c", "import torch") }
		}
		o.blas = detectBLAS(probe, blasWhy, o.torchThreads, o.blasThreads)
		fmt.Println(o.blas)
	}
	fmt.Println()
	stopProfile, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var rows []benchRow
	for _, p := range o.presets {
		var r []benchRow
		var err error
		if p == qwenPreset {
			r, err = benchQwen(o)
		} else {
			r, err = benchPreset(p, o)
		}
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	fmt.Println()
	printRows(rows)
	if !o.skipGEMM {
		if err := benchGEMM(o, blasBin, blasWhy); err != nil {
			return err
		}
	}
	fmt.Printf("\nload average at end: %s\n", loadAvg())
	return nil
}

// benchConfig is the model of a preset with the benchmark's vocabulary and a
// value head (as in PPO training).
func benchConfig(name string) (model.Config, error) {
	var c model.Config
	switch name {
	case "small":
		c = model.Small()
	case "base":
		c = model.Base()
	case qwenPreset:
		return hf.Qwen05BConfig(), nil // its own vocabulary, no value head
	default:
		return c, fmt.Errorf("unknown preset %q (want small, base or %s)", name, qwenPreset)
	}
	c.VocabSize, c.ValueHead = benchVocab, true
	return c, nil
}

// benchRow is one line of the results table: tokens/s per round on each side.
type benchRow struct {
	name          string
	ours, theirs  []float64
	oursKB, thKB  int64 // peak RSS of the row's runs (since the last resetPeakRSS)
	theirsMissing bool
}

// benchPreset alternates our training step and decoding with PyTorch's for
// one preset, round by round.
func benchPreset(name string, o benchOpts) ([]benchRow, error) {
	c, _ := benchConfig(name)
	m, err := model.New(c, 1)
	if err != nil {
		return nil, err
	}
	tr, err := newTrainBench(m, benchB, benchT)
	if err != nil {
		return nil, err
	}
	resetPeakRSS()
	var peer *torchPeer
	if !o.skipTorch {
		if peer, err = startPeer(c, name, peerSpec{batch: benchB, seq: benchT}, o); err != nil {
			return nil, err
		}
		defer peer.close()
	}
	train := benchRow{name: "train " + name, theirsMissing: peer == nil}
	decode := benchRow{name: "decode " + name, theirsMissing: peer == nil}
	// Warm-up: one step each, so allocations and thread pools are in place.
	if _, err := tr.steps(1); err != nil {
		return nil, err
	}
	if peer != nil {
		if _, err := peer.do(map[string]any{"op": "train", "steps": 1}); err != nil {
			return nil, err
		}
	}
	for r := 0; r < o.rounds; r++ {
		rate, err := tr.steps(o.steps)
		if err != nil {
			return nil, err
		}
		train.ours = append(train.ours, rate)
		if peer != nil {
			res, err := peer.do(map[string]any{"op": "train", "steps": o.steps})
			if err != nil {
				return nil, err
			}
			train.theirs = append(train.theirs, mean(res.TokS))
			train.thKB = res.MaxRSSKB
		}
		rate, err = decodeBench(tr.m, o.newTokens, uint64(r))
		if err != nil {
			return nil, err
		}
		decode.ours = append(decode.ours, rate)
		if peer != nil {
			res, err := peer.do(map[string]any{"op": "decode", "batch": benchB, "prompt": benchPrompt, "new": o.newTokens})
			if err != nil {
				return nil, err
			}
			decode.theirs = append(decode.theirs, mean(res.TokS))
			decode.thKB = res.MaxRSSKB
		}
		fmt.Fprintf(os.Stderr, "  %s round %d/%d done\n", name, r+1, o.rounds)
	}
	train.oursKB, decode.oursKB = maxRSSKB(), maxRSSKB()
	return []benchRow{train, decode}, nil
}

// trainBench is our training step on a fixed batch of b sequences of t
// tokens: forward, loss = cross-entropy (+ ½·MSE(value, returns) when the
// model has a value head), backward, AdamW (engine/optim) on the model's
// trainable parameters (all, or a LoRA model's adapters).
type trainBench struct {
	m                    *model.Model
	opt                  *optim.AdamW
	b, t                 int
	tokens, lens         []int
	returns, dlp, dvalue []float32
}

func newTrainBench(m *model.Model, b, t int) (*trainBench, error) {
	oc := optim.DefaultConfig()
	oc.LR = 3e-4
	opt, err := m.NewAdamW(oc)
	if err != nil {
		return nil, err
	}
	tb := &trainBench{m: m, opt: opt, b: b, t: t, lens: make([]int, b)}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range tb.lens {
		tb.lens[i] = t
	}
	for range b * t {
		tb.tokens = append(tb.tokens, rng.IntN(m.Config.VocabSize))
		tb.returns = append(tb.returns, float32(rng.NormFloat64()))
	}
	tb.dlp, tb.dvalue = make([]float32, b*t), make([]float32, b*t)
	return tb, nil
}

// steps runs n training steps and returns their tokens/s.
func (t *trainBench) steps(n int) (float64, error) {
	start := time.Now()
	count := float32(t.b * (t.t - 1))
	value := t.m.Config.ValueHead
	for range n {
		out, err := t.m.Forward(t.tokens, t.lens, model.Want{LM: true, Value: value})
		if err != nil {
			return 0, err
		}
		g := model.Grad{LogProb: t.dlp}
		for i := range t.tokens {
			if i%t.t == 0 {
				continue // the first token of a sequence has no prediction
			}
			t.dlp[i] = -1 / count
			if value {
				t.dvalue[i] = (out.Value[i] - t.returns[i]) / count
			}
		}
		if value {
			g.Value = t.dvalue
		}
		t.m.ZeroGrad()
		if err := t.m.Backward(g); err != nil {
			return 0, err
		}
		if _, err := t.m.Step(t.opt); err != nil {
			return 0, err
		}
	}
	return float64(n*t.b*t.t) / time.Since(start).Seconds(), nil
}

// decodeBench generates newTokens tokens at temperature 1 for benchB fresh
// sequences after random prompts, and returns generated tokens/s (the
// decoder's creation and the prefill included).
func decodeBench(m *model.Model, newTokens int, seed uint64) (float64, error) {
	rng := rand.New(rand.NewPCG(seed, 5))
	start := time.Now()
	d, err := m.NewDecoder()
	if err != nil {
		return 0, err
	}
	reqs := make([]model.Request, benchB)
	for i := range reqs {
		prompt := make([]int, benchPrompt)
		for j := range prompt {
			prompt[j] = rng.IntN(m.Config.VocabSize)
		}
		reqs[i] = model.Request{ID: i, Prompt: prompt, RNG: sample.NewRNG(seed*1000 + uint64(i))}
	}
	out, err := d.Generate(reqs, model.GenerateOptions{Sample: sample.Options{Temperature: 1}, MaxNew: newTokens})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range out {
		n += len(o)
	}
	rate := float64(n) / time.Since(start).Seconds()
	// Untimed: the next decoder packs into these panels, and its cache and
	// scratch reuse this one's pages after a collection, as a training
	// run's next rollout does (Trainer.play collects after each rollout).
	// Without it a round took fresh pages from the system until the heap
	// reached its goal, and faulting them in (about 5,000 a round of the
	// small preset, some 9 µs each on the 2-vCPU VMs) was most of a round.
	d.Close()
	runtime.GC()
	return rate, nil
}

// torchPeer is scripts/bench/torch_peer.py running the same model.
type torchPeer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

type peerResult struct {
	TokS     []float64 `json:"tok_s"`
	MaxRSSKB int64     `json:"maxrss_kb"`
	Error    string    `json:"error"`
}

// peerReady is the peer's first line: its model and its view of the CPU.
type peerReady struct {
	Params, Trainable int64
	Torch             string
	ATenCPU           string `json:"aten_cpu_capability"`
	OpenBLASCore      string `json:"openblas_core"`
}

// peerSpec is what a peer trains on and how: b sequences of t tokens, and
// extra arguments (--dtype bfloat16, --lora-rank R).
type peerSpec struct {
	batch, seq int
	extra      []string
}

// startPeer starts the PyTorch peer for c with o's thread and OpenBLAS
// setting.
func startPeer(c model.Config, name string, spec peerSpec, o benchOpts) (*torchPeer, error) {
	script := filepath.Join(o.scripts, "torch_peer.py")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("PyTorch peer: %w (run from the repository root, set -scripts, or use -skip-torch)", err)
	}
	torchThreads, blasThreads := o.torchThreads, o.blasThreads
	valueHead := "0"
	if c.ValueHead {
		valueHead = "1"
	}
	args := []string{script,
		"--d", strconv.Itoa(c.HiddenSize), "--layers", strconv.Itoa(c.NumLayers),
		"--heads", strconv.Itoa(c.NumHeads), "--kv-heads", strconv.Itoa(c.NumKVHeads),
		"--inter", strconv.Itoa(c.IntermediateSize), "--vocab", strconv.Itoa(c.VocabSize),
		"--max-pos", strconv.Itoa(c.MaxPositions), "--eps", strconv.FormatFloat(c.RMSNormEps, 'g', -1, 64),
		"--rope-theta", strconv.FormatFloat(c.RopeTheta, 'g', -1, 64), "--value-head", valueHead,
		"--batch", strconv.Itoa(spec.batch), "--seq", strconv.Itoa(spec.seq), "--torch-threads", strconv.Itoa(torchThreads)}
	cmd := exec.Command(o.python, append(args, spec.extra...)...)
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS="+strconv.Itoa(blasThreads), "OMP_NUM_THREADS="+strconv.Itoa(torchThreads))
	cmd.Env = append(cmd.Env, o.blas.env()...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("PyTorch peer: %w (set -python, or use -skip-torch)", err)
	}
	p := &torchPeer{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	if !p.out.Scan() {
		p.close()
		return nil, fmt.Errorf("PyTorch peer exited before it was ready: is torch installed for %s? (apt-get install -y python3-torch, set -python, or use -skip-torch)", o.python)
	}
	var r peerReady
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		p.close()
		return nil, fmt.Errorf("PyTorch peer: bad ready line %q: %w", p.out.Text(), err)
	}
	fmt.Printf("PyTorch peer %s: torch %s, ATen CPU capability %s, OpenBLAS core %s, torch threads %d, OpenBLAS threads %d, %d parameters (%d trained)\n",
		strings.Join(append([]string{name}, spec.extra...), " "), r.Torch, r.ATenCPU, r.OpenBLASCore, torchThreads, blasThreads, r.Params, r.Trainable)
	return p, nil
}

func (p *torchPeer) do(req map[string]any) (peerResult, error) {
	var res peerResult
	b, _ := json.Marshal(req)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return res, fmt.Errorf("PyTorch peer: %w", err)
	}
	if !p.out.Scan() {
		return res, errors.New("PyTorch peer exited unexpectedly")
	}
	if err := json.Unmarshal(p.out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("PyTorch peer: bad reply %q: %w", p.out.Text(), err)
	}
	if res.Error != "" || len(res.TokS) == 0 {
		return res, fmt.Errorf("PyTorch peer: %s", p.out.Text())
	}
	p.settle()
	return res, nil
}

// settle waits until the peer has gone idle. OpenBLAS's threads spin for a
// while after their last product (about 2²⁸ cycles by default) before they
// sleep: the run of ours that follows would share its cores with them, and
// our worker pool, seeing less than a second core, would run serially for
// a while (parallel.For). That made our median decoding rate half the
// best one. The peer is idle when its CPU time grows by under 20% of a
// core over settlePoll; settle gives up after settleMax. Without
// /proc/PID/stat it waits settleMax/10.
func (p *torchPeer) settle() {
	const settlePoll, settleMax = 50 * time.Millisecond, 3 * time.Second
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	prev, ok := cpuTicks(stat)
	if !ok {
		time.Sleep(settleMax / 10)
		return
	}
	for start := time.Now(); time.Since(start) < settleMax; {
		time.Sleep(settlePoll)
		now, ok := cpuTicks(stat)
		// Ticks are 10 ms (USER_HZ 100): at most one tick in 50 ms.
		if !ok || now-prev <= 1 {
			return
		}
		prev = now
	}
}

// cpuTicks reads a process's user + system CPU time, in clock ticks, from
// its /proc/PID/stat.
func cpuTicks(stat string) (int64, bool) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0, false
	}
	// Fields after the command name (in parentheses, which may hold spaces):
	// state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + s, err1 == nil && err2 == nil
}

func (p *torchPeer) close() {
	p.in.Close() // the peer's loop ends at EOF
	p.cmd.Wait()
}

func printRows(rows []benchRow) {
	w := len("tokens/s")
	for _, r := range rows {
		w = max(w, len(r.name))
	}
	fmt.Printf("%-*s %20s %20s %16s %22s\n", w, "tokens/s", "ragen best / median", "torch best / median", "ratio best / med", "peak RSS ragen / torch")
	for _, r := range rows {
		fmt.Printf("%-*s %9.1f / %-8.1f", w, r.name, slices.Max(r.ours), median(r.ours))
		if r.theirsMissing {
			fmt.Printf(" %20s %16s %13.0f MiB / –\n", "–", "–", float64(r.oursKB)/1024)
			continue
		}
		fmt.Printf(" %9.1f / %-8.1f %7.2f× / %5.2f× %9.0f / %.0f MiB\n", slices.Max(r.theirs), median(r.theirs),
			slices.Max(r.ours)/slices.Max(r.theirs), median(r.ours)/median(r.theirs), float64(r.oursKB)/1024, float64(r.thKB)/1024)
	}
}

// benchGEMM compares gemm.Sgemm (C = A·B) with OpenBLAS's cblas_sgemm on
// the perf.md shapes, both on 2 threads, in alternating rounds. peer is
// the OpenBLAS peer buildBLASPeer compiled ("": none, for reason why).
func benchGEMM(o benchOpts, peer, why string) error {
	secs := 0.3
	if o.quick {
		secs = 0.1
	}
	ours := make([][]float64, len(gemmShapes))
	theirs := make([][]float64, len(gemmShapes))
	for range o.rounds {
		for i, s := range gemmShapes {
			ours[i] = append(ours[i], gemmRate(s, secs))
		}
		if peer == "" {
			continue
		}
		rates, err := runBLASPeer(peer, secs, o.blas)
		if err != nil {
			return err
		}
		for i := range theirs {
			theirs[i] = append(theirs[i], rates[i])
		}
	}
	fmt.Printf("\n%-16s %20s %20s %16s\n", "SGEMM GFLOP/s", "ragen best / median", "OpenBLAS best / med", "ratio best / med")
	for i, s := range gemmShapes {
		fmt.Printf("%-16s %9.1f / %-8.1f", fmt.Sprintf("%d,%d,%d", s[0], s[1], s[2]), slices.Max(ours[i]), median(ours[i]))
		if peer == "" {
			fmt.Println()
			continue
		}
		fmt.Printf(" %9.1f / %-8.1f %7.2f× / %5.2f×\n", slices.Max(theirs[i]), median(theirs[i]),
			slices.Max(ours[i])/slices.Max(theirs[i]), median(ours[i])/median(theirs[i]))
	}
	if peer == "" {
		fmt.Printf("(no OpenBLAS comparison: %s)\n", why)
	}
	return nil
}

// gemmRate is the best GFLOP/s of repeated products of shape s over secs.
func gemmRate(s [3]int, secs float64) float64 {
	m, n, k := s[0], s[1], s[2]
	rng := rand.New(rand.NewPCG(uint64(m), uint64(n)))
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = rng.Float32()
	}
	for i := range b {
		b[i] = rng.Float32()
	}
	best := math.Inf(1)
	for start := time.Now(); time.Since(start).Seconds() < secs; {
		t0 := time.Now()
		gemm.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		best = min(best, time.Since(t0).Seconds())
	}
	return 2 * float64(m) * float64(n) * float64(k) / best / 1e9
}

// buildBLASPeer compiles openblas_peer.c into a temporary directory and
// returns the binary, or "" and the reason it could not.
func buildBLASPeer(scripts string) (bin, why string) {
	src := filepath.Join(scripts, "openblas_peer.c")
	if _, err := os.Stat(src); err != nil {
		return "", err.Error()
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		return "", "gcc not found"
	}
	dir, err := os.MkdirTemp("", "ragen-bench")
	if err != nil {
		return "", err.Error()
	}
	bin = filepath.Join(dir, "openblas_peer")
	if out, err := exec.Command("gcc", "-O2", src, "-o", bin, "-lopenblas").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Sprintf("building the peer failed (apt-get install -y libopenblas-dev): %s", strings.TrimSpace(string(out)))
	}
	return bin, ""
}

// runBLASPeer runs the OpenBLAS peer on blasPeerThreads threads over
// gemmShapes, with t's OPENBLAS_CORETYPE.
func runBLASPeer(bin string, secs float64, t blasTuning) ([]float64, error) {
	args := []string{strconv.Itoa(blasPeerThreads), strconv.FormatFloat(secs, 'f', 2, 64)}
	for _, s := range gemmShapes {
		args = append(args, fmt.Sprintf("%d,%d,%d", s[0], s[1], s[2]))
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), t.env()...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("OpenBLAS peer: %w", err)
	}
	var rates []float64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("OpenBLAS peer: bad line %q", line)
		}
		r, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			return nil, fmt.Errorf("OpenBLAS peer: bad line %q", line)
		}
		rates = append(rates, r)
	}
	if len(rates) != len(gemmShapes) {
		return nil, fmt.Errorf("OpenBLAS peer: %d results for %d shapes", len(rates), len(gemmShapes))
	}
	return rates, nil
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// maxRSSKB is this process's peak resident set size in KiB (0 where the
// system does not report it), since the last resetPeakRSS.
func maxRSSKB() int64 {
	b, _ := train.PeakMemory()
	return b / 1024
}

// resetPeakRSS returns garbage to the OS and restarts the peak resident
// set size getrusage reports from the current size (Linux 4.0+: "5" in
// /proc/self/clear_refs resets the high-water mark), so that a row's peak
// is its own and not an earlier row's. Elsewhere peaks stay the process's.
func resetPeakRSS() {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
