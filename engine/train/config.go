package train

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/dist"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/envs"
)

// Config is one StarPO experiment: environment, model, algorithm, rollout
// shape, optimisation and run keeping. Every field has its default in
// Default(); Validate names the field of any bad value.
type Config struct {
	// Env names a registered environment ("bandit", "sokoban", ...).
	Env string `json:"env" flag:"env" help:"environment (ragen play -list shows each with its options)" group:"environment and model"`
	// EnvOptions are the environment's options ({"dim": 6, "boxes": 1}),
	// the turn and action budgets included (max_turns,
	// max_actions_per_turn, max_actions_per_episode).
	EnvOptions map[string]any `json:"env_options,omitempty" flag:"-"` // -opt key=value
	// NewEnv, when set, builds the environment instead of Env/EnvOptions
	// (a custom environment defined in a notebook cell). Its name for the
	// run is EnvLabel.
	NewEnv   func() (envs.Env, error) `json:"-" flag:"-"`
	EnvLabel string                   `json:"env_label,omitempty" flag:"-"`

	// Model is the policy's size preset: tiny | small | base (small);
	// ignored when Pretrained or Init gives the policy.
	Model string `json:"model" flag:"model" help:"model preset: tiny | small | base"`
	// Pretrained is a Hugging Face model directory (config.json, safetensors,
	// tokenizer.json, tokenizer_config.json; Qwen2 or Llama): the policy,
	// its tokenizer and its chat template come from it instead of the warm
	// start, and the critic starts from its weights. Model, VocabSize and
	// ContextLength are then ignored (the checkpoint's own sizes and
	// max_position_embeddings hold); WarmStart.Steps > 0 fine-tunes it on
	// demonstrations first. Empty: the warm start.
	Pretrained string `json:"pretrained,omitempty" flag:"pretrained" help:"start from this Hugging Face model directory (Qwen2 or Llama: config.json, safetensors, tokenizer); no fine-tuning unless -sft-steps is given"`
	// Init is a checkpoint of ours to start from instead of the warm start:
	// a directory written by model.Save, or a run's checkpoints/step-N
	// (its policy/). Its tokenizer comes with it, the template is our
	// ChatML, the critic starts from the policy; Model, VocabSize and
	// ContextLength are ignored as for Pretrained.
	Init string `json:"init,omitempty" flag:"init" help:"start from this checkpoint of ours instead of the warm start (a model.Save directory, a cached warm start, or runs/x/checkpoints/step-N/policy); no fine-tuning unless -sft-steps is given"`
	// Backend is the compute backend: cpu | cuda (empty means cpu). The
	// models run on it with their parameters, gradients, activations, KV
	// caches and optimizer state (model.Model.Use); "cuda" needs a binary
	// built with -tags cuda and a CUDA device.
	Backend string `json:"backend" flag:"backend" help:"compute backend: cpu | cuda (cuda: a binary built with -tags cuda)"`
	// Precision of the matrix products: f32 | bf16 (empty means f32).
	// bf16 keeps the float32 parameters as the master copy that AdamW
	// updates and multiplies bf16-rounded weights and activations with
	// float32 accumulation; every other op stays float32
	// (model.Model.Use). The same on every backend, the CPU included.
	Precision string `json:"precision,omitempty" flag:"precision" help:"matrix products: f32 | bf16 (bf16 weights and activations, f32 master weights and accumulation; on every backend)"`
	// LoRA, when set, trains low-rank adapters (rank, alpha, target
	// modules) on the frozen policy instead of all its weights, after the
	// warm start: the critic is its own adapters and value head on the same
	// base in memory, the reference policy is the base itself, and
	// checkpoints also hold the policy's adapters as a PEFT directory
	// (policy-adapter/). nil: full fine-tuning.
	LoRA *model.LoRA `json:"lora,omitempty" flag:"lora" group:"LoRA (adapters on the frozen policy instead of full fine-tuning)"`
	// ContextLength is the policy's max_position_embeddings, the longest
	// conversation in tokens (1024).
	ContextLength int `json:"context_length" flag:"context-length" help:"longest conversation in tokens (a loaded model keeps its own)"`
	// VocabSize of the byte-level BPE vocabulary trained on the
	// environment's text for the tiny presets (512).
	VocabSize int `json:"vocab_size" flag:"vocab-size" help:"BPE vocabulary trained on the environment's text (a loaded model keeps its own)"`

	// Algo holds advantages, losses, KL and the group filter (StarPO-S).
	Algo algo.Config `json:"algo" flag:"" group:"algorithm (defaults: StarPO-S; -preset starpo changes them, these flags override the preset)"`
	// FilterEmptyStop ends the run early, as finished, after this many
	// consecutive steps whose filter kept no group (each is skipped: no
	// update); 0 never stops (0; RAGEN rollout_filter_empty_stop_steps 5).
	FilterEmptyStop int `json:"filter_empty_stop,omitempty" flag:"filter-empty-stop" help:"end the run after N consecutive steps whose filter kept no group (0: never; RAGEN 5)"`
	// CollapseEvery computes RAGEN-2's template-collapse diagnostics
	// (mutual information between prompts and reasoning, retrieval
	// accuracy; see collapse.go) on step 1 and every N steps, from up to 64
	// sampled first turns of the step's rollouts; 0 never (0; RAGEN-2 5).
	// They change no other number of the run (decision 39).
	CollapseEvery int `json:"collapse_every,omitempty" flag:"collapse-every" help:"template-collapse metrics (MI of prompt and reasoning, retrieval accuracy) on step 1 and every N steps (0: never; RAGEN-2 5)"`
	// CollapseTrajectory adds, on the steps CollapseEvery computes, the
	// same metrics over (context, reasoning) pairs drawn from every turn
	// of the trajectories, not just the first (RAGEN-2's multi_turn_enabled,
	// collapse_trajectory_sample/*; see trajectoryCollapse) (false). Each
	// pair's own turn context is a column, so it costs up to 64 × 64
	// scored sequences of a whole history each.
	CollapseTrajectory bool `json:"collapse_trajectory,omitempty" flag:"collapse-trajectory" help:"with -collapse-every: also the template-collapse metrics over turns sampled from whole trajectories (RAGEN-2 multi-turn)"`
	// GradientReportEvery runs RAGEN's gradient analysis on step 1 and
	// every N steps after it (1, N+1, 2N+1, …: RAGEN's (step − 1) % N = 0):
	// the kept batch split into buckets of groups by in-group reward std,
	// and on each the norm of the gradient of each term of the actor loss
	// (task, entropy, KL) alone, without an optimizer step
	// (grad_norm/<bucket>/…; see gradreport.go); 0 never (0; RAGEN 50).
	// It changes no other number of the run (decision 45).
	GradientReportEvery int `json:"gradient_report_every,omitempty" flag:"grad-report-every" help:"gradient norms of the task, entropy and KL terms per reward-std bucket, on step 1 and every N steps after (0: never; RAGEN 50)"`
	// GradientReportBuckets is the number of quantile buckets (0 means 6,
	// RAGEN's gradient_analysis_num_buckets); fewer when fewer groups are
	// kept.
	GradientReportBuckets int `json:"gradient_report_buckets,omitempty" flag:"grad-report-buckets" help:"reward-std buckets of the gradient report (0: 6, as RAGEN)"`
	// GradientReportBucketMode is how groups are bucketed: quantile (equal
	// numbers of groups by rank of std; "" too) or fixed_rv (std in [0,1),
	// [1,2), …, [4,5), ≥ 5; RAGEN's edges).
	GradientReportBucketMode string `json:"gradient_report_bucket_mode,omitempty" flag:"grad-report-bucket-mode" help:"bucketing of the gradient report: quantile (equal numbers of groups) | fixed_rv (std in [0,1), [1,2), …, ≥ 5)"`
	// LossMask chooses which agent tokens the policy loss (and its
	// entropy and KL terms) covers, VAGEN-style: all | answer | think
	// ("" = all, as RAGEN). The critic, the advantages and the metrics
	// keep every agent token. With LossMaskFunc it is that rule's text,
	// a label for config.json.
	LossMask string `json:"loss_mask,omitempty" flag:"loss-mask" help:"agent tokens the policy loss covers: all | answer | think (the critic and advantages keep every agent token)"`
	// LossMaskFunc, when set, decides per sampled token whether the
	// policy loss covers it (the DSL's loss-mask expressions); an error
	// stops the run, naming the token.
	LossMaskFunc func(MaskToken) (bool, error) `json:"-"`

	// Steps is the number of training steps (rollout + update) (40); 0
	// only evaluates the starting policy on the validation games.
	Steps int `json:"steps" flag:"steps" help:"training steps (0: only evaluate the starting policy on the -val games)" group:"training"`
	// Seed fixes everything: environment seeds, sampling streams, model
	// init. Same seed, same metrics, bit for bit (1).
	Seed int64 `json:"seed" flag:"seed" help:"experiment seed: same seed, same metrics"`

	// EnvGroups × GroupSize trajectories per step; a group shares one
	// initial state (8 × 8; RAGEN 8 × 16).
	EnvGroups int `json:"env_groups" flag:"groups" help:"environment groups per step (one initial state each)" group:"rollouts"`
	GroupSize int `json:"group_size" flag:"group-size" help:"trajectories per group"`
	// MaxTokensPerTurn ends a response not closed by </answer> (200; the
	// experts' longest Sokoban reasoning is about 130 tokens of a 512 vocabulary).
	MaxTokensPerTurn int `json:"max_tokens_per_turn" flag:"max-tokens" help:"tokens per response before it is cut (unclosed </answer>)"`
	// Temperature, TopK, TopP of training rollouts (1, 0 = off, 1 = off).
	Temperature float32 `json:"temperature" flag:"temperature" help:"sampling temperature of training rollouts (the PPO ratio uses logits ÷ this temperature)"`
	TopK        int     `json:"top_k" flag:"top-k" help:"sample among the k likeliest tokens (0: off)"`
	TopP        float32 `json:"top_p" flag:"top-p" help:"nucleus sampling: the smallest set of tokens with this much probability (1: off)"`
	// FormatPenalty is added to a turn's reward when its answer does not
	// parse or names an unknown action (−0.1).
	FormatPenalty float64 `json:"format_penalty" flag:"format-penalty" help:"reward added to a turn whose answer does not parse (≤ 0)"`
	// Think asks for <think>…</think> before the answer (true).
	Think bool `json:"think" flag:"think" help:"ask for <think>…</think> before the answer (-think=false: answer only)"`

	// ValEpisodes on held-out seeds every ValEvery steps, and before the
	// first and after the last step; 0 turns validation off (64, 10).
	ValEpisodes int `json:"val_episodes" flag:"val" help:"validation episodes on held-out seeds (0: none)" group:"validation"`
	ValEvery    int `json:"val_every" flag:"val-every" help:"validate every N steps"`
	// ValTemperature samples validation responses (0.5 as RAGEN; 0 = greedy).
	ValTemperature float32 `json:"val_temperature" flag:"val-temperature" help:"sampling temperature of validation (0: greedy)"`

	// ActorLR and CriticLR are AdamW learning rates (3e-4, 1e-3: a tiny
	// model needs larger steps than RAGEN's 1e-6 / 1e-5 for a 0.5B model;
	// 1e-3 for the actor destabilises Bandit within 10 steps). From the
	// `small` model up 3e-4 drifts: use 1e-4 with a 10-update warm-up
	// (decision 28, which says why the default stays).
	ActorLR  float64 `json:"actor_lr" flag:"lr" help:"actor learning rate (AdamW; from the small model up use 1e-4 with -lr-warmup 10)" group:"optimisation"`
	CriticLR float64 `json:"critic_lr" flag:"critic-lr" help:"critic learning rate (AdamW)"`
	// LRWarmup ramps both learning rates linearly from 1/LRWarmup of their
	// value over the first LRWarmup optimizer updates (0 = constant, as
	// RAGEN). Adam's first updates after a warm start move every weight by
	// about the full learning rate whatever its gradient (m̂/√v̂ = ±1 at
	// t = 1), which on a tiny sharp policy is mostly noise (decision 23).
	LRWarmup int `json:"lr_warmup_steps,omitempty" flag:"lr-warmup" help:"optimizer updates over which the learning rates ramp up linearly (0: constant)"`
	// WeightDecay of AdamW, not applied to norms and biases (0.01).
	WeightDecay float64 `json:"weight_decay" flag:"weight-decay" help:"AdamW weight decay (not on norms and biases)"`
	// GradClip is the global gradient-norm bound (1.0).
	GradClip float64 `json:"grad_clip" flag:"grad-clip" help:"global gradient-norm bound"`
	// PPOEpochs passes over each step's rollouts, each split into
	// MiniBatches optimizer steps (1, 2; RAGEN makes one update per step,
	// a small model learns faster from two).
	PPOEpochs   int `json:"ppo_epochs" flag:"epochs" help:"PPO epochs over each step's rollouts"`
	MiniBatches int `json:"mini_batches" flag:"minibatches" help:"optimizer steps per PPO epoch"`
	// MicroBatchTokens bounds the tokens of one forward and backward pass
	// of an update (0: a whole minibatch at once): a larger minibatch is
	// split into micro-batches of whole trajectories whose gradients
	// accumulate before its one optimizer step. The loss coefficients
	// (advantages' normalisers, token means) are computed over the whole
	// minibatch, from a first forward pass over its micro-batches, so the
	// update is the same as unsplit up to the order of the sums; each
	// micro-batch is run forward again for its backward pass. What fits
	// in memory bounds it: the activations of a pass grow with its tokens.
	// It bounds the passes that only evaluate as well (the old and
	// reference log-probabilities, the values, the collapse metrics),
	// which give each trajectory the same numbers in any pass.
	MicroBatchTokens int `json:"micro_batch_tokens,omitempty" flag:"micro-batch-tokens" help:"most tokens of one forward and backward pass of an update: larger minibatches accumulate gradients over micro-batches (0: a whole minibatch at once); the old, reference and value passes are cut there too"`
	// Recompute keeps only each block's input in a forward pass and
	// recomputes the block's activations in the backward pass (activation
	// checkpointing): one block's activations in memory instead of all,
	// for one more forward pass. The numbers are the same.
	Recompute bool `json:"recompute,omitempty" flag:"recompute" help:"keep one transformer block's activations, recomputing them in the backward pass (less memory, one more forward pass; the same numbers)"`
	// ReuseRollouts > 1 trains on each batch of rollouts for that many
	// steps before collecting fresh ones (1 = online: fresh every step).
	ReuseRollouts int `json:"reuse_rollouts" flag:"reuse-rollouts" help:"train this many steps on each batch of rollouts (1: fresh rollouts every step)"`

	// WarmStart fine-tunes the policy on expert demonstrations first.
	WarmStart WarmStart `json:"warm_start" flag:"sft" group:"warm start (fine-tuning on expert demonstrations before RL)"`

	// Monitor watches for collapse (the Echo Trap).
	Monitor MonitorConfig `json:"monitor" flag:"monitor" group:"collapse monitor (the Echo Trap)"`

	// RunDir receives config.json, metrics.jsonl, events.jsonl and
	// checkpoints; empty keeps the run in memory only.
	RunDir string `json:"-" flag:"run" help:"run directory for config, metrics.jsonl, events and checkpoints" group:"run directory and checkpoints"`
	// CheckpointEvery saves a checkpoint every N steps (0 = only at the end,
	// when RunDir is set).
	CheckpointEvery int `json:"checkpoint_every" flag:"checkpoint-every" help:"checkpoint every N steps (0: at the end only)"`

	// Reward, when set, replaces the trajectory reward (the sum of turn
	// rewards and penalties) by a user function of the trajectory and its
	// group (the trajectories sharing its initial state, itself included).
	// An error stops the run, naming the trajectory. The DSL plugs reward
	// expressions in here.
	Reward func(t *rollout.Trajectory, group []*rollout.Trajectory) (float64, error) `json:"-" flag:"-"`
	// GroupScore, when set, replaces the filter metric: it scores a group
	// from its trajectories and their rewards, and the top Algo.FilterRatio
	// are kept. An error stops the run, naming the group.
	GroupScore func(group []*rollout.Trajectory, rewards []float64) (float64, error) `json:"-" flag:"-"`

	// Comm, when set, makes the run one rank of a data-parallel run over
	// Comm's processes (decision 41): each plays its share of the groups
	// and computes its share of each minibatch's gradient, summed exactly,
	// and rank 0 alone writes the run directory. nil: one process, the
	// default update. The mpi build of ragen sets it to MPI's world, the
	// cuda build under a launcher with backend cuda to NCCL's (decision 43).
	Comm dist.Comm `json:"-" flag:"-"`
}

