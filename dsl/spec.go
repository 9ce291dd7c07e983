package dsl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/internal/atomicfile"
)

// RunSpec is one run as the trainer takes it: the trainer's config and the
// sources of the reward and filter expressions (a loss-mask expression is
// in Config.LossMask), with the run's cache key. It is what a Slurm task
// reads (decision 42): written as JSON to the run cache, compiled again by
// the task, which refuses it unless it reproduces Key, so a run trained on
// the cluster is cached under the key the same run has here.
type RunSpec struct {
	// Name labels the run in plots and tables; not part of the key.
	Name string `json:"name"`
	// Key is the hash of everything that decides the run's numbers: the
	// run lives in $RAGEN_CACHE/runs/Key.
	Key    string       `json:"key"`
	Config train.Config `json:"config"`
	// Reward is the reward expression's source ("" = the default reward),
	// RewardErrors what its run-time errors do (FailRun, UseZero).
	Reward       string `json:"reward,omitempty"`
	RewardErrors string `json:"reward_errors,omitempty"`
	// Filter is the filter rule; its expression, if any, scores groups.
	Filter FilterRule `json:"filter"`
	// Fresh trains again even when the cache holds the run.
	Fresh bool `json:"fresh,omitempty"`

	reward RewardExpr // Reward, compiled
}

// specVersion changes when a RunSpec's JSON changes meaning; a task
// refuses a spec of another version (a binary older or newer than the
// kernel's).
const specVersion = 1

// Spec compiles the experiment to the run the trainer will make: the
// config, the expressions and the cache key. Errors name the Experiment's
// field.
func (e Experiment) Spec() (*RunSpec, error) {
	if err := e.compile(); err != nil {
		return nil, err
	}
	cfg, err := e.Config()
	if err != nil {
		return nil, err
	}
	s := &RunSpec{Name: e.label(), Config: cfg, Reward: e.Reward.Source, RewardErrors: e.RewardErrors,
		Filter: e.Filter, Fresh: e.Fresh, reward: e.Reward}
	if s.Key, err = s.key(); err != nil {
		return nil, err
	}
	return s, nil
}

// NewRunSpec is the run of a trainer config with the default reward and the
// algorithm's own filter, as `ragen sweep` makes them: the same key as an
// Experiment that compiles to cfg.
func NewRunSpec(name string, cfg train.Config) (*RunSpec, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &RunSpec{Name: name, Config: cfg}
	if err := lossMask(&s.Config, cfg.LossMask); err != nil {
		return nil, fmt.Errorf("loss_mask: %w", err)
	}
	var err error
	if s.Key, err = s.key(); err != nil {
		return nil, err
	}
	return s, nil
}

// key hashes everything that determines a run's result. A loaded model
// counts by its files (ModelSpec.identity).
func (s *RunSpec) key() (string, error) {
	model, err := s.model().identity()
	if err != nil {
		return "", fmt.Errorf("run cache: Model: %w", err)
	}
	b, err := json.Marshal(struct {
		Version      int
		WarmStart    int `json:",omitempty"` // the demonstrations' version: a new expert must not reuse runs
		Config       *train.Config
		Reward       string
		RewardErrors string
		Filter       string
		Model        string `json:",omitempty"` // a loaded model's files
	}{cacheVersion, warmStartVersion(&s.Config), &s.Config, s.Reward, s.RewardErrors, s.Filter.String(), model})
	if err != nil {
		return "", fmt.Errorf("run cache: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// model is the loaded model the config starts from, as the Experiment
// named it; "" for a preset.
func (s *RunSpec) model() ModelSpec {
	switch {
	case s.Config.Pretrained != "":
		return Pretrained(s.Config.Pretrained)
	case s.Config.Init != "":
		return Checkpoint(s.Config.Init)
	}
	return ""
}

// dir is the run's directory in the cache.
func (s *RunSpec) dir() (string, error) {
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "runs", s.Key), nil
}

// cached loads the run from the cache; nil when it is not there (or Fresh).
func (s *RunSpec) cached() *Run {
	dir, err := s.dir()
	if err != nil || s.Fresh {
		return nil
	}
	r, err := loadRun(dir)
	if err != nil {
		return nil
	}
	r.Name, r.Dir, r.Cached = s.Name, dir, true
	r.History.Name = s.Name
	return r
}

// train runs the spec in this process, or loads its cached result unless
// Fresh (see Experiment.TrainContext).
func (s *RunSpec) train(ctx context.Context) (run *Run, err error) {
	ctx, stop := withSession(ctx)
	defer stop()
	if r := s.cached(); r != nil {
		return r, nil
	}
	dir, err := s.dir()
	if err != nil {
		return nil, err
	}
	r := &Run{Name: s.Name, Key: s.Key, Dir: dir}
	// A run directory without run.json is an interrupted run; its
	// metrics.jsonl would be appended to, so it starts over.
	if err := os.RemoveAll(r.Dir); err != nil {
		return nil, fmt.Errorf("run cache: %w", err)
	}
	cfg := s.Config
	cfg.RunDir = r.Dir

	h := &hooks{spec: s, run: r}
	f := s.Filter
	if !s.reward.IsZero() || f.prog != nil {
		cfg.Reward = h.reward
	}
	if f.prog != nil {
		cfg.GroupScore = h.scorer(&f)
	}
	obs := currentObserver()
	if ro, ok := obs.(RunObserver); ok {
		ro.Begin(r.Name, cfg.Steps)
		defer func() { ro.End(r, err) }()
	}
	t, err := train.New(ctx, cfg, obs)
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted during the warm start: a run with no steps, so
			// that `run := exp.Train()` still holds a Run to show.
			r.Interrupted = true
			return r, err
		}
		return nil, err
	}
	err = t.Run(ctx)
	r.History = t.History
	r.History.Name = r.Name
	if err != nil {
		r.Interrupted = ctx.Err() != nil
		return r, err
	}
	if err := saveRun(r); err != nil {
		return r, err
	}
	return r, nil
}

