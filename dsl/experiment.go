package dsl

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/internal/knob"
)

// Experiment is one training run, described for a cell. A zero field takes
// the default given in its comment (the trainer's, see train.Default), so a
// cell names only what it changes.
type Experiment struct {
	// Name labels the run in plots and tables; "" = the environment's.
	Name string

	// Env is the environment (Bandit(), Sokoban(...), Custom(...)); required.
	Env EnvSpec `train:"env,manual"`
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
	LossMask string `train:"loss_mask,manual"`

	// Model is the policy: a size preset, "tiny" | "small" | "base", warm
	// started on demonstrations ("" = "small"), or a model to start from,
	// Pretrained(dir) (a Hugging Face checkpoint such as
	// Qwen2.5-0.5B-Instruct) or Checkpoint(dir) (one of ours).
	Model ModelSpec `train:"model,pretrained,init,manual"`
	// ContextLength is the longest conversation in tokens (1024); a loaded
	// model keeps its own.
	ContextLength int `train:"context_length"`
	// VocabSize of the BPE vocabulary trained on the environment's text
	// (512); a loaded model keeps its own tokenizer.
	VocabSize int `train:"vocab_size"`

	// Groups × GroupSize trajectories per step; a group shares one initial
	// state (8 × 8).
	Groups    int `train:"env_groups"`
	GroupSize int `train:"group_size"`
	// MaxTurns per episode, overriding Env's max_turns; 0 = Env's.
	MaxTurns int
	// TokensPerTurn ends a response not closed by </answer> (200).
	TokensPerTurn int `train:"max_tokens_per_turn"`
	// Temperature of training rollouts (1).
	Temperature float64 `train:"temperature"`

	// Steps of training (40).
	Steps int `train:"steps"`
	// Seed fixes everything; same seed, same run (0 = 1).
	Seed int64 `train:"seed,signed"`

	// ActorLR and CriticLR are the AdamW learning rates (3e-4, 1e-3). The
	// default suits "tiny"; from "small" up use ActorLR 1e-4 with LRWarmup
	// 10, as 3e-4 drifts there (docs/decisions.md 28).
	ActorLR  float64 `train:"actor_lr"`
	CriticLR float64 `train:"critic_lr"`
	// LRWarmup ramps both learning rates up linearly over that many
	// optimizer updates (0: constant, as RAGEN).
	LRWarmup int `train:"lr_warmup_steps"`
	// PPOEpochs over each step's rollouts, each in MiniBatches (1, 2).
	PPOEpochs   int `train:"ppo_epochs"`
	MiniBatches int `train:"mini_batches"`
	// MicroBatchTokens bounds the tokens of one forward and backward pass
	// of an update; larger minibatches accumulate their gradient over
	// micro-batches (0: a whole minibatch at once); the passes of the old
	// and reference log-probabilities and the values are cut there too.
	MicroBatchTokens int `train:"micro_batch_tokens"`
	// Recompute keeps one transformer block's activations and recomputes
	// them in the backward pass: less memory, one more forward pass, the
	// same numbers.
	Recompute bool `train:"recompute"`
	// ReuseRollouts trains that many steps on each batch of rollouts
	// before rolling out again (1: online, fresh rollouts every step; a
	// reused batch keeps its old log-probabilities, so the PPO ratio
	// measures how far the policy has moved since it was collected).
	ReuseRollouts int `train:"reuse_rollouts"`

	// WarmStart is the supervised fine-tuning on expert demonstrations
	// before RL.
	WarmStart WarmStart

	// ValEpisodes on held-out seeds every ValEvery steps (64, 10); set
	// NoValidation to turn validation off.
	ValEpisodes  int `train:"val_episodes"`
	ValEvery     int `train:"val_every"`
	NoValidation bool
	// CheckpointEvery N steps (0 = only at the end).
	CheckpointEvery int `train:"checkpoint_every"`

	// Backend computes the run: "cpu" (default) or "cuda" (a binary built
	// with -tags cuda and a GPU; a clear error otherwise).
	Backend string `train:"backend"`
	// Precision of the matrix products on a device backend: "f32"
	// (default) or "bf16" (bf16 weights and activations, float32 master
	// weights and accumulation); the same on every backend, the CPU included.
	Precision string `train:"precision"`
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
	Monitor string `train:"monitor.action"`
	// CollapseEvery computes RAGEN-2's template-collapse metrics (the
	// mutual information between prompts and the reasoning, retrieval of
	// the prompt from it) on step 1 and every N steps (0: never; RAGEN-2
	// 5); they change no other number of the run.
	CollapseEvery int `train:"collapse_every"`
	// CollapseTrajectory adds the same metrics over turns drawn from whole
	// trajectories, not just first turns (RAGEN-2's multi-turn sampling).
	CollapseTrajectory bool `train:"collapse_trajectory"`
	// GradientReportEvery runs RAGEN's gradient analysis on step 1 and
	// every N steps after (0: never; RAGEN 50): the norms of the task,
	// entropy and KL terms' gradients on buckets of groups by reward std,
	// without an optimizer step (run.GradientReport() shows them);
	// GradientReportBuckets sets how many buckets (6). They change no
	// other number of the run.
	GradientReportEvery   int `train:"gradient_report_every"`
	GradientReportBuckets int `train:"gradient_report_buckets"`

	// Fresh re-runs even when the cache holds this experiment's result.
	Fresh bool

	// Executor is where Sweep and Seeds train their runs: nil here, one
	// after another (or where SetExecutor says: ragen-run's
	// RAGEN_EXECUTOR); ragen.Slurm{...} as the tasks of one Slurm job
	// array. Not part of the run: the numbers and the cache key are the
	// same wherever it trains. Train always trains here.
	Executor Executor
}