// WarmStart is the supervised fine-tuning on demonstrations that stands in
// for the instruct model RAGEN starts from.
type WarmStart struct {
	// Steps of SFT; 0 skips the warm start (500).
	Steps int `json:"steps" flag:"steps" help:"warm-start fine-tuning steps (0: none)"`
	// Episodes of expert play to learn from (512).
	Episodes int `json:"episodes" flag:"episodes" help:"expert episodes the warm start learns from"`
	// Imperfect is the fraction of turns answered by an imperfect
	// demonstration, leaving room for RL to improve (0.3).
	Imperfect float64 `json:"imperfect" flag:"imperfect" help:"fraction of warm-start turns answered by an imperfect demonstration"`
	// LR of AdamW during SFT, with cosine decay (3e-3).
	LR float64 `json:"lr" flag:"lr" help:"warm-start learning rate (AdamW, cosine decay)"`
	// BatchSize in episodes per SFT step (8).
	BatchSize int `json:"batch_size" flag:"batch-size" help:"episodes per warm-start step"`
	// LearnContext also trains on the context tokens (system prompt,
	// observations, rewards), as a language model, not only on the agent's
	// responses (false). A model trained from scratch needs it to learn to
	// read the state: the observations of an episode repeat each other
	// (Goal: (2, 2) on every turn), and predicting them grows the attention
	// heads that look a position up, which the responses alone, a few
	// digits among many template tokens, do not (decision 21).
	LearnContext bool `json:"learn_context,omitempty" flag:"context" help:"warm start also learns the context tokens (observations), not only the responses: needed to learn to read the state from scratch"`
	// Seed of the warm start: its demonstrations, initial weights and batch
	// order (0: the run's Seed). Fixing it gives runs of several seeds one
	// warm start, trained and cached once, so that their spread is RL's
	// alone; a warm start's cache key holds the seed it used, so Seed S
	// shares the warm start of a run with seed S.
	Seed int64 `json:"seed,omitempty" flag:"seed" help:"seed of the warm start: demonstrations, initial weights, batch order (0: the run's -seed); fix it to share one warm start among runs of several seeds"`
	// CacheDir keeps warm starts by a hash of their config, so re-running
	// a notebook does not redo them; empty = the user cache directory.
	CacheDir string `json:"-" flag:"cache-dir" help:"directory of cached warm starts (default: $RAGEN_CACHE or the user cache directory)"`
}