// specFile is a RunSpec as written for a task.
type specFile struct {
	Version int `json:"version"`
	*RunSpec
}

// writeSpec writes s to path, atomically: a task never reads half a spec.
// A custom environment cannot be written: its code lives in the kernel.
func writeSpec(path string, s *RunSpec) error {
	if s.Config.NewEnv != nil {
		return fmt.Errorf("%s: the environment %q is defined in a cell (ragen.Custom) and its code cannot leave this process: train it here (Executor nil)", s.Name, s.Config.EnvLabel)
	}
	if s.Config.LossMaskFunc != nil && s.Config.LossMask == "" {
		return fmt.Errorf("%s: a loss-mask function without its source cannot be written", s.Name)
	}
	b, err := json.MarshalIndent(specFile{specVersion, s}, "", "  ")
	if err != nil {
		return fmt.Errorf("run spec %s: %w", s.Name, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'))
}

// readSpec reads a spec written by writeSpec and compiles its expressions.
// A spec that does not hash to its own key (another version of the
// program, an edited file) is refused: the run would be cached under a key
// that does not describe it.
func readSpec(path string) (*RunSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("run spec: %w", err)
	}
	f := specFile{RunSpec: &RunSpec{}}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("run spec %s: %w", path, err)
	}
	if f.Version != specVersion {
		return nil, fmt.Errorf("run spec %s: version %d, this binary reads %d: run the tasks with the kernel's own ragen binary", path, f.Version, specVersion)
	}
	s := f.RunSpec
	if s.Reward != "" {
		if s.reward, err = CompileReward(s.Reward); err != nil {
			return nil, fmt.Errorf("run spec %s: %w", path, err)
		}
	}
	if err := s.Filter.compile(); err != nil {
		return nil, fmt.Errorf("run spec %s: filter: %w", path, err)
	}
	if err := lossMask(&s.Config, s.Config.LossMask); err != nil {
		return nil, fmt.Errorf("run spec %s: loss mask: %w", path, err)
	}
	key, err := s.key()
	if err != nil {
		return nil, err
	}
	if key != s.Key {
		return nil, fmt.Errorf("run spec %s: its config hashes to %s, not to its key %s: the binary differs from the one that wrote it (rebuild ragen on the cluster from the kernel's source)", path, key, s.Key)
	}
	return s, nil
}

// TrainSpecFile trains the run of a spec file in this process, into the
// run cache ($RAGEN_CACHE), as the local run would: what a Slurm task of a
// sweep does (`ragen run-spec FILE`). A cached run is not trained again
// unless the spec says Fresh.
func TrainSpecFile(ctx context.Context, path string) (*Run, error) {
	s, err := readSpec(path)
	if err != nil {
		return nil, err
	}
	return s.train(ctx)
}
