package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/dist"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/engine/sample"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// Observer receives what a run reports while it runs. The kernel and the
// CLI render it; any method may be a no-op.
type Observer interface {
	// Phase is called when a phase starts: "warm_start", "rollout",
	// "train", "validate", "checkpoint".
	Phase(step int, phase string)
	// Step is called with the metrics of each finished step.
	Step(s metrics.Step)
	// Event is called with each event (collapse warnings, skipped steps).
	Event(e metrics.Event)
	// WarmStart is called after each step of the warm start's fine-tuning
	// (the supervised phase of "warm_start", which can take minutes), so a
	// view can show step i/N, the loss and an ETA. A cached warm start, or
	// a loaded model without WarmStart.Steps, reports none.
	WarmStart(p WarmStartProgress)
}

// WarmStartProgress is one finished step of the warm start's fine-tuning.
type WarmStartProgress struct {
	Step  int     // steps done, 1..Steps
	Steps int     // WarmStart.Steps
	Loss  float64 // the step's cross-entropy, nats per learned token
	// Elapsed is the time since the fine-tuning began (the demonstrations
	// and the vocabulary before it excluded), so that
	// Elapsed/Step·(Steps−Step) estimates the time left.
	Elapsed time.Duration
}

// ETA extrapolates the time per step so far to the steps left.
func (p WarmStartProgress) ETA() time.Duration {
	if p.Step <= 0 {
		return 0
	}
	return p.Elapsed / time.Duration(p.Step) * time.Duration(max(p.Steps-p.Step, 0))
}

// String is the progress as a log line:
// "warm start 120/500  loss 1.2345  elapsed 1m2s  ETA 4m18s".
func (p WarmStartProgress) String() string {
	return fmt.Sprintf("warm start %d/%d  loss %.4f  elapsed %s  ETA %s",
		p.Step, p.Steps, p.Loss, p.Elapsed.Round(time.Second), p.ETA().Round(time.Second))
}

// Trainer runs StarPO(-S) for one experiment. Its phases — rollout, reward,
// filter, advantages, update — are separate functions with plain data
// between them, so each reads top to bottom.
type Trainer struct {
	cfg Config
	obs Observer

	Tok      *tokenizer.Tokenizer
	Template *hf.ChatTemplate // the policy's chat template; nil: our ChatML

	// The models on the run's compute backend (see placer), and the
	// backend they share.
	dev    backend.Backend
	policy *model.Model
	critic *model.Model // nil unless the estimator uses one
	ref    *model.Model // frozen reference policy; nil unless KL is on
	base   *model.Model // with LoRA: the frozen model the adapters compute with

	actorOpt, criticOpt *optim.AdamW

	trainEnvs []envs.Env // one per trajectory, reset every step
	valEnvs   []envs.Env
	valSeeds  []int64

	step    int // steps done
	saved   int // the step of the last checkpoint saved (0: none)
	reused  *batch
	History metrics.History
	monitor *Monitor
	best    bestCheckpoint

	// emptySteps counts the consecutive steps whose filter kept nothing;
	// stopped is set when they reach FilterEmptyStop.
	emptySteps int
	stopped    bool

	// The template-collapse metrics' EMAs (Config.CollapseEvery): first
	// turns, and trajectory-sampled turns (Config.CollapseTrajectory).
	collapseEMA, collapseEMATraj collapseEMAs
	// actorSum and criticSum hold a data-parallel run's exact gradient
	// sums (see dist.go); nil without Config.Comm.
	actorSum, criticSum *dist.Fixed
}

