package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all"
)

func init() {
	register("train", "train an agent with StarPO / StarPO-S from the terminal", runTrain)
}

// optionFlags collects repeated -opt key=value flags.
type optionFlags []string

func (o *optionFlags) String() string     { return strings.Join(*o, ",") }
func (o *optionFlags) Set(v string) error { *o = append(*o, v); return nil }

func runTrain(args []string) error {
	fs := flag.NewFlagSet("ragen train", flag.ContinueOnError)
	c := train.Default()
	var opts optionFlags
	preset := fs.String("preset", "starpo-s", "algorithm preset: starpo-s | starpo")
	estimator := fs.String("estimator", "", "advantage estimator (default: the preset's): "+strings.Join(algo.Estimators, " | "))
	filter := fs.Float64("filter", -1, "keep this fraction of groups by in-group reward std (default: the preset's)")
	filterMetric := fs.String("filter-metric", "", "group statistic the filter selects by (default: the preset's): "+strings.Join(algo.FilterMetrics, " | "))
	filterStrategy := fs.String("filter-strategy", "", "group selection (default: -filter's ratio): "+strings.Join(algo.FilterStrategies[2:], " | ")+" (RAGEN v2)")
	filterValue := fs.Float64("filter-value", 0, "the -filter-strategy's value: top_p mass, top_k or min_p fraction in (0, 1]; top_k_abs groups (RAGEN recommends top_p 0.9)")
	filterTopPMode := fs.String("filter-top-p-mode", "", "top_p: linear (cumulative score) | softmax (cumulative softmax probability) (default: linear)")
	filterEps := fs.Float64("filter-eps", algo.DefaultSelectionEps, "ε of linear top-p: keep groups until their summed score reaches value·total − ε")
	filterSmallest := fs.Bool("filter-smallest", false, "select the groups with the lowest statistic first")
	filterIncludeZero := fs.Bool("filter-include-zero", true, "groups whose statistic is 0 may be kept (RAGEN include_zero; its docs recommend false with top_p)")
	fs.StringVar(&c.LossMask, "loss-mask", "", "agent tokens the policy loss covers: "+strings.Join(train.LossMasks, " | ")+" (default: all; the critic and advantages keep every agent token)")
	fs.IntVar(&c.FilterEmptyStop, "filter-empty-stop", 0, "end the run after N consecutive steps whose filter kept no group (0: never; RAGEN 5)")
	lossAgg := fs.String("loss-agg", "", "loss aggregation (default: the preset's): "+strings.Join(algo.LossAggs, " | "))
	fs.StringVar(&c.Env, "env", c.Env, "environment: "+strings.Join(envs.Names(), " | "))
	fs.Var(&opts, "opt", "environment option key=value (repeatable), e.g. -opt dim=6 -opt boxes=1")
	fs.StringVar(&c.Model, "model", c.Model, "model preset: tiny | small | base")
	fs.StringVar(&c.Backend, "backend", c.Backend, "compute backend: "+strings.Join(backend.Names(), " | "))
	fs.StringVar(&c.Precision, "precision", "f32", "matrix products: f32 | bf16 (bf16 weights and activations, f32 master weights and accumulation; on every backend)")
	fs.IntVar(&c.Steps, "steps", c.Steps, "training steps (0: only evaluate the starting policy on the -val games)")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "experiment seed")
	fs.IntVar(&c.EnvGroups, "groups", c.EnvGroups, "environment groups per step (one initial state each)")
	fs.IntVar(&c.GroupSize, "group-size", c.GroupSize, "trajectories per group")
	fs.IntVar(&c.ValEpisodes, "val", c.ValEpisodes, "validation episodes on held-out seeds (0: none)")
	fs.IntVar(&c.ValEvery, "val-every", c.ValEvery, "validate every N steps")
	temperature := fs.Float64("temperature", float64(c.Temperature), "sampling temperature of training rollouts (the PPO ratio uses logits ÷ this temperature)")
	valTemperature := fs.Float64("val-temperature", float64(c.ValTemperature), "sampling temperature of validation (0: greedy)")
	fs.IntVar(&c.MaxTokensPerTurn, "max-tokens", c.MaxTokensPerTurn, "tokens per response before it is cut (unclosed </answer>)")
	fs.Float64Var(&c.ActorLR, "lr", c.ActorLR, "actor learning rate")
	fs.Float64Var(&c.CriticLR, "critic-lr", c.CriticLR, "critic learning rate")
	fs.IntVar(&c.LRWarmup, "lr-warmup", c.LRWarmup, "optimizer updates over which the learning rates ramp up linearly (0: constant)")
	fs.IntVar(&c.MiniBatches, "minibatches", c.MiniBatches, "optimizer steps per PPO epoch")
	fs.IntVar(&c.PPOEpochs, "epochs", c.PPOEpochs, "PPO epochs over each step's rollouts")
	fs.BoolVar(&c.Recompute, "recompute", false, "keep one transformer block's activations, recomputing them in the backward pass (less memory, one more forward pass; the same numbers)")
	fs.IntVar(&c.MicroBatchTokens, "micro-batch-tokens", 0, "most tokens of one forward and backward pass of an update: larger minibatches accumulate gradients over micro-batches (0: a whole minibatch at once)")
	fs.IntVar(&c.WarmStart.Steps, "sft-steps", c.WarmStart.Steps, "warm-start fine-tuning steps (0: none)")
	fs.IntVar(&c.WarmStart.Episodes, "sft-episodes", c.WarmStart.Episodes, "expert episodes the warm start learns from")
	fs.BoolVar(&c.WarmStart.LearnContext, "sft-context", c.WarmStart.LearnContext, "warm start also learns the context tokens (observations), not only the responses: needed to learn to read the state from scratch")
	fs.Float64Var(&c.WarmStart.Imperfect, "sft-imperfect", c.WarmStart.Imperfect, "fraction of warm-start turns answered by an imperfect demonstration")
	fs.StringVar(&c.Init, "init", "", "start from this checkpoint of ours instead of the warm start (a model.Save directory, a cached warm start, or runs/x/checkpoints/step-N/policy); no fine-tuning unless -sft-steps is given")
	fs.StringVar(&c.Pretrained, "pretrained", "", "start from this Hugging Face model directory (Qwen2 or Llama: config.json, safetensors, tokenizer); no fine-tuning unless -sft-steps is given")
	fs.StringVar(&c.RunDir, "run", "", "run directory for config, metrics.jsonl, events and checkpoints")
	fs.IntVar(&c.CheckpointEvery, "checkpoint-every", 0, "checkpoint every N steps (0: at the end only)")
	loraRank := fs.Int("lora-rank", 0, "train LoRA adapters of this rank on the frozen policy instead of all its weights (0: full fine-tuning); the critic gets its own adapters on the same base, the base is the KL reference")
	loraAlpha := fs.Float64("lora-alpha", 0, "LoRA scaling numerator: adapters add (alpha/rank)·x·Aᵀ·Bᵀ (default: 2 × rank)")
	loraTargets := fs.String("lora-targets", "all-linear", "comma-separated modules the adapters target: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj or all-linear")
	resume := fs.String("resume", "", "resume from this checkpoint directory (runs/x/checkpoints/step-000020)")
	quiet := fs.Bool("quiet", false, "print only the final summary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; see ragen train -h)", fs.Arg(0))
	}
	if c.Init != "" && c.Pretrained != "" {
		return fmt.Errorf("-init and -pretrained both name a starting model; give one")
	}
	if c.Init != "" || c.Pretrained != "" {
		sftSet := false
		fs.Visit(func(f *flag.Flag) { sftSet = sftSet || f.Name == "sft-steps" })
		if !sftSet { // a loaded model needs no warm start unless asked for one
			c.WarmStart.Steps = 0
		}
	}
	c.Temperature, c.ValTemperature = float32(*temperature), float32(*valTemperature)
	if *loraRank != 0 {
		alpha := *loraAlpha
		if alpha == 0 {
			alpha = 2 * float64(*loraRank)
		}
		c.LoRA = &model.LoRA{Rank: *loraRank, Alpha: alpha, Targets: strings.Split(*loraTargets, ",")}
	}
	switch *preset {
	case "starpo-s", "starpos":
		c.Algo = algo.StarPOS()
	case "starpo":
		c.Algo = algo.StarPO()
	default:
		return fmt.Errorf("-preset: must be starpo-s or starpo (got %q)", *preset)
	}
	if *estimator != "" {
		c.Algo.AdvEstimator = *estimator
	}
	if *filter >= 0 {
		c.Algo.FilterRatio = *filter
	}
	if *filterMetric != "" {
		c.Algo.FilterMetric = *filterMetric
	}
	c.Algo.FilterStrategy, c.Algo.FilterValue, c.Algo.FilterTopPMode = *filterStrategy, *filterValue, *filterTopPMode
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "filter-eps" {
			c.Algo.FilterSelectionEps = filterEps
		}
	})
	c.Algo.FilterSmallest, c.Algo.FilterExcludeZero = *filterSmallest, !*filterIncludeZero
	if *lossAgg != "" {
		c.Algo.LossAgg = *lossAgg
	}
	if len(opts) > 0 {
		spec, ok := envs.Lookup(c.Env)
		if !ok {
			return fmt.Errorf("-env: unknown environment %q (known: %s)", c.Env, strings.Join(envs.Names(), ", "))
		}
		c.EnvOptions = map[string]any{}
		for _, kv := range opts {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("-opt %q: want key=value", kv)
			}
			var opt *envs.Option
			for i := range spec.Options {
				if spec.Options[i].Name == k {
					opt = &spec.Options[i]
				}
			}
			if opt == nil {
				_, err := spec.Resolve(map[string]any{k: v})
				return err
			}
			val, err := envs.ParseOptionValue(*opt, v)
			if err != nil {
				return err
			}
			c.EnvOptions[k] = val
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	obs := &printer{quiet: *quiet, start: time.Now(), steps: c.Steps, warmStart: warmStartLine(&c)}
	if c.Steps == 0 {
		fmt.Fprintf(os.Stderr, "ragen train: %s, model %s, no training: evaluating on %d validation games\n", c.Env, c.Model, c.ValEpisodes)
	} else {
		fmt.Fprintf(os.Stderr, "ragen train: %s, %s preset, model %s, %d×%d rollouts per step, %d steps\n",
			c.Env, *preset, c.Model, c.EnvGroups, c.GroupSize, c.Steps)
	}
	tr, err := train.New(ctx, c, obs)
	if err != nil {
		return err
	}
	if dir, _ := train.WarmStartDir(&c); dir != "" && !*quiet {
		fmt.Fprintf(os.Stderr, "warm start cached in %s (-init starts other runs from it)\n", dir)
	}
	if *resume != "" {
		if err := tr.Resume(*resume); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "resumed at step %d\n", tr.StepsDone())
	}
	err = tr.Run(ctx)
	summary(tr.History, c.ValEpisodes)
	if c.RunDir != "" {
		fmt.Fprintf(os.Stderr, "run directory: %s\n", c.RunDir)
	}
	if errors.Is(err, context.Canceled) {
		return errors.New(interrupted(tr.StepsDone(), c.RunDir))
	}
	return err
}

