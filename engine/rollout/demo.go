package rollout

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// Demonstrate plays one episode with the environment's expert writing every
// response and returns it as a trajectory laid out exactly as Play lays out
// the agent's own episodes (same chat template, same chunks, Agent true on
// the response tokens). With probability imperfect a turn's response is an
// imperfect demonstration (suboptimal or random actions with fitting
// reasoning). These trajectories are the warm start's training data.
func Demonstrate(env envs.Env, tok *tokenizer.Tokenizer, seed int64, rng *rand.Rand, imperfect float64, cfg Config) (*Trajectory, error) {
	chat, err := NewChat(tok, cfg.Turn.Think)
	if err != nil {
		return nil, err
	}
	var tr *Trajectory
	err = demonstrate(env, seed, rng, imperfect, cfg, func(ep *envs.Episode, context, response string, res *envs.TurnResult) error {
		if tr == nil {
			tr = &Trajectory{EnvSeed: seed, episode: ep}
		}
		if res == nil {
			tr.appendContext(tok.Encode(context))
			return nil
		}
		ids := tok.Encode(response)
		if len(ids) > cfg.MaxTokensPerTurn {
			return fmt.Errorf("rollout: a demonstration has %d tokens, more than max_tokens_per_turn %d: raise the limit or shorten the expert's reasoning", len(ids), cfg.MaxTokensPerTurn)
		}
		tr.addTurn(ids, response, *res, chat)
		return nil
	})
	if err != nil {
		return nil, err
	}
	tr.finish()
	return tr, nil
}

// DemonstrationText plays the same episode as Demonstrate with the same
// seed and rng state, and returns its whole conversation as text: the
// corpus a small vocabulary is trained on, before any tokenizer exists.
func DemonstrationText(env envs.Env, seed int64, rng *rand.Rand, imperfect float64, cfg Config) (string, error) {
	var b strings.Builder
	err := demonstrate(env, seed, rng, imperfect, cfg, func(_ *envs.Episode, context, response string, res *envs.TurnResult) error {
		if res == nil {
			b.WriteString(context)
		} else {
			b.WriteString(response)
		}
		return nil
	})
	return b.String(), err
}

// demonstrate runs the expert episode and hands each piece of the
// conversation to emit in order: context chunks (res nil) and responses
// (without the forced prefix, with the turn's result).
func demonstrate(env envs.Env, seed int64, rng *rand.Rand, imperfect float64, cfg Config,
	emit func(ep *envs.Episode, context, response string, res *envs.TurnResult) error) error {
	expert, ok := env.(envs.Expert)
	if !ok {
		return fmt.Errorf("rollout: environment %T has no expert (envs.Expert) to demonstrate with", env)
	}
	ep, err := envs.Start(env, seed, cfg.Turn)
	if err != nil {
		return fmt.Errorf("rollout: reset with seed %d: %w", seed, err)
	}
	if cfg.MaxTurns > 0 {
		ep.Desc.MaxTurns = cfg.MaxTurns
	}
	think := cfg.Turn.Think
	prefix := envs.ResponsePrefix(think)
	if err := emit(ep, FirstText(ep.Desc, ep.Observation, ep.ActionsLeft, think), "", nil); err != nil {
		return err
	}
	for !ep.Done {
		resp := expert.Demonstrate(rng, rng.Float64() < imperfect)
		// The context already holds the forced prefix; the demonstration
		// supplies the rest, ending with </answer>.
		text := strings.TrimPrefix(strings.TrimSpace(resp), prefix)
		res, err := ep.Step(prefix + text)
		if err != nil {
			return err
		}
		if err := emit(ep, "", text, &res); err != nil {
			return err
		}
		if ep.Done {
			break
		}
		if err := emit(ep, NextText(ep.Desc, res.Reward, ep.Turn+1, ep.Observation, ep.ActionsLeft, think), "", nil); err != nil {
			return err
		}
	}
	return nil
}
