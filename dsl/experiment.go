package dsl

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/train"
)

// Experiment is one training run, described for a cell. A zero field takes
// the default given in its comment (the trainer's, see train.Default), so a
// cell names only what it changes.
type Experiment struct {
	// Name labels the run in plots and tables; "" = the environment's.
	Name string

	// Env is the environment (Bandit(), Sokoban(...), Custom(...)); required.
	Env EnvSpec
	// Reward replaces the trajectory reward by an expression (Reward(...));
	// zero = the sum of turn rewards, format penalties included.
	Reward RewardExpr
	// RewardErrors is what a reward expression's run-time error (x % 0, a
	// NaN or infinite result) does: FailRun stops the run ("" = FailRun);
	// UseZero counts it (Run.RewardErrors) and uses 0.
	RewardErrors string
	// Filter selects the groups the update learns from (Filter(...));
	// zero = the one of Algo.
	Filter FilterRule
	// Algo holds every algorithm option (StarPOS(), GRPO(), ...);
	// zero = StarPOS().
	Algo Algo
	// LossMask chooses the agent tokens the policy loss covers
	// (VAGEN-style): "all" ("" too), "answer", "think", or a boolean
	// expression over the token (MaskToken: turn, turns, span, pos,
	// tokens), e.g. `span == "answer" || turn == turns`.
	LossMask string

	// Model is the policy: a size preset, "tiny" | "small" | "base", warm
	// started on demonstrations ("" = "small"), or a model to start from,
	// Pretrained(dir) (a Hugging Face checkpoint such as
	// Qwen2.5-0.5B-Instruct) or Checkpoint(dir) (one of ours).
	Model ModelSpec
	// ContextLength is the longest conversation in tokens (1024); a loaded
	// model keeps its own.
	ContextLength int
	// VocabSize of the BPE vocabulary trained on the environment's text
	// (512); a loaded model keeps its own tokenizer.
	VocabSize int

	// Groups × GroupSize trajectories per step; a group shares one initial
	// state (8 × 8).
	Groups    int
	GroupSize int
	// MaxTurns per episode, overriding Env's max_turns; 0 = Env's.
	MaxTurns int
	// TokensPerTurn ends a response not closed by </answer> (200).
	TokensPerTurn int
	// Temperature of training rollouts (1).
	Temperature float64

	// Steps of training (40).
	Steps int
	// Seed fixes everything; same seed, same run (0 = 1).
	Seed int64

	// ActorLR and CriticLR are the AdamW learning rates (3e-4, 1e-3).
	ActorLR  float64
	CriticLR float64
	// LRWarmup ramps both learning rates up linearly over that many
	// optimizer updates (0: constant, as RAGEN).
	LRWarmup int
	// PPOEpochs over each step's rollouts, each in MiniBatches (1, 2).
	PPOEpochs   int
	MiniBatches int
	// MicroBatchTokens bounds the tokens of one forward and backward pass
	// of an update; larger minibatches accumulate their gradient over
	// micro-batches (0: a whole minibatch at once).
	MicroBatchTokens int
	// Recompute keeps one transformer block's activations and recomputes
	// them in the backward pass: less memory, one more forward pass, the
	// same numbers.
	Recompute bool
	// ReuseRollouts trains that many steps on each batch of rollouts
	// before rolling out again (1: online, fresh rollouts every step; a
	// reused batch keeps its old log-probabilities, so the PPO ratio
	// measures how far the policy has moved since it was collected).
	ReuseRollouts int

	// WarmStart is the supervised fine-tuning on expert demonstrations
	// before RL.
	WarmStart WarmStart

	// ValEpisodes on held-out seeds every ValEvery steps (64, 10); set
	// NoValidation to turn validation off.
	ValEpisodes  int
	ValEvery     int
	NoValidation bool
	// CheckpointEvery N steps (0 = only at the end).
	CheckpointEvery int

	// Backend computes the run: "cpu" (default) or "cuda" (a binary built
	// with -tags cuda and a GPU; a clear error otherwise).
	Backend string
	// Precision of the matrix products on a device backend: "f32"
	// (default) or "bf16" (bf16 weights and activations, float32 master
	// weights and accumulation); the same on every backend, the CPU included.
	Precision string
	// LoRA trains low-rank adapters on the frozen policy instead of all
	// its weights, after the warm start (Rank 0: off, full fine-tuning):
	// ragen.LoRA{Rank: 8} targets every linear layer with alpha 2·rank.
	// The critic gets its own adapters and value head on the same base,
	// and the base is the KL reference.
	LoRA LoRA

	// Monitor is what the collapse monitor does when a signal fires:
	// "warn" (default: an event, training goes on), "stop" (the run ends
	// there, with an error saying why) or "rewind" (training goes on from
	// the best weights so far, judged by validation success, or by reward
	// on steps without validation).
	Monitor string

	// Fresh re-runs even when the cache holds this experiment's result.
	Fresh bool
}