// interrupted says how a run stopped by Ctrl-C after step steps can go
// on: from the newest checkpoint in runDir/checkpoints if there is one,
// else that nothing was saved. (The trainer saves every -checkpoint-every
// steps and at the end, not on an interrupt: a step cut short may have
// updated part of the weights.)
func interrupted(step int, runDir string) string {
	msg := fmt.Sprintf("interrupted after step %d", step)
	if runDir == "" {
		return msg + "; nothing was saved (no -run directory): run again to start over"
	}
	dirs, _ := filepath.Glob(filepath.Join(runDir, "checkpoints", "step-[0-9][0-9][0-9][0-9][0-9][0-9]"))
	last, lastStep := "", -1
	for _, d := range dirs {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "step-"))
		if st, serr := os.Stat(d); err == nil && serr == nil && st.IsDir() && n > lastStep {
			last, lastStep = d, n
		}
	}
	if last == "" {
		return msg + "; no checkpoint was saved (-checkpoint-every N saves one every N steps; by default only the end of the run does): run again to start over"
	}
	msg += fmt.Sprintf("; resume with -resume %s", last)
	if lastStep < step {
		msg += fmt.Sprintf(" (saved at step %d: the steps after it will be trained again)", lastStep)
	}
	return msg
}

// printer is the terminal observer: one line per step.
type printer struct {
	quiet bool
	start time.Time
	steps int
	// warmStart says what the warm_start phase does: train and cache a
	// warm start, fine-tune a loaded model (not cached), or only load one.
	warmStart string
}

