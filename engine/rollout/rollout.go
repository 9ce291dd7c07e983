package rollout

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/sample"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// Config sets how episodes are played.
type Config struct {
	// MaxTokensPerTurn ends a response that has not closed </answer> after
	// this many sampled tokens (RAGEN response_length; default 64 here,
	// since tiny models write short answers).
	MaxTokensPerTurn int
	// Sample is the sampling rule of every response (RAGEN: temperature 1
	// for training rollouts, 0.5 for validation).
	Sample sample.Options
	// Turn holds the response format and the format penalty.
	Turn envs.TurnConfig
	// Template lays out the conversation: a pretrained model's chat
	// template (hf.Load returns it); nil is ChatML() with
	// envs.SystemMessage, the template of our own models.
	Template *hf.ChatTemplate
}

// Task is one episode to play: an environment instance, the seed of its
// initial state and the seed of the agent's random stream.
type Task struct {
	Env       envs.Env
	EnvSeed   int64  // Reset seed: the members of a group share it
	AgentSeed uint64 // the sampling stream of this trajectory alone
	Group     int    // group index (same initial state)
}

// Play runs every task to the end of its episode with dec, an empty
// decoder of the policy (Play names sequences by task index and removes
// each when its episode ends, so it leaves dec empty), and returns one trajectory per task, in task
// order. Generation is batched over all live episodes and
// the KV cache is kept across turns: after each turn only the environment's
// reply is prefilled. A trajectory's tokens depend only on its own task and
// the model, never on the other tasks of the batch.
//
// Play checks ctx between turns and returns ctx.Err() when it is done.
func Play(ctx context.Context, dec *model.Decoder, tok *tokenizer.Tokenizer, tasks []Task, cfg Config) ([]*Trajectory, error) {
	if len(tasks) == 0 {
		return nil, errors.New("rollout: no tasks")
	}
	if cfg.MaxTokensPerTurn < 1 {
		return nil, fmt.Errorf("rollout: max_tokens_per_turn: must be ≥ 1 (got %d)", cfg.MaxTokensPerTurn)
	}
	chat, err := NewChat(tok, cfg.Template, cfg.Turn.Think)
	if err != nil {
		return nil, err
	}
	maxPos := dec.MaxPositions()

	trajs := make([]*Trajectory, len(tasks))
	live := make([]int, 0, len(tasks))
	pending := make([][]int, len(tasks)) // tokens to append before the next generation
	rngs := make([]*sample.RNG, len(tasks))
	for i, t := range tasks {
		ep, err := envs.Start(t.Env, t.EnvSeed, cfg.Turn)
		if err != nil {
			return nil, fmt.Errorf("rollout: task %d: reset with seed %d: %w", i, t.EnvSeed, err)
		}
		tr := &Trajectory{Group: t.Group, EnvSeed: t.EnvSeed, episode: ep}
		first := chat.First(ep.Desc, ep.Observation, ep.ActionsLeft)
		tr.appendContext(first)
		trajs[i], pending[i] = tr, first
		rngs[i] = sample.NewRNG(t.AgentSeed)
		live = append(live, i)
	}

	for len(live) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Episodes whose context cannot hold another response end here,
		// truncated, before generating.
		reqs := make([]model.Request, 0, len(live))
		next := live[:0]
		for _, i := range live {
			if dec.Len(i)+len(pending[i])+cfg.MaxTokensPerTurn >= maxPos {
				tr := trajs[i]
				if len(tr.Turns) == 0 {
					return nil, fmt.Errorf("rollout: task %d: the first prompt (%d tokens) and a response of up to %d tokens do not fit the context of %d: raise context_length or lower max_tokens_per_turn", i, len(pending[i]), cfg.MaxTokensPerTurn, maxPos)
				}
				// The observation the agent will not answer is dropped, so
				// the trajectory ends with its last response and fits the
				// context for the update's forward pass.
				tr.dropContext(len(pending[i]))
				tr.ContextFull = true
				tr.finish()
				dec.Remove(i)
				continue
			}
			reqs = append(reqs, model.Request{ID: i, Prompt: pending[i], RNG: rngs[i]})
			next = append(next, i)
		}
		live = next
		if len(live) == 0 {
			break
		}
		out, err := dec.Generate(reqs, model.GenerateOptions{Sample: cfg.Sample, MaxNew: cfg.MaxTokensPerTurn, Stop: chat.stop})
		if err != nil {
			return nil, fmt.Errorf("rollout: %w", err)
		}
		next = live[:0]
		for k, i := range live {
			tr := trajs[i]
			text := chat.decode(out[k])
			res, err := tr.episode.Step(chat.prefix + text)
			if err != nil {
				return nil, fmt.Errorf("rollout: task %d: %w", i, err)
			}
			tr.addTurn(out[k], text, res, chat)
			if tr.episode.Done {
				tr.finish()
				dec.Remove(i)
				continue
			}
			pending[i] = chat.Next(tr.episode.Desc, res.Reward, tr.episode.Turn+1, tr.episode.Observation, tr.episode.ActionsLeft)
			tr.appendContext(pending[i])
			next = append(next, i)
		}
		live = next
	}
	return trajs, nil
}
