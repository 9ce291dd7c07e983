package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// WarmStartVersion changes whenever the warm start's procedure changes, so
// caches made by an older procedure are not reused: cached warm starts and
// the DSL's cached runs that warm-start both key on it.
const WarmStartVersion = 4 // 4: FrozenLake on firm ice with coordinates walks its path in words

// warmStart returns the tokenizer and the policy the RL phase starts from:
//
//  1. play WarmStart.Episodes expert episodes (a fraction Imperfect of the
//     turns answered imperfectly) on seeds disjoint from training;
//  2. train a byte-level BPE vocabulary of VocabSize on their text, so the
//     tiny models see whole words (Right, <think>, grid rows);
//  3. fine-tune a freshly initialised policy on the demonstrations'
//     response tokens (cross-entropy on the agent's tokens only, or on
//     every token with LearnContext) for
//     WarmStart.Steps steps of BatchSize episodes, AdamW with cosine decay.
//
// The fine-tuning runs on the run's compute path (place). The result is cached under a hash of everything that determines
// it, so re-running a notebook loads it at once.
func warmStart(ctx context.Context, cfg *Config, newEnv func() (envs.Env, error), place placer, obs Observer) (*tokenizer.Tokenizer, *model.Model, error) {
	path, err := WarmStartDir(cfg)
	if err != nil {
		return nil, nil, err
	}
	if m, d, err := model.Load(path); err == nil {
		tok, terr := tokenizer.FromJSON(d.Tokenizer)
		d.Close()
		if terr == nil {
			if err := place(m); err != nil {
				return nil, nil, err
			}
			return tok, m, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		// A damaged cache entry is rebuilt, never trusted.
		os.RemoveAll(path)
	}

	env, err := newEnv()
	if err != nil {
		return nil, nil, err
	}
	ws := cfg.WarmStart
	episodes := max(ws.Episodes, 1)
	if ws.Steps == 0 {
		episodes = min(episodes, 64) // only the vocabulary is needed
	}
	demos, err := envs.Demonstrations(env, envs.DemoConfig{
		Episodes: episodes, Seed: envSeed(cfg.warmStartSeed(), -2, 0), ImperfectRate: ws.Imperfect,
		Turn: envs.TurnConfig{Think: cfg.Think, FormatPenalty: cfg.FormatPenalty}, Prompt: envs.PromptConfig{Think: cfg.Think},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("warm start: %w", err)
	}
	texts := make([]string, len(demos))
	for i, d := range demos {
		if texts[i], err = rollout.DemoText(d, cfg.Think); err != nil {
			return nil, nil, fmt.Errorf("warm start: %w", err)
		}
	}
	tok, err := tokenizer.Train(texts, tokenizer.TrainConfig{VocabSize: cfg.VocabSize})
	if err != nil {
		return nil, nil, fmt.Errorf("warm start: vocabulary: %w", err)
	}
	mc, err := cfg.ModelConfig(tok.VocabSize())
	if err != nil {
		return nil, nil, err
	}
	policy, err := model.New(mc, uint64(cfg.warmStartSeed()))
	if err != nil {
		return nil, nil, err
	}
	if err := place(policy); err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			policy.Free()
		}
	}()
	if ws.Steps > 0 {
		chat, err := rollout.NewChat(tok, nil, cfg.Think)
		if err != nil {
			return nil, nil, fmt.Errorf("warm start: %w", err)
		}
		trajs := make([]*rollout.Trajectory, len(demos))
		for i, d := range demos {
			if trajs[i], err = rollout.FromDemo(d, chat, cfg.MaxTokensPerTurn); err != nil {
				return nil, nil, fmt.Errorf("warm start: %w", err)
			}
			if err := fitContext(trajs[i], mc.MaxPositions); err != nil {
				return nil, nil, err
			}
		}
		if err := finetune(ctx, policy, trajs, ws, cfg.warmStartSeed(), obs); err != nil {
			return nil, nil, err
		}
	}
	tj, err := tok.MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	ok = true
	if err := policy.Save(path, tj, checkpoint.Checkpoint{}); err != nil {
		// The cache is a convenience: a read-only cache directory must not
		// stop the run.
		fmt.Fprintf(os.Stderr, "ragen: warm start not cached: %v\n", err)
	}
	return tok, policy, nil
}

// fitContext cuts a demonstration longer than the context after the last
// response that fits, as a rollout ends when the context cannot hold
// another turn (Trajectory.ContextFull): the policy learns no turn it could
// not play. A first response that does not fit is an error. Both the fresh
// warm start and the fine-tuning of a loaded model (Init, Pretrained) cut
// this way.
func fitContext(t *rollout.Trajectory, limit int) error {
	n := len(t.Tokens)
	if n <= limit {
		return nil
	}
	for end := limit - 1; end >= 0; end-- {
		if t.TurnEnd[end] {
			t.Tokens, t.Agent, t.TurnEnd = t.Tokens[:end+1], t.Agent[:end+1], t.TurnEnd[:end+1]
			t.ContextFull = true
			return nil
		}
	}
	return fmt.Errorf("warm start: a demonstration's first turn does not fit the model's context of %d tokens (context_length; max_position_embeddings of a loaded model): raise context_length or lower max_tokens_per_turn", limit)
}