func (p *printer) Phase(step int, phase string) {
	if !p.quiet && phase == "warm_start" {
		fmt.Fprintln(os.Stderr, p.warmStart)
	}
}

// warmStartLine describes c's warm-start phase for the printer.
func warmStartLine(c *train.Config) string {
	switch {
	case c.Init == "" && c.Pretrained == "":
		return "warm start: expert demonstrations, vocabulary, fine-tuning (cached after the first run)..."
	case c.WarmStart.Steps > 0:
		return fmt.Sprintf("loading the model, then fine-tuning it on demonstrations for %d steps (not cached)...", c.WarmStart.Steps)
	}
	return "loading the model..."
}

func (p *printer) Step(s metrics.Step) {
	if p.quiet {
		return
	}
	v := s.Values
	line := fmt.Sprintf("step %3d/%d", s.Step, p.steps)
	add := func(label, name, format string) {
		if x, ok := v[name]; ok {
			line += fmt.Sprintf("  %s "+format, label, x)
		}
	}
	add("reward", metrics.RewardMean, "%6.3f")
	add("success", metrics.SuccessRate, "%4.2f")
	add("val", metrics.ValSuccessRate, "%4.2f")
	add("std", metrics.InGroupStd, "%5.3f")
	add("entropy", metrics.Entropy, "%5.3f")
	add("gnorm", metrics.GradNorm, "%6.3f")
	add("tokens", metrics.TurnTokens, "%5.1f")
	add("s", metrics.TimeStep, "%5.1f")
	fmt.Fprintln(os.Stderr, line)
}