// New prepares a run: validates cfg, warm-starts (or loads the cached warm
// start of) the policy, builds the critic and the reference, and the
// environments. A nil observer reports nothing.
func New(ctx context.Context, cfg Config, obs Observer) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if obs == nil {
		obs = nopObserver{}
	}
	t := &Trainer{cfg: cfg, obs: obs, monitor: NewMonitor(cfg.Monitor)}
	t.History.Name = cfg.label()
	var err error
	if t.trainEnvs, err = t.makeEnvs(cfg.EnvGroups * cfg.GroupSize); err != nil {
		return nil, err
	}
	if t.valEnvs, err = t.makeEnvs(cfg.ValEpisodes); err != nil {
		return nil, err
	}
	t.valSeeds = make([]int64, cfg.ValEpisodes)
	for i := range t.valSeeds {
		t.valSeeds[i] = envSeed(cfg.Seed, -1, i) // step −1: never a training seed stream
	}

	place, dev, err := placement(cfg.Backend, cfg.Precision, cfg.Recompute)
	if err != nil {
		return nil, err
	}
	t.dev = dev
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()

	obs.Phase(0, "warm_start")
	start := time.Now()
	// In a data-parallel run rank 0 warm-starts first and fills the
	// cache, which the others then read.
	c := t.comm()
	if c.Rank() != 0 {
		if err := c.Barrier(); err != nil {
			return nil, err
		}
	}
	t.Tok, t.policy, t.Template, err = initialPolicy(ctx, &cfg, t.newEnv, place, obs)
	if c.Rank() == 0 {
		if berr := c.Barrier(); berr != nil && err == nil {
			err = berr
		}
	}
	if err != nil {
		return nil, err
	}
	warm := time.Since(start).Seconds()

	if cfg.LoRA != nil {
		// Adapters on the frozen base: the policy trains them, the critic
		// its own adapters and value head on the same base in memory, and
		// the base itself is the reference, at no cost.
		base := t.policy
		if t.policy, err = base.WithLoRA(*cfg.LoRA, false, uint64(cfg.Seed)); err != nil {
			return nil, fmt.Errorf("lora: %w", err)
		}
		t.policy.SetRecompute(cfg.Recompute)
		t.base = base
	}
	if t.actorOpt, err = newOptimizer(t.policy, cfg.ActorLR, cfg.WeightDecay, cfg.LRWarmup); err != nil {
		return nil, err
	}
	if err := t.policy.SyncParams(); err != nil {
		return nil, err
	}
	policy := t.policy
	if usesCritic(cfg.Algo.AdvEstimator) {
		if t.base != nil {
			if t.critic, err = t.base.WithLoRA(*cfg.LoRA, true, uint64(cfg.Seed)^0xc1); err == nil {
				t.critic.SetRecompute(cfg.Recompute)
			}
		} else if t.critic, err = criticFrom(policy, cfg.Seed); err == nil {
			err = place(t.critic)
		}
		if err != nil {
			return nil, err
		}
		if t.criticOpt, err = newOptimizer(t.critic, cfg.CriticLR, cfg.WeightDecay, cfg.LRWarmup); err != nil {
			return nil, err
		}
	}
	if cfg.Algo.KLPlacement != algo.KLNone && cfg.Algo.KLCoef > 0 {
		if t.base != nil {
			t.ref = t.base
		} else {
			if t.ref, err = clone(policy); err != nil {
				return nil, err
			}
			if err := place(t.ref); err != nil {
				return nil, err
			}
		}
	}
	if err := t.openRunDir(); err != nil {
		return nil, err
	}
	ok = true
	t.History.Steps = append(t.History.Steps, metrics.Step{Step: 0, Values: map[string]float64{metrics.TimeWarmStart: warm}})
	return t, nil
}

// freeWorkspaces releases the activations and scratch the run's models
// keep from their last passes (Model.FreeWorkspace): between the phases
// of a step, so that each phase's models have the memory to themselves.
func (t *Trainer) freeWorkspaces() {
	freeWorkspaces(t.policy, t.critic, t.ref)
}

// freeWorkspaces frees the workspaces of models (nil ones skipped) and
// runs a collection, so that the next pass's buffers take their pages
// rather than fresh ones: until a collection the collector's goal counts
// them as live (decision 54).
func freeWorkspaces(models ...*model.Model) {
	for _, m := range models {
		if m != nil {
			m.FreeWorkspace()
		}
	}
	runtime.GC()
}

// Policy returns the policy with its current parameters in Params (on a
// device backend, downloaded into the host copy).
func (t *Trainer) Policy() (*model.Model, error) {
	if err := t.policy.SyncParams(); err != nil {
		return nil, err
	}
	return t.policy, nil
}

// Close releases what the run holds on its compute backend (device
// memory); the trainer is unusable afterwards. On "cpu" it does nothing.
func (t *Trainer) Close() error {
	for _, o := range []*optim.AdamW{t.actorOpt, t.criticOpt} {
		if o != nil {
			o.Free()
		}
	}
	freed := map[*model.Model]bool{nil: true} // the base may be the reference too
	for _, m := range []*model.Model{t.policy, t.critic, t.ref, t.base} {
		if !freed[m] {
			m.Free()
			freed[m] = true
		}
	}
	t.policy, t.critic, t.ref, t.base, t.actorOpt, t.criticOpt = nil, nil, nil, nil, nil, nil
	if t.dev == nil {
		return nil
	}
	err := t.dev.Close()
	t.dev = nil
	return err
}

// play runs tasks to the end of their episodes with the current policy at
// temperature temp. A LoRA policy's decoder multiplies by its base's
// panels, which play releases when done: the update then reuses their
// memory (on Qwen2.5-0.5B 1 GB of the step's peak), and the next rollout
// packs them again (decision 54).
func (t *Trainer) play(ctx context.Context, tasks []rollout.Task, temp float32) ([]*rollout.Trajectory, error) {
	dec, err := t.policy.NewDecoder()
	if err != nil {
		return nil, err
	}
	defer t.policy.ReleaseDecodePanels()
	defer dec.Close()
	return rollout.Play(ctx, dec, t.Tok, tasks, t.cfg.rolloutConfig(temp, t.Template))
}