// finetune is the supervised phase: cross-entropy on the demonstrations'
// response tokens, or on all their tokens with WarmStart.LearnContext
// (model.CrossEntropyGrad), minibatches drawn in a seeded shuffled order.
// obs hears of each finished step (Observer.WarmStart).
func finetune(ctx context.Context, n *model.Model, demos []*rollout.Trajectory, ws WarmStart, seed int64, obs Observer) error {
	oc := optim.DefaultConfig()
	oc.LR, oc.Schedule, oc.WarmupSteps, oc.TotalSteps = ws.LR, "cosine", min(20, ws.Steps/10), ws.Steps
	opt, err := n.NewAdamW(oc)
	if err != nil {
		return fmt.Errorf("warm start: %w", err)
	}
	defer opt.Free()
	rng := envs.NewRand(seed)
	order := rng.Perm(len(demos))
	next := 0
	var dlp []float32
	start := time.Now()
	for step := 0; step < ws.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var tokens, lens []int
		var mask []bool
		for k := 0; k < ws.BatchSize; k++ {
			if next == len(order) {
				order, next = rng.Perm(len(demos)), 0
			}
			d := demos[order[next]]
			next++
			tokens = append(tokens, d.Tokens...)
			lens = append(lens, len(d.Tokens))
			if ws.LearnContext {
				mask = append(mask, slices.Repeat([]bool{true}, len(d.Tokens))...)
			} else {
				mask = append(mask, d.Agent...)
			}
		}
		n.ZeroGrad()
		out, err := n.Forward(tokens, lens, model.Want{LM: true})
		if err != nil {
			return fmt.Errorf("warm start step %d: %w", step, err)
		}
		dlp = append(dlp[:0], make([]float32, len(tokens))...)
		loss, err := model.CrossEntropyGrad(dlp, out.LogProb, lens, mask)
		if err != nil {
			return fmt.Errorf("warm start step %d: %w", step, err)
		}
		if err := n.Backward(model.Grad{LogProb: dlp}); err != nil {
			return fmt.Errorf("warm start step %d: %w", step, err)
		}
		if err := finite(step, "warm-start loss", float64(loss)); err != nil {
			return err
		}
		if _, err := n.ClipGradNorm(1.0); err != nil {
			return fmt.Errorf("warm start step %d: %w", step, err)
		}
		if _, err := n.Step(opt); err != nil {
			return fmt.Errorf("warm start step %d: %w", step, err)
		}
		obs.WarmStart(WarmStartProgress{Step: step + 1, Steps: ws.Steps, Loss: float64(loss), Elapsed: time.Since(start)})
	}
	return nil
}

// WarmStartDir is where cfg's warm start is cached: a model directory
// (model.Save) that Config.Init accepts, so variants of a run can start
// from its warm start and fine-tune it further. "" when cfg starts from a
// loaded model (Init or Pretrained) instead.
func WarmStartDir(cfg *Config) (string, error) {
	if cfg.Init != "" || cfg.Pretrained != "" {
		return "", nil
	}
	key, err := warmStartKey(cfg)
	if err != nil {
		return "", err
	}
	dir, err := cacheDir(cfg.WarmStart.CacheDir)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, key), nil
}

// warmStartKey hashes everything the warm start depends on.
func warmStartKey(cfg *Config) (string, error) {
	mc, err := cfg.ModelConfig(cfg.VocabSize)
	if err != nil {
		return "", err
	}
	env, opts := cfg.Env, map[string]any(cfg.EnvOptions)
	if cfg.NewEnv != nil {
		env = "custom:" + cfg.label()
	} else if spec, ok := envs.Lookup(cfg.Env); ok {
		// Resolved options (defaults filled in, values of their kinds), so
		// that two spellings of one environment share their warm start.
		resolved, err := spec.Resolve(cfg.EnvOptions)
		if err != nil {
			return "", fmt.Errorf("warm start: %w", err)
		}
		opts = resolved
	}
	ws := cfg.WarmStart
	ws.Seed = 0 // the seed it uses is the key's Seed
	b, err := json.Marshal(struct {
		Version          int
		Env              string
		Options          map[string]any
		Model            model.Config
		WarmStart        WarmStart
		Seed             int64
		MaxTokensPerTurn int
		Think            bool
		FormatPenalty    float64
		Backend          string `json:",omitempty"` // "" for cpu: the host path's keys predate backends
	}{WarmStartVersion, env, opts, mc, ws, cfg.warmStartSeed(), cfg.MaxTokensPerTurn, cfg.Think, cfg.FormatPenalty, warmStartBackend(cfg.Backend, cfg.Precision)})
	if err != nil {
		return "", fmt.Errorf("warm start: env_options: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// warmStartSeed is the seed the warm start uses: WarmStart.Seed, or the
// run's.
func (c *Config) warmStartSeed() int64 {
	if c.WarmStart.Seed != 0 {
		return c.WarmStart.Seed
	}
	return c.Seed
}

// warmStartBackend is the backend part of the warm start's key: a warm
// start fine-tuned on a device differs from the host path's in rounding,
// so each backend, and bf16 on it, caches its own; "cpu" (or empty) adds
// nothing, nor does f32.
func warmStartBackend(name, precision string) string {
	if name == "cpu" {
		return ""
	}
	if precision == "bf16" {
		return name + "/bf16"
	}
	return name
}

func cacheDir(dir string) (string, error) {
	if dir == "" {
		if env := os.Getenv("RAGEN_CACHE"); env != "" {
			dir = env
		} else {
			base, err := os.UserCacheDir()
			if err != nil {
				base = os.TempDir()
			}
			dir = filepath.Join(base, "ragen")
		}
		dir = filepath.Join(dir, "warmstart")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("warm start cache: %w", err)
	}
	return dir, nil
}