func (p *printer) Event(e metrics.Event) {
	fmt.Fprintf(os.Stderr, "  ! step %d %s: %s\n", e.Step, e.Kind, e.Message)
}

// summary prints the first and last value of the main metrics, and the
// last validation success with its standard error over the games,
// √(p(1−p)/n), to tell a difference between runs from the games' noise.
func summary(h metrics.History, valGames int) {
	if len(h.Steps) == 0 {
		return
	}
	first, last := h.Steps[0], h.Steps[len(h.Steps)-1]
	fmt.Printf("%-22s %10s %10s\n", "metric", "first", "last")
	for _, name := range []string{metrics.ValSuccessRate, metrics.SuccessRate, metrics.RewardMean, metrics.Entropy, metrics.TurnTokens} {
		f, okf := first.Values[name]
		l, okl := last.Values[name]
		if !okf && !okl {
			continue
		}
		fs, ls := "-", "-"
		if okf {
			fs = fmt.Sprintf("%.3f", f)
		}
		if okl {
			ls = fmt.Sprintf("%.3f", l)
		}
		fmt.Printf("%-22s %10s %10s\n", name, fs, ls)
	}
	if gb, ok := last.Values[metrics.PeakRSS]; ok {
		fmt.Printf("peak memory %.1f GB\n", gb)
	}
	if p, ok := last.Values[metrics.ValSuccessRate]; ok && valGames > 0 {
		fmt.Printf("validation success %.3f ± %.3f (standard error over %d games)\n", p, math.Sqrt(p*(1-p)/float64(valGames)), valGames)
	}
}