// Config returns the run's configuration.
func (t *Trainer) Config() Config { return t.cfg }

// StepsDone is the number of training steps finished.
func (t *Trainer) StepsDone() int { return t.step }

// Run trains until cfg.Steps steps are done, ctx is cancelled, or an error
// (NaN, collapse with Monitor.Action stop) ends it. Cancellation stops at
// the next step boundary (see Step): the steps done so far stay in History
// and the run directory, and with a run directory a checkpoint of the last
// step done is saved, so that -resume continues as if nothing had stopped.
func (t *Trainer) Run(ctx context.Context) error {
	if t.step == 0 && t.cfg.ValEpisodes > 0 {
		if err := t.validateAt(ctx, 0, t.History.Steps[0].Values); err != nil {
			return err
		}
		t.appendJSONL("metrics.jsonl", t.History.Steps[0])
		t.obs.Step(t.History.Steps[0])
	}
	for t.step < t.cfg.Steps {
		if err := ctx.Err(); err != nil {
			return t.interrupted(err)
		}
		s, err := t.Step(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return t.interrupted(err)
			}
			return err
		}
		if stop := t.afterStep(s); stop != nil {
			return stop
		}
		if t.stopped {
			break
		}
	}
	return t.finishRun()
}

// interrupted saves the state of the last step done when a cancelled ctx
// stopped Run (Step leaves no step half done), unless it is saved already,
// and returns err with the checkpoint's error, if any.
func (t *Trainer) interrupted(err error) error {
	if cerr := t.finishRun(); cerr != nil {
		return fmt.Errorf("%w (and saving a checkpoint failed: %v)", err, cerr)
	}
	return err
}

// stepGCPercent is the Go collector's heap goal during a step, in percent
// over the live heap (Go's default: 100), unless GOGC sets it. A step's
// memory is a few large pointer-free buffers (weights, packed panels,
// activations), which a collection does not scan, so collecting more
// often costs little; at 100 % the garbage of a dropped decoder (a
// full fine-tune's packed panels, and a LoRA policy's folded weights
// before decision 51: 1.4 GB at Qwen2.5-0.5B) could grow the process to
// twice its live memory before the next collection.
const stepGCPercent = 25