// Default returns StarPO-S on Bandit with the small model.
func Default() Config {
	return Config{
		Env:              "bandit",
		Model:            "small",
		Backend:          "cpu",
		ContextLength:    1024,
		VocabSize:        512,
		Algo:             algo.StarPOS(),
		Steps:            40,
		Seed:             1,
		EnvGroups:        8,
		GroupSize:        8,
		MaxTokensPerTurn: 200,
		Temperature:      1,
		TopP:             1,
		FormatPenalty:    envs.DefaultFormatPenalty,
		Think:            true,
		ValEpisodes:      64,
		ValEvery:         10,
		ValTemperature:   0.5,
		ActorLR:          3e-4,
		CriticLR:         1e-3,
		WeightDecay:      0.01,
		GradClip:         1.0,
		PPOEpochs:        1,
		MiniBatches:      2,
		ReuseRollouts:    1,
		WarmStart:        WarmStart{Steps: 500, Episodes: 512, Imperfect: 0.3, LR: 3e-3, BatchSize: 8},
		Monitor:          DefaultMonitor(),
	}
}

// ModelConfig returns the policy's architecture for a vocabulary size.
func (c *Config) ModelConfig(vocab int) (model.Config, error) {
	m, err := model.Preset(c.Model)
	if err != nil {
		return m, err
	}
	m.VocabSize = vocab
	m.MaxPositions = c.ContextLength
	return m, nil
}

