package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// initialPolicy returns the tokenizer, the policy and the chat template
// (nil: our ChatML) the RL phase starts from:
//
//   - Pretrained: a Hugging Face model directory, read by hf.Load — the
//     policy RAGEN trains (Qwen2.5-0.5B-Instruct), with its own tokenizer
//     and chat template;
//   - Init: a checkpoint of ours (model.Save, or a trainer checkpoint's
//     step directory, whose policy/ it reads), with its tokenizer and our
//     ChatML template;
//   - neither: the warm start (warmStart), trained and cached.
//
// The policy is returned on the run's compute path (place), where any
// fine-tuning runs too.
//
// A loaded policy is fine-tuned on demonstrations only if WarmStart.Steps
// > 0 (the DSL leaves it at 0 for loaded models); that fine-tuning is not
// cached. The critic is built from the policy afterwards, as for a warm
// start (criticFrom: same weights, a zero value head), so nothing is read
// twice from disk.
func initialPolicy(ctx context.Context, cfg *Config, newEnv func() (envs.Env, error), place placer, obs Observer) (*tokenizer.Tokenizer, *model.Model, *hf.ChatTemplate, error) {
	var (
		tok    *tokenizer.Tokenizer
		policy *model.Model
		tmpl   *hf.ChatTemplate
		err    error
	)
	switch {
	case cfg.Pretrained != "":
		// Under LoRA with no fine-tuning first the loaded model is only
		// the adapters' frozen base: a bf16 checkpoint's matrices stay
		// bf16, never widened into a float32 copy (decision 44).
		frozen := cfg.LoRA != nil && cfg.WarmStart.Steps == 0
		policy, tok, tmpl, err = hf.Load(cfg.Pretrained, hf.Options{Frozen: frozen})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("pretrained: %w", err)
		}
	case cfg.Init != "":
		if tok, policy, err = loadInit(cfg.Init); err != nil {
			return nil, nil, nil, err
		}
	default:
		tok, policy, err := warmStart(ctx, cfg, newEnv, place, obs)
		return tok, policy, nil, err
	}
	if err := place(policy); err != nil {
		return nil, nil, nil, err
	}
	if cfg.WarmStart.Steps > 0 {
		if err := finetuneLoaded(ctx, cfg, newEnv, tok, policy, tmpl, obs); err != nil {
			policy.Free()
			return nil, nil, nil, err
		}
	}
	return tok, policy, tmpl, nil
}

// initPolicyDir is the model directory of Init: dir itself (model.Save), or
// dir/policy (a trainer checkpoint, checkpoints/step-N).
func initPolicyDir(dir string) (string, error) {
	for _, d := range []string{filepath.Join(dir, "policy"), dir} {
		if _, err := os.Stat(filepath.Join(d, "config.json")); err == nil {
			return d, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("init: %w", err)
		}
	}
	return "", fmt.Errorf("init: %s is no checkpoint: it has neither config.json nor policy/config.json (want a directory written by model.Save or a run's checkpoints/step-N)", dir)
}

// loadInit reads the policy and tokenizer of the checkpoint at dir.
func loadInit(dir string) (*tokenizer.Tokenizer, *model.Model, error) {
	pdir, err := initPolicyDir(dir)
	if err != nil {
		return nil, nil, err
	}
	m, d, err := model.Load(pdir)
	if err != nil {
		return nil, nil, fmt.Errorf("init: %w", err)
	}
	defer d.Close()
	if !m.Config.LMHead {
		return nil, nil, fmt.Errorf("init: %s has no LM head (a critic?): the policy must be a language model", pdir)
	}
	tok, err := tokenizer.FromJSON(d.Tokenizer)
	if err != nil {
		return nil, nil, fmt.Errorf("init: %s: tokenizer.json: %w", pdir, err)
	}
	return tok, m, nil
}

// finetuneLoaded fine-tunes a loaded policy on WarmStart.Episodes expert
// episodes laid out in its own template, as the warm start does for a
// fresh one.
func finetuneLoaded(ctx context.Context, cfg *Config, newEnv func() (envs.Env, error), tok *tokenizer.Tokenizer, policy *model.Model, tmpl *hf.ChatTemplate, obs Observer) error {
	env, err := newEnv()
	if err != nil {
		return err
	}
	ws := cfg.WarmStart
	demos, err := envs.Demonstrations(env, envs.DemoConfig{
		Episodes: ws.Episodes, Seed: envSeed(cfg.Seed, -2, 0), ImperfectRate: ws.Imperfect,
		Turn: envs.TurnConfig{Think: cfg.Think, FormatPenalty: cfg.FormatPenalty}, Prompt: envs.PromptConfig{Think: cfg.Think},
	})
	if err != nil {
		return fmt.Errorf("warm start: %w", err)
	}
	chat, err := rollout.NewChat(tok, tmpl, cfg.Think)
	if err != nil {
		return fmt.Errorf("warm start: %w", err)
	}
	trajs := make([]*rollout.Trajectory, len(demos))
	for i, d := range demos {
		if trajs[i], err = rollout.FromDemo(d, chat, cfg.MaxTokensPerTurn); err != nil {
			return fmt.Errorf("warm start: %w", err)
		}
		if err := fitContext(trajs[i], policy.Config.MaxPositions); err != nil {
			return err
		}
	}
	return finetune(ctx, policy, trajs, ws, cfg.Seed, obs)
}

// validateLoaded checks Pretrained and Init: at most one, and a directory
// that holds a model.
func (c *Config) validateLoaded() error {
	switch {
	case c.Pretrained != "" && c.Init != "":
		return errors.New("init: cannot be combined with pretrained (both say where the policy comes from)")
	case c.Pretrained != "":
		if _, err := os.Stat(filepath.Join(c.Pretrained, hf.ConfigFile)); err != nil {
			return fmt.Errorf("pretrained: %s is no Hugging Face model directory: %w", c.Pretrained, err)
		}
	case c.Init != "":
		_, err := initPolicyDir(c.Init)
		return err
	}
	return nil
}