// Step runs one training step and returns its metrics. Cancelling ctx
// stops it during the rollouts, the filter and the advantages, which
// change no state a checkpoint holds; once the update has begun the step
// runs to its end (update and validation), so a cancelled run always
// stands at a step boundary and can be saved. That costs at most one
// update's time to an interrupt.
func (t *Trainer) Step(ctx context.Context) (metrics.Step, error) {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(stepGCPercent))
	}
	cfg := &t.cfg
	step := t.step + 1
	m := map[string]float64{}
	stepStart := time.Now()

	// 1. Rollouts: fresh every step, or reused for ReuseRollouts steps.
	var b *batch
	if t.reused != nil && (step-1)%cfg.ReuseRollouts != 0 {
		b = t.reused
	} else {
		t.obs.Phase(step, "rollout")
		start, cpu := time.Now(), cpuClock()
		tasks := t.trainTasks(step)
		trajs, err := t.playShared(ctx, tasks, cfg.Temperature, func(i int) int { return tasks[i].Group })
		if err != nil {
			return metrics.Step{}, err
		}
		rolloutTime := time.Since(start).Seconds()
		m[metrics.TimeRollout] = rolloutTime
		cpu(m, metrics.TimeRolloutCPU)

		// 2. Rewards (the user's function, if any) and rollout metrics
		//    over every trajectory, before filtering.
		rewards, err := t.rewards(trajs)
		if err != nil {
			return metrics.Step{}, fmt.Errorf("step %d: %w", step, err)
		}
		rolloutMetrics(m, trajs, rewards)
		if n := m[metrics.ResponseTokens] * float64(len(trajs)); rolloutTime > 0 {
			m[metrics.TokensPerSec] = n / rolloutTime
		}
		// Template-collapse metrics, before filtering (as RAGEN-2).
		if err := t.collapseMetrics(step, trajs, m); err != nil {
			return metrics.Step{}, err
		}

		// 3. Filter groups by their statistic (StarPO-S: in-group reward
		//    std; RAGEN v2: top-p, top-k, min-p over reward, entropy or
		//    length statistics).
		groups := make([]int, len(trajs))
		length := make([]float64, len(trajs))
		for i, tr := range trajs {
			groups[i] = tr.Group
			for _, on := range tr.Agent {
				if on {
					length[i]++
				}
			}
		}
		in := algo.FilterInput{Returns: rewards, Group: groups, Length: length}
		var allLogp, allEnt [][]float64
		var score algo.ScoreFunc
		var scoreErr error
		if cfg.GroupScore != nil {
			score = func(members []int, returns []float64) float64 {
				group := make([]*rollout.Trajectory, len(members))
				for k, i := range members {
					group[k] = trajs[i]
				}
				v, err := cfg.GroupScore(group, returns)
				if err != nil && scoreErr == nil {
					scoreErr = fmt.Errorf("group %d (seed %d): %w", group[0].Group, group[0].EnvSeed, err)
				}
				return v
			}
		} else if cfg.Algo.FilterNeedsEntropy() {
			// The rollout policy's entropies of every trajectory: the
			// kept ones' log-probs and entropies are reused by prepare.
			if allLogp, allEnt, _, err = t.evaluateShared(t.policy, trajs, model.Want{LM: true}); err != nil {
				return metrics.Step{}, fmt.Errorf("step %d: filter entropies: %w", step, err)
			}
			in.Entropy = make([]float64, len(trajs))
			for i, tr := range trajs {
				in.Entropy[i] = maskedMean(allEnt[i:i+1], [][]bool{tr.Agent})
			}
		}
		fr, err := algo.FilterGroupsBy(&cfg.Algo, in, score)
		if scoreErr != nil {
			err = scoreErr
		}
		if err != nil {
			return metrics.Step{}, fmt.Errorf("step %d: filter: %w", step, err)
		}
		filterMetrics(m, &cfg.Algo, fr.Stats)
		var kept []*rollout.Trajectory
		var keptRewards []float64
		var pre evaluated
		for i, tr := range trajs {
			if fr.Keep[i] {
				kept = append(kept, tr)
				keptRewards = append(keptRewards, rewards[i])
				if allLogp != nil {
					pre.logp = append(pre.logp, allLogp[i])
					pre.ent = append(pre.ent, allEnt[i])
				}
			}
		}
		if len(kept) == 0 {
			t.reused = nil
			t.emptySteps++
			m[metrics.EmptyAfterFilter] = 1
			m[metrics.EmptyAfterFilterRun] = float64(t.emptySteps)
			t.emit(metrics.Event{Step: step, Kind: "empty_after_filter",
				Message: "every group was filtered out; no update this step"})
			if n := cfg.FilterEmptyStop; n > 0 && t.emptySteps >= n {
				t.stopped = true
				t.emit(metrics.Event{Step: step, Kind: "early_stop",
					Message: fmt.Sprintf("the filter kept nothing for %d consecutive steps (filter_empty_stop %d); the run stops", t.emptySteps, n)})
			}
			m[metrics.TimeStep] = time.Since(stepStart).Seconds()
			return t.record(step, m), nil
		}
		t.emptySteps = 0

		// 4. Old and reference log-probs, values, advantages.
		if b, err = t.prepare(step, kept, keptRewards, pre); err != nil {
			return metrics.Step{}, err
		}
		t.reused = b
		// The passes over the whole batch are done: their workspaces
		// (Qwen2.5-0.5B: over a GB each) go to the update's minibatches.
		t.freeWorkspaces()
	}

	// 5. Update: critic and actor, PPO epochs over minibatches; on due
	//    steps the gradient analysis of the batch first (as RAGEN), which
	//    leaves the update as it would be without it. From here on the
	//    step is not cancelled (see above).
	ctx = context.WithoutCancel(ctx)
	t.obs.Phase(step, "train")
	if cfg.gradReportDue(step) {
		if err := t.gradientReport(step, b, m); err != nil {
			return metrics.Step{}, err
		}
	}
	start, cpu := time.Now(), cpuClock()
	if err := t.update(step, b, m); err != nil {
		return metrics.Step{}, err
	}
	t.freeWorkspaces() // not held through the next rollout's decoder
	m[metrics.TimeTrain] = time.Since(start).Seconds()
	cpu(m, metrics.TimeTrainCPU)

	// 6. Validation on held-out seeds.
	if cfg.ValEpisodes > 0 && cfg.ValEvery > 0 && (step%cfg.ValEvery == 0 || step == cfg.Steps) {
		if err := t.validateAt(ctx, step, m); err != nil {
			return metrics.Step{}, err
		}
	}
	m[metrics.TimeStep] = time.Since(stepStart).Seconds()
	return t.record(step, m), nil
}

// cpuClock starts a CPU-time measurement; the function it returns sets
// m[name] to the CPU seconds since, where the system reports them.
func cpuClock() func(m map[string]float64, name string) {
	start, ok := CPUTime()
	return func(m map[string]float64, name string) {
		if now, ok2 := CPUTime(); ok && ok2 {
			m[name] = (now - start).Seconds()
		}
	}
}