// Validate checks every field and names the first bad one.
func (c *Config) Validate() error {
	if c.NewEnv == nil {
		if _, ok := envs.Lookup(c.Env); !ok {
			return fmt.Errorf("env: unknown environment %q (known: %v)", c.Env, envs.Names())
		}
	}
	if _, err := c.ModelConfig(c.VocabSize); err != nil {
		return err
	}
	if c.Backend != "" && c.Backend != "cpu" {
		if err := backend.Check(c.Backend); err != nil {
			return err // "backend …: …" names the field already
		}
	}
	if _, err := backend.ParsePrecision(c.Precision); err != nil {
		return err // "precision: …"
	}
	if c.LoRA != nil {
		if err := c.LoRA.Validate(); err != nil {
			return fmt.Errorf("lora.%w", err)
		}
	}
	if err := c.validateLoaded(); err != nil {
		return err
	}
	if err := c.Algo.Validate(); err != nil {
		return fmt.Errorf("algo.%w", err)
	}
	positive := []struct {
		name string
		v    int
	}{
		{"context_length", c.ContextLength}, {"vocab_size", c.VocabSize},
		{"env_groups", c.EnvGroups}, {"group_size", c.GroupSize}, {"max_tokens_per_turn", c.MaxTokensPerTurn},
		{"ppo_epochs", c.PPOEpochs}, {"mini_batches", c.MiniBatches}, {"reuse_rollouts", c.ReuseRollouts},
	}
	for _, f := range positive {
		if f.v <= 0 {
			return fmt.Errorf("%s: must be > 0 (got %d)", f.name, f.v)
		}
	}
	nonneg := []struct {
		name string
		v    int
	}{
		{"steps", c.Steps}, {"val_episodes", c.ValEpisodes}, {"val_every", c.ValEvery},
		{"checkpoint_every", c.CheckpointEvery}, {"warm_start.steps", c.WarmStart.Steps},
		{"top_k", c.TopK}, {"micro_batch_tokens", c.MicroBatchTokens},
		{"filter_empty_stop", c.FilterEmptyStop}, {"collapse_every", c.CollapseEvery},
		{"gradient_report_every", c.GradientReportEvery}, {"gradient_report_buckets", c.GradientReportBuckets},
	}
	for _, f := range nonneg {
		if f.v < 0 {
			return fmt.Errorf("%s: must be ≥ 0 (got %d)", f.name, f.v)
		}
	}
	if c.Steps == 0 && c.ValEpisodes == 0 {
		return errors.New("steps: 0 only evaluates the starting policy, which needs val_episodes > 0 (-val N)")
	}
	if c.VocabSize < 300 {
		return fmt.Errorf("vocab_size: must be ≥ 300 to hold the 256 bytes, the special tokens and some merges (got %d)", c.VocabSize)
	}
	if c.Algo.FilterRatio < 1 && c.EnvGroups < 2 && (c.Algo.FilterStrategy == "" || c.Algo.FilterStrategy == algo.FilterRatioTop) {
		return fmt.Errorf("env_groups: filtering (algo.filter_ratio %g) needs at least 2 groups (got %d)", c.Algo.FilterRatio, c.EnvGroups)
	}
	if c.CollapseTrajectory && c.CollapseEvery == 0 {
		return errors.New("collapse_trajectory: runs on the steps collapse_every computes; set collapse_every > 0 (-collapse-every N)")
	}
	if m := c.GradientReportBucketMode; m != "" && m != algo.BucketQuantile && m != algo.BucketFixedRV {
		return fmt.Errorf("gradient_report_bucket_mode: must be %s or %s (got %q)", algo.BucketQuantile, algo.BucketFixedRV, m)
	}
	if c.LossMaskFunc == nil && c.LossMask != "" && !slices.Contains(LossMasks, c.LossMask) {
		return fmt.Errorf("loss_mask: must be one of %s (got %q)", strings.Join(LossMasks, ", "), c.LossMask)
	}
	if s := c.Algo.FilterStrategy; s != "" && s != algo.FilterRatioTop && c.EnvGroups < 2 && !(s == algo.FilterTopP && c.Algo.FilterValue >= 1) {
		return fmt.Errorf("env_groups: filtering (algo.filter_strategy %s) needs at least 2 groups (got %d)", s, c.EnvGroups)
	}
	if groupEstimator(c.Algo.AdvEstimator) && c.GroupSize < 2 {
		return fmt.Errorf("group_size: the %s estimator normalises within groups and needs group_size ≥ 2 (got %d)", c.Algo.AdvEstimator, c.GroupSize)
	}
	finitePos := []struct {
		name string
		v    float64
	}{{"actor_lr", c.ActorLR}, {"critic_lr", c.CriticLR}, {"grad_clip", c.GradClip}}
	for _, f := range finitePos {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s: must be a finite number > 0 (got %v)", f.name, f.v)
		}
	}
	if c.LRWarmup < 0 {
		return fmt.Errorf("lr_warmup_steps: must be ≥ 0 optimizer updates (got %d)", c.LRWarmup)
	}
	if !(c.Temperature > 0) {
		return fmt.Errorf("temperature: must be > 0 for training rollouts (got %v)", c.Temperature)
	}
	if !(c.ValTemperature >= 0) {
		return fmt.Errorf("val_temperature: must be ≥ 0 (got %v)", c.ValTemperature)
	}
	if !(c.TopP >= 0 && c.TopP <= 1) {
		return fmt.Errorf("top_p: must be in [0, 1] (got %v)", c.TopP)
	}
	if !(c.WeightDecay >= 0) {
		return fmt.Errorf("weight_decay: must be ≥ 0 (got %v)", c.WeightDecay)
	}
	if !(c.FormatPenalty <= 0) {
		return fmt.Errorf("format_penalty: must be ≤ 0 (got %v)", c.FormatPenalty)
	}
	w := c.WarmStart
	if w.Steps > 0 {
		switch {
		case w.Episodes <= 0:
			return fmt.Errorf("warm_start.episodes: must be > 0 (got %d)", w.Episodes)
		case w.BatchSize <= 0:
			return fmt.Errorf("warm_start.batch_size: must be > 0 (got %d)", w.BatchSize)
		case !(w.LR > 0):
			return fmt.Errorf("warm_start.lr: must be > 0 (got %v)", w.LR)
		case !(w.Imperfect >= 0 && w.Imperfect <= 1):
			return fmt.Errorf("warm_start.imperfect: must be in [0, 1] (got %v)", w.Imperfect)
		}
	}
	return c.Monitor.Validate()
}

func groupEstimator(est string) bool {
	switch est {
	case algo.EstGRPO, algo.EstDrGRPO, algo.EstRLOO, algo.EstReinforcePPBaseline:
		return true
	}
	return false
}

// usesCritic reports whether the estimator needs a value model.
func usesCritic(est string) bool { return est == algo.EstGAE || est == algo.EstBiLevelGAE }

// rolloutConfig is the sampling setup of rollouts in the policy's chat
// template (nil: our ChatML).
func (c *Config) rolloutConfig(temperature float32, tmpl *hf.ChatTemplate) rollout.Config {
	return rollout.Config{
		MaxTokensPerTurn: c.MaxTokensPerTurn,
		Sample:           sampleOptions(temperature, c.TopK, c.TopP),
		Turn:             envs.TurnConfig{Think: c.Think, FormatPenalty: c.FormatPenalty},
		Template:         tmpl,
	}
}