// WarmStart sets the supervised warm start; zero fields take the defaults.
type WarmStart struct {
	// Steps of fine-tuning (500; 0 for a Pretrained or Checkpoint model);
	// set Skip to start from random weights.
	Steps int
	Skip  bool
	// Episodes of expert play to learn from (512).
	Episodes int
	// BatchSize in episodes per step (8).
	BatchSize int
	// LR of AdamW (3e-3).
	LR float64
	// Imperfect is the fraction of turns answered imperfectly (0.3).
	Imperfect float64
	// LearnContext also trains on the observations, not only on the
	// responses: a small model from scratch needs it to learn to read
	// positions off the state (FrozenLake, Sokoban).
	LearnContext bool
}

// What a reward expression's run-time error does (Experiment.RewardErrors).
const (
	FailRun = "fail"
	UseZero = "zero"
)

// FieldError is an invalid Experiment field: "GroupSize: must be > 0 (got 0)".
type FieldError struct {
	Field string // path in the Experiment, e.g. "GroupSize", "Algo.ClipLow"
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks the experiment and names the field of the first bad
// value, by its name in the Experiment.
func (e Experiment) Validate() error {
	_, err := e.Config()
	return err
}

// Config compiles the experiment to the trainer's configuration, with the
// hooks for the reward expression and the filter left unset (the run adds
// them). Errors name the Experiment's field.
func (e Experiment) Config() (train.Config, error) {
	c := train.Default()
	if e.Env.Name == "" {
		return c, &FieldError{"Env", "required: ragen.Bandit(), ragen.Sokoban(...), ragen.Custom(...), ..."}
	}
	ints := []struct {
		field string
		v     int
		dst   *int
		pos   bool // must be > 0 (else ≥ 0)
	}{
		{"ContextLength", e.ContextLength, &c.ContextLength, true},
		{"VocabSize", e.VocabSize, &c.VocabSize, true},
		{"Groups", e.Groups, &c.EnvGroups, true},
		{"GroupSize", e.GroupSize, &c.GroupSize, true},
		{"TokensPerTurn", e.TokensPerTurn, &c.MaxTokensPerTurn, true},
		{"Steps", e.Steps, &c.Steps, true},
		{"PPOEpochs", e.PPOEpochs, &c.PPOEpochs, true},
		{"MiniBatches", e.MiniBatches, &c.MiniBatches, true},
		{"ReuseRollouts", e.ReuseRollouts, &c.ReuseRollouts, true},
		{"WarmStart.Steps", e.WarmStart.Steps, &c.WarmStart.Steps, true},
		{"WarmStart.Episodes", e.WarmStart.Episodes, &c.WarmStart.Episodes, true},
		{"WarmStart.BatchSize", e.WarmStart.BatchSize, &c.WarmStart.BatchSize, true},
		{"ValEpisodes", e.ValEpisodes, &c.ValEpisodes, true},
		{"ValEvery", e.ValEvery, &c.ValEvery, true},
		{"CheckpointEvery", e.CheckpointEvery, &c.CheckpointEvery, false},
		{"LRWarmup", e.LRWarmup, &c.LRWarmup, false},
	}
	for _, f := range ints {
		switch {
		case f.v < 0 && f.pos:
			return c, &FieldError{f.field, fmt.Sprintf("must be > 0 (got %d)", f.v)}
		case f.v < 0:
			return c, &FieldError{f.field, fmt.Sprintf("must be ≥ 0 (got %d)", f.v)}
		case f.v > 0:
			*f.dst = f.v
		}
	}
	floats := []struct {
		field string
		v     float64
		dst   *float64
	}{
		{"ActorLR", e.ActorLR, &c.ActorLR},
		{"CriticLR", e.CriticLR, &c.CriticLR},
		{"WarmStart.LR", e.WarmStart.LR, &c.WarmStart.LR},
		{"WarmStart.Imperfect", e.WarmStart.Imperfect, &c.WarmStart.Imperfect},
	}
	for _, f := range floats {
		if f.v < 0 || f.v != f.v {
			return c, &FieldError{f.field, fmt.Sprintf("must be > 0 (got %v)", f.v)}
		}
		if f.v > 0 {
			*f.dst = f.v
		}
	}
	if e.Temperature < 0 || e.Temperature != e.Temperature {
		return c, &FieldError{"Temperature", fmt.Sprintf("must be > 0 (got %v)", e.Temperature)}
	}
	if e.Temperature > 0 {
		c.Temperature = float32(e.Temperature)
	}
	if e.WarmStart.Skip {
		c.WarmStart.Steps = 0
	}
	c.WarmStart.LearnContext = e.WarmStart.LearnContext
	if e.NoValidation {
		c.ValEpisodes = 0
	}
	if e.Seed != 0 {
		c.Seed = e.Seed
	}
	if e.Backend != "" {
		c.Backend = e.Backend
	}
	if e.Precision != "" {
		c.Precision = e.Precision
	}
	c.MicroBatchTokens, c.Recompute = e.MicroBatchTokens, e.Recompute
	if e.LoRA.Rank != 0 {
		l := model.LoRA{Rank: e.LoRA.Rank, Alpha: e.LoRA.Alpha, Targets: e.LoRA.Targets}
		if l.Alpha == 0 {
			l.Alpha = 2 * float64(l.Rank)
		}
		if len(l.Targets) == 0 {
			l.Targets = []string{"all-linear"}
		}
		c.LoRA = &l
	}
	if e.Monitor != "" {
		c.Monitor.Action = e.Monitor
	}
	if kind, dir := e.Model.source(); kind != "" {
		if dir == "" {
			return c, &FieldError{"Model", kind + ": the model directory is empty"}
		}
		if kind == "pretrained" {
			c.Pretrained = dir
		} else {
			c.Init = dir
		}
		if e.WarmStart.Steps == 0 { // a loaded model needs no warm start
			c.WarmStart.Steps = 0
		}
	} else if e.Model != "" {
		c.Model = string(e.Model)
	}
	switch e.RewardErrors {
	case "", FailRun, UseZero:
	default:
		return c, &FieldError{"RewardErrors", fmt.Sprintf("must be ragen.FailRun or ragen.UseZero (got %q)", e.RewardErrors)}
	}

	env := e.Env
	switch {
	case e.MaxTurns < 0:
		return c, &FieldError{"MaxTurns", fmt.Sprintf("must be ≥ 0 (got %d)", e.MaxTurns)}
	case e.MaxTurns > 0:
		env = env.withMaxTurns(e.MaxTurns)
	}
	if env.IsCustom() {
		c.Env, c.EnvLabel, c.NewEnv = "", env.Name, env.factory()
	} else {
		c.Env, c.EnvOptions = env.Name, env.Options
	}

	if !reflect.ValueOf(e.Algo).IsZero() {
		c.Algo = e.Algo
	}
	if err := e.compile(); err != nil {
		return c, err
	}
	if err := e.Filter.apply(&c.Algo); err != nil {
		return c, err
	}
	if e.Filter.EmptyStop != 0 {
		c.FilterEmptyStop = e.Filter.EmptyStop
	}
	if err := lossMask(&c, e.LossMask); err != nil {
		return c, &FieldError{"LossMask", err.Error()}
	}
	if err := c.Validate(); err != nil {
		return c, e.fieldOf(err)
	}
	return c, nil
}

// compile compiles the reward and filter expressions in place.
func (e *Experiment) compile() error {
	if err := e.Reward.compile(); err != nil {
		return &FieldError{"Reward", err.Error()}
	}
	if err := e.Filter.compile(); err != nil {
		return &FieldError{"Filter", err.Error()}
	}
	return nil
}

// LoRA is the low-rank adapter setting of an Experiment: Rank (0: off),
// Alpha (0: 2·Rank) and Targets (nil: "all-linear"; or any of q_proj,
// k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj).
type LoRA struct {
	Rank    int
	Alpha   float64
	Targets []string
}

// trainField maps the trainer's error keys to the Experiment's fields.
var trainField = map[string]string{
	"model": "Model", "pretrained": "Model", "init": "Model", "context_length": "ContextLength", "vocab_size": "VocabSize",
	"steps": "Steps", "env_groups": "Groups", "group_size": "GroupSize",
	"max_tokens_per_turn": "TokensPerTurn",
	"lora.r":              "LoRA.Rank", "lora.lora_alpha": "LoRA.Alpha", "lora.target_modules": "LoRA.Targets",
	"temperature": "Temperature", "backend": "Backend", "precision": "Precision", "ppo_epochs": "PPOEpochs", "mini_batches": "MiniBatches", "reuse_rollouts": "ReuseRollouts", "monitor.action": "Monitor",
	"actor_lr": "ActorLR", "critic_lr": "CriticLR", "lr_warmup_steps": "LRWarmup", "val_episodes": "ValEpisodes",
	"val_every": "ValEvery", "checkpoint_every": "CheckpointEvery", "filter_empty_stop": "Filter.EmptyStop", "loss_mask": "LossMask",
	"warm_start.steps": "WarmStart.Steps", "warm_start.episodes": "WarmStart.Episodes",
	"warm_start.batch_size": "WarmStart.BatchSize", "warm_start.lr": "WarmStart.LR",
	"warm_start.imperfect": "WarmStart.Imperfect", "warm_start.learn_context": "WarmStart.LearnContext", "env": "Env",
}

// fieldOf rewrites a trainer validation error, "group_size: must be ...",
// to name the Experiment's field, "GroupSize: must be ...". The message
// itself may name other keys (algo.filter_ratio); those are rewritten too.
func (e Experiment) fieldOf(err error) error {
	msg := err.Error()
	key, rest, ok := strings.Cut(msg, ": ")
	if !ok {
		return err
	}
	rename := func(k string) (string, bool) {
		if a, ok := strings.CutPrefix(k, "algo."); ok {
			if f, ok := algoField[a]; ok {
				if strings.HasPrefix(f, "Filter") && !reflect.ValueOf(e.Filter).IsZero() {
					return "Filter (Algo." + f + ")", true
				}
				return "Algo." + f, true
			}
		}
		f, ok := trainField[k]
		return f, ok
	}
	field, ok := rename(key)
	if !ok {
		return err
	}
	for k := range trainField {
		rest = strings.ReplaceAll(rest, "("+k+" ", "("+trainField[k]+" ")
		rest = strings.ReplaceAll(rest, " "+k+" ", " "+trainField[k]+" ")
	}
	for a, f := range algoField {
		rest = strings.ReplaceAll(rest, "algo."+a, "Algo."+f)
	}
	return &FieldError{field, rest}
}

// label is the run's name.
func (e Experiment) label() string {
	if e.Name != "" {
		return e.Name
	}
	return e.Env.String()
}