// record appends a step's metrics to the history and reports them.
func (t *Trainer) record(step int, m map[string]float64) metrics.Step {
	if bytes, ok := PeakMemory(); ok {
		m[metrics.PeakRSS] = float64(bytes) / 1e9
	}
	t.step = step
	s := metrics.Step{Step: step, Values: m}
	t.History.Steps = append(t.History.Steps, s)
	t.obs.Step(s)
	return s
}

func (t *Trainer) emit(e metrics.Event) {
	t.History.Events = append(t.History.Events, e)
	t.obs.Event(e)
	t.writeEvent(e)
}

// rewards returns each trajectory's reward: the user's reward function if
// set, else the sum of its turn rewards (format penalties included).
func (t *Trainer) rewards(trajs []*rollout.Trajectory) ([]float64, error) {
	r := make([]float64, len(trajs))
	groups := map[int][]*rollout.Trajectory{}
	if t.cfg.Reward != nil {
		for _, tr := range trajs {
			groups[tr.Group] = append(groups[tr.Group], tr)
		}
	}
	for i, tr := range trajs {
		if t.cfg.Reward == nil {
			r[i] = tr.Reward()
			continue
		}
		v, err := t.cfg.Reward(tr, groups[tr.Group])
		if err != nil {
			return nil, fmt.Errorf("reward of trajectory %d (group %d, seed %d): %w", i, tr.Group, tr.EnvSeed, err)
		}
		r[i] = v
	}
	return r, nil
}

// evaluated holds the rollout policy's log-probs and entropies of the
// kept trajectories when the filter computed them already (nil if not).
type evaluated struct{ logp, ent [][]float64 }

// prepare computes everything the update needs from the kept rollouts:
// log-probs under the rollout policy (the PPO ratio's denominator; pre's
// if given), under the reference (KL), critic values, token rewards and
// advantages.
func (t *Trainer) prepare(step int, kept []*rollout.Trajectory, rewards []float64, pre evaluated) (*batch, error) {
	cfg := &t.cfg
	b := &batch{trajs: kept, rewards: rewards}
	var err error
	if pre.logp != nil {
		b.oldLogp, b.entropy = pre.logp, pre.ent
	} else if b.oldLogp, b.entropy, _, err = t.evaluateShared(t.policy, kept, model.Want{LM: true}); err != nil {
		return nil, fmt.Errorf("step %d: old log-probs: %w", step, err)
	}
	// Each pass over the whole batch frees its model's workspace (on
	// Qwen2.5-0.5B over a GB) before the next model's pass builds its own.
	freeWorkspaces(t.policy)
	if t.ref != nil {
		if b.refLogp, _, _, err = t.evaluateShared(t.ref, kept, model.Want{LM: true}); err != nil {
			return nil, fmt.Errorf("step %d: reference log-probs: %w", step, err)
		}
		freeWorkspaces(t.ref)
	}
	if t.critic != nil {
		if _, _, b.values, err = t.evaluateShared(t.critic, kept, model.Want{Value: true}); err != nil {
			return nil, fmt.Errorf("step %d: values: %w", step, err)
		}
		freeWorkspaces(t.critic)
	}
	at := make([]algo.Trajectory, len(kept))
	b.mask = make([][]bool, len(kept))
	b.tokReward = make([][]float64, len(kept))
	for i, tr := range kept {
		r, err := placeRewards(cfg.Algo.RewardPlacement, tr, rewards[i])
		if err != nil {
			return nil, fmt.Errorf("step %d: rewards of trajectory %d: %w", step, i, err)
		}
		b.mask[i] = tr.Agent
		b.tokReward[i] = r
		at[i] = algo.Trajectory{Group: tr.Group, Mask: tr.Agent, Reward: r, TurnEnd: tr.TurnEnd}
		if b.values != nil {
			at[i].Value = b.values[i]
		}
	}
	if cfg.Algo.KLPlacement == algo.KLReward && t.ref != nil {
		klr, _, err := algo.KLRewards(at, b.oldLogp, b.refLogp, cfg.Algo.KLEstimator, cfg.Algo.KLCoef)
		if err != nil {
			return nil, fmt.Errorf("step %d: KL in reward: %w", step, err)
		}
		for i := range at {
			at[i].Reward = klr[i]
		}
		b.tokReward = klr
	}
	if b.actorMask, err = cfg.actorMask(kept); err != nil {
		return nil, fmt.Errorf("step %d: %w", step, err)
	}
	if b.adv, b.ret, err = algo.Advantages(&cfg.Algo, at); err != nil {
		return nil, fmt.Errorf("step %d: advantages: %w", step, err)
	}
	if err := checkFinite(step, "advantage", b.adv); err != nil {
		return nil, err
	}
	t.keepTrainSample(step, b)
	return b, nil
}