// WarmStart sets the supervised warm start; zero fields take the defaults.
type WarmStart struct {
	// Steps of fine-tuning (500; 0 for a Pretrained or Checkpoint model);
	// set Skip to start from random weights.
	Steps int `train:"warm_start.steps"`
	Skip  bool
	// Episodes of expert play to learn from (512).
	Episodes int `train:"warm_start.episodes"`
	// BatchSize in episodes per step (8).
	BatchSize int `train:"warm_start.batch_size"`
	// LR of AdamW (3e-3).
	LR float64 `train:"warm_start.lr"`
	// Imperfect is the fraction of turns answered imperfectly (0.3).
	Imperfect float64 `train:"warm_start.imperfect"`
	// LearnContext also trains on the observations, not only on the
	// responses: a small model from scratch needs it to learn to read
	// positions off the state (FrozenLake, Sokoban).
	LearnContext bool `train:"warm_start.learn_context"`
	// Seed of the warm start (0: the Experiment's): fix it, e.g. to 1, so
	// that Seeds(e, n) trains one warm start for all n runs and their
	// spread is RL's alone.
	Seed int64 `train:"warm_start.seed,signed"`
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
	if err := e.setMapped(&c); err != nil {
		return c, err
	}
	if e.WarmStart.Skip {
		c.WarmStart.Steps = 0
	}
	if e.NoValidation {
		c.ValEpisodes = 0
	}
	if e.LoRA.Rank != 0 {
		l := model.LoRA{Rank: e.LoRA.Rank, Alpha: e.LoRA.Alpha, Targets: e.LoRA.Targets}.WithDefaults()
		c.LoRA = &l
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
	Rank    int      `train:"lora.r,manual"`
	Alpha   float64  `train:"lora.lora_alpha,manual"`
	Targets []string `train:"lora.target_modules,manual"`
}

// A mappedField is an Experiment field tagged with the train.Config field
// it stands for: `train:"env_groups"`, the JSON path the trainer's errors
// name. More keys after the first are other trainer fields whose errors it
// answers for (Model: pretrained, init); "manual" marks a field Config sets
// by hand, "signed" one that may be negative. The others Config copies when
// they are not zero, refusing negative numbers.
type mappedField struct {
	path   string // in the Experiment: "WarmStart.Steps"
	index  []int
	keys   []string
	target knob.Field // the train.Config field keys[0] names
	manual bool
	signed bool
}

// mappedFields are the Experiment's tagged fields; trainField maps the
// trainer's error keys to their names.
var mappedFields, trainField = func() ([]mappedField, map[string]string) {
	byKey := map[string]knob.Field{}
	for _, f := range knob.Fields(reflect.TypeOf(train.Config{})) {
		byKey[f.Key] = f
	}
	var fields []mappedField
	names := map[string]string{}
	var walk func(t reflect.Type, index []int, path string)
	walk = func(t reflect.Type, index []int, path string) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			idx := append(append([]int{}, index...), i)
			tag, ok := sf.Tag.Lookup("train")
			if !ok {
				if sf.Type.Kind() == reflect.Struct && sf.Type.PkgPath() == t.PkgPath() && sf.IsExported() {
					walk(sf.Type, idx, path+sf.Name+".") // WarmStart, LoRA
				}
				continue
			}
			m := mappedField{path: path + sf.Name, index: idx}
			for _, k := range strings.Split(tag, ",") {
				switch k {
				case "manual":
					m.manual = true
				case "signed":
					m.signed = true
				default:
					if _, ok := byKey[k]; !ok {
						panic("dsl: Experiment." + m.path + " names no train.Config field " + k)
					}
					m.keys = append(m.keys, k)
					names[k] = m.path
				}
			}
			m.target = byKey[m.keys[0]]
			fields = append(fields, m)
		}
	}
	walk(reflect.TypeOf(Experiment{}), nil, "")
	return fields, names
}()

// setMapped copies the Experiment's non-zero mapped fields into c. A
// negative number is refused by the field's name: "must be > 0" where the
// trainer's default is positive (zero takes it), "must be ≥ 0" where it is
// zero.
func (e Experiment) setMapped(c *train.Config) error {
	def := train.Default()
	ev := reflect.ValueOf(e)
	for _, m := range mappedFields {
		v := ev.FieldByIndex(m.index)
		if m.manual || v.IsZero() {
			continue
		}
		var neg, defPos bool
		d := m.target.Value(&def, false)
		switch v.Kind() {
		case reflect.Int, reflect.Int64:
			neg, defPos = v.Int() < 0, d.Int() > 0
		case reflect.Float64:
			neg, defPos = !(v.Float() >= 0), d.Float() > 0
		}
		if neg && !m.signed {
			op := "≥"
			if defPos {
				op = ">"
			}
			return &FieldError{m.path, fmt.Sprintf("must be %s 0 (got %v)", op, v.Interface())}
		}
		dst := m.target.Value(c, true)
		switch v.Kind() {
		case reflect.Int, reflect.Int64:
			dst.SetInt(v.Int())
		case reflect.Float64:
			dst.SetFloat(v.Float()) // float32 fields round as float32(v)
		default:
			dst.Set(v.Convert(dst.Type()))
		}
	}
	return nil
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