// update runs PPO epochs over minibatches of b: the critic first, then the
// actor (as veRL), each with its own optimizer and gradient clipping. It is
// not cancellable: a half-done update would leave weights no step had.
func (t *Trainer) update(step int, b *batch, m map[string]float64) error {
	cfg := &t.cfg
	n := len(b.trajs)
	mbs := min(cfg.MiniBatches, n)
	var acc accumulator
	for epoch := 0; epoch < cfg.PPOEpochs; epoch++ {
		for k := 0; k < mbs; k++ {
			lo, hi := k*n/mbs, (k+1)*n/mbs
			critic := t.updateCritic
			if t.cfg.Comm != nil {
				critic = t.updateCriticShared
			}
			if t.critic != nil {
				if err := critic(step, b, lo, hi, &acc); err != nil {
					return err
				}
			}
			if err := t.updateActor(step, b, lo, hi, &acc); err != nil {
				return err
			}
		}
	}
	acc.into(m)
	m[metrics.Entropy] = maskedMean(b.entropy, b.mask)
	if cfg.selectiveMask() {
		var on, all float64
		for i, row := range b.actorMask {
			for k, a := range b.mask[i] {
				if a {
					all++
					if row[k] {
						on++
					}
				}
			}
		}
		if all > 0 {
			m[metrics.LossMaskFrac] = on / all
		}
	}
	if t.critic != nil {
		m[metrics.ExplainedVar] = algo.ExplainedVariance(b.values, b.ret, b.mask)
	}
	return nil
}

func (t *Trainer) updateActor(step int, b *batch, lo, hi int, acc *accumulator) error {
	grads := t.actorGrads
	if t.cfg.Comm != nil {
		grads = t.actorGradsShared
	}
	loss, ok, err := grads(step, b, lo, hi, t.cfg.MicroBatchTokens, []lossTerm{wholeLoss}, nil)
	if err != nil || !ok {
		return err // !ok: the loss mask leaves this minibatch no token: no gradient, no step
	}
	return t.actorStep(step, loss, b, acc)
}

// lossTerm picks what to back-propagate of an actor loss: ∂/∂logp and
// ∂/∂H per token (nil: none).
type lossTerm func(l *algo.ActorLoss) (dlogp, dent [][]float64)

// wholeLoss is the loss the update descends: every term.
func wholeLoss(l *algo.ActorLoss) ([][]float64, [][]float64) { return l.DLogp, l.DEntropy }

// actorGrads computes the actor loss of minibatch [lo, hi) of b and, for
// each of terms in turn, leaves that term's gradient in the policy's
// gradients (from zero) and calls then(k) (when not nil). The passes hold
// at most limit tokens (0: the whole minibatch; see microBatches). ok is
// false, with nothing computed, when the loss mask leaves the minibatch no
// token.
func (t *Trainer) actorGrads(step int, b *batch, lo, hi, limit int, terms []lossTerm, then func(k int) error) (loss algo.ActorLoss, ok bool, err error) {
	cfg := &t.cfg
	trajs := b.trajs[lo:hi]
	if cfg.selectiveMask() && !anyToken(b.actorMask[lo:hi]) {
		return loss, false, nil
	}
	parts := microBatches(trajs, limit)
	var logp, ent [][]float64
	for _, p := range parts {
		tokens, lens := pack(trajs[p[0]:p[1]])
		// Several parts each run forward again before their Backward.
		out, err := t.policy.Forward(tokens, lens, model.Want{LM: true, Targets: agentTargets(trajs[p[0]:p[1]]), NoGrad: len(parts) > 1})
		if err != nil {
			return loss, false, fmt.Errorf("step %d: actor forward: %w", step, err)
		}
		logp = append(logp, unpack(out.LogProb, lens)...)
		if cfg.Algo.EntropyCoef > 0 {
			ent = append(ent, unpack(out.Entropy, lens)...)
		}
	}
	if loss, err = t.actorLoss(step, b, lo, hi, logp, ent); err != nil {
		return loss, false, err
	}
	for k, term := range terms {
		dlogp, dent := term(&loss)
		t.policy.ZeroGrad()
		for _, p := range parts {
			tokens, lens := pack(trajs[p[0]:p[1]])
			// The activations are the last part's, of the first term: run
			// any other part, or any part again, forward first.
			if len(parts) > 1 || k > 0 {
				if _, err := t.policy.Forward(tokens, lens, model.Want{LM: true, Targets: agentTargets(trajs[p[0]:p[1]])}); err != nil {
					return loss, false, fmt.Errorf("step %d: actor forward: %w", step, err)
				}
			}
			g := model.Grad{LogProb: packGrad(rowsOf(dlogp, p), len(tokens)), Entropy: packGrad(rowsOf(dent, p), len(tokens))}
			if err := t.policy.Backward(g); err != nil {
				return loss, false, fmt.Errorf("step %d: actor backward: %w", step, err)
			}
		}
		if then != nil {
			if err := then(k); err != nil {
				return loss, false, err
			}
		}
	}
	return loss, true, nil
}

// actorStep clips the policy's gradient, takes the optimizer step and
// records the minibatch's metrics.
func (t *Trainer) actorStep(step int, loss algo.ActorLoss, b *batch, acc *accumulator) error {
	norm, err := t.policy.ClipGradNorm(t.cfg.GradClip)
	if err != nil {
		return fmt.Errorf("step %d: actor gradient norm: %w", step, err)
	}
	if err := finite(step, "actor gradient norm", norm); err != nil {
		return err
	}
	lr, err := t.policy.Step(t.actorOpt)
	if err != nil {
		return fmt.Errorf("step %d: actor update: %w", step, err)
	}
	acc.add(metrics.PolicyLoss, loss.PGLoss)
	acc.add(metrics.GradNorm, norm)
	acc.add(metrics.ClipFrac, loss.PGClipFrac)
	acc.add(metrics.ClipFracHigh, loss.ClipFracHigh)
	acc.add(metrics.ClipFracLow, loss.ClipFracLow)
	acc.add(metrics.ClipFracLower, loss.PGClipFracLower)
	acc.add(metrics.ApproxKL, loss.PPOKL)
	if b.refLogp != nil {
		acc.add(metrics.RefKL, loss.KLRef)
	}
	acc.add(metrics.LearningRate, lr)
	return nil
}

func (t *Trainer) updateCritic(step int, b *batch, lo, hi int, acc *accumulator) error {
	trajs := b.trajs[lo:hi]
	parts := microBatches(trajs, t.cfg.MicroBatchTokens)
	var values [][]float64
	for _, p := range parts {
		tokens, lens := pack(trajs[p[0]:p[1]])
		out, err := t.critic.Forward(tokens, lens, model.Want{Value: true, NoGrad: len(parts) > 1})
		if err != nil {
			return fmt.Errorf("step %d: critic forward: %w", step, err)
		}
		values = append(values, unpack(out.Value, lens)...)
	}
	loss, err := algo.ComputeValueLoss(&t.cfg.Algo, values, b.values[lo:hi], b.ret[lo:hi], b.mask[lo:hi])
	if err != nil {
		return fmt.Errorf("step %d: value loss: %w", step, err)
	}
	if err := finite(step, "value loss", loss.Loss); err != nil {
		return err
	}
	t.critic.ZeroGrad()
	for _, p := range parts {
		tokens, lens := pack(trajs[p[0]:p[1]])
		if len(parts) > 1 {
			if _, err := t.critic.Forward(tokens, lens, model.Want{Value: true}); err != nil {
				return fmt.Errorf("step %d: critic forward: %w", step, err)
			}
		}
		if err := t.critic.Backward(model.Grad{Value: packGrad(rowsOf(loss.DValue, p), len(tokens))}); err != nil {
			return fmt.Errorf("step %d: critic backward: %w", step, err)
		}
	}
	return t.criticStep(step, loss, acc)
}

// criticStep clips the critic's gradient, takes the optimizer step and
// records the minibatch's metrics.
func (t *Trainer) criticStep(step int, loss algo.ValueLoss, acc *accumulator) error {
	norm, err := t.critic.ClipGradNorm(t.cfg.GradClip)
	if err != nil {
		return fmt.Errorf("step %d: critic gradient norm: %w", step, err)
	}
	if err := finite(step, "critic gradient norm", norm); err != nil {
		return err
	}
	if _, err := t.critic.Step(t.criticOpt); err != nil {
		return fmt.Errorf("step %d: critic update: %w", step, err)
	}
	acc.add(metrics.ValueLoss, loss.Loss)
	acc.add(metrics.ValueClipFrac, loss.ClipFrac)
	acc.add(metrics.CriticGradNorm, norm)
	return nil
}

// actorLoss is the actor's loss over minibatch [lo, hi) of b from the
// policy's current log-probabilities (and entropies, used when the
// entropy bonus is on), checked finite.
func (t *Trainer) actorLoss(step int, b *batch, lo, hi int, logp, ent [][]float64) (algo.ActorLoss, error) {
	cfg := &t.cfg
	in := algo.ActorInputs{Mask: b.actorMask[lo:hi], Logp: logp, OldLogp: b.oldLogp[lo:hi], Adv: b.adv[lo:hi]}
	if cfg.Algo.EntropyCoef > 0 {
		in.Entropy = ent
	}
	if b.refLogp != nil {
		in.RefLogp = b.refLogp[lo:hi]
	}
	loss, err := algo.ComputeActorLoss(&cfg.Algo, in)
	if err != nil {
		return loss, fmt.Errorf("step %d: actor loss: %w", step, err)
	}
	return loss, finite(step, "actor loss", loss.Loss)
}

// microBatches splits trajs into runs of whole trajectories of at most
// limit tokens each (a longer trajectory alone; Config.MicroBatchTokens
// for the update): [first, end) index pairs. One run when limit is 0 or
// everything fits.
func microBatches(trajs []*rollout.Trajectory, limit int) [][2]int {
	var parts [][2]int
	start, size := 0, 0
	for i, tr := range trajs {
		if limit > 0 && i > start && size+len(tr.Tokens) > limit {
			parts = append(parts, [2]int{start, i})
			start, size = i, 0
		}
		size += len(tr.Tokens)
	}
	return append(parts, [2]int{start, len(trajs)})
}

// rowsOf returns rows[p[0]:p[1]], nil for nil rows (a loss term that is
// off).
func rowsOf(rows [][]float64, p [2]int) [][]float64 {
	if rows == nil {
		return nil
	}
	return rows[p[0]:p[1]]
}

// validateAt plays the held-out seeds (one episode each, at the validation
// temperature) and records success and reward.
func (t *Trainer) validateAt(ctx context.Context, step int, m map[string]float64) error {
	t.obs.Phase(step, "validate")
	tasks := make([]rollout.Task, len(t.valEnvs))
	for i, e := range t.valEnvs {
		tasks[i] = rollout.Task{Env: e, EnvSeed: t.valSeeds[i], AgentSeed: agentSeed(t.cfg.Seed, -1, i), Group: i}
	}
	trajs, err := t.playShared(ctx, tasks, t.cfg.ValTemperature, func(i int) int { return i })
	if err != nil {
		return fmt.Errorf("step %d: validation: %w", step, err)
	}
	rewards, err := t.rewards(trajs)
	if err != nil {
		return fmt.Errorf("step %d: validation: %w", step, err)
	}
	var succ, rew float64
	for i, tr := range trajs {
		if tr.Success {
			succ++
		}
		rew += rewards[i]
	}
	n := float64(len(trajs))
	m[metrics.ValSuccessRate] = succ / n
	m[metrics.ValRewardMean] = rew / n
	t.keepValSamples(step, trajs, rewards)
	return nil
}

// trainTasks lays out step's trajectories: EnvGroups groups of GroupSize
// members sharing a reset seed; every member has its own sampling stream.
func (t *Trainer) trainTasks(step int) []rollout.Task {
	cfg := &t.cfg
	tasks := make([]rollout.Task, 0, len(t.trainEnvs))
	for g := 0; g < cfg.EnvGroups; g++ {
		seed := envSeed(cfg.Seed, step, g)
		for j := 0; j < cfg.GroupSize; j++ {
			i := g*cfg.GroupSize + j
			tasks = append(tasks, rollout.Task{Env: t.trainEnvs[i], EnvSeed: seed, AgentSeed: agentSeed(cfg.Seed, step, i), Group: g})
		}
	}
	return tasks
}

func (t *Trainer) newEnv() (envs.Env, error) {
	if t.cfg.NewEnv != nil {
		e, err := t.cfg.NewEnv()
		if err != nil {
			return nil, fmt.Errorf("env: %w", err)
		}
		if e == nil {
			return nil, errors.New("env: NewEnv returned a nil environment")
		}
		return e, nil
	}
	return envs.New(t.cfg.Env, t.cfg.EnvOptions)
}

func (t *Trainer) makeEnvs(n int) ([]envs.Env, error) {
	out := make([]envs.Env, n)
	for i := range out {
		e, err := t.newEnv()
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func (c *Config) label() string {
	if c.EnvLabel != "" {
		return c.EnvLabel
	}
	return c.Env
}

// envSeed and agentSeed derive independent streams from the experiment
// seed with splitmix64, so a step's seeds depend only on (seed, step, index)
// and resuming at any step reproduces them.
func envSeed(seed int64, step, group int) int64 {
	return int64(mix(uint64(seed), 0x9e3779b97f4a7c15, uint64(int64(step)), uint64(group)) >> 1)
}

func agentSeed(seed int64, step, i int) uint64 {
	return mix(uint64(seed), 0xd1b54a32d192ed03, uint64(int64(step)), uint64(i))
}

func mix(xs ...uint64) uint64 {
	var h uint64
	for _, x := range xs {
		h = splitmix(h ^ x)
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func sampleOptions(temp float32, topK int, topP float32) sample.Options {
	return sample.Options{Temperature: temp, TopK: topK, TopP: topP}
}

type nopObserver struct{}

func (nopObserver) Phase(int, string)   {}
func (nopObserver) Step(metrics.Step)   {}
func (nopObserver) Event(metrics.Event) {}

func (nopObserver) WarmStart(WarmStartProgress) {}
