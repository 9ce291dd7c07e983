package train

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/rollout"
)

// Loss-mask rules (Config.LossMask): which of the agent's tokens the
// policy loss covers (VAGEN-style selective token masking).
const (
	MaskAll    = "all"    // every sampled token (RAGEN; "" too)
	MaskAnswer = "answer" // the tokens inside <answer>…</answer>
	MaskThink  = "think"  // the tokens inside <think>…</think>: the reasoning
)

// LossMasks lists the named rules Config.Validate accepts for LossMask.
var LossMasks = []string{MaskAll, MaskAnswer, MaskThink}

// MaskToken is what a loss-mask function (Config.LossMaskFunc) reads of
// one sampled token.
type MaskToken struct {
	Turn  int          // its turn, from 1 (counting the turns with a response)
	Turns int          // turns in the trajectory
	Span  rollout.Span // think, answer or format (the tags, text around the blocks)
	Pos   int          // position in its turn's response, from 0
	Len   int          // tokens in its turn's response
}

// selectiveMask reports whether the loss-mask rule may drop agent tokens.
func (c *Config) selectiveMask() bool {
	return c.LossMaskFunc != nil || (c.LossMask != "" && c.LossMask != MaskAll)
}

// actorMask returns the tokens of trajs the policy loss covers: their agent
// tokens, less those the LossMask rule drops. The default rule returns the
// agent masks themselves, so the update is what it always was.
func (c *Config) actorMask(trajs []*rollout.Trajectory) ([][]bool, error) {
	out := make([][]bool, len(trajs))
	rule := c.LossMask
	if !c.selectiveMask() {
		for i, tr := range trajs {
			out[i] = tr.Agent
		}
		return out, nil
	}
	for i, tr := range trajs {
		if len(tr.Span) != len(tr.Tokens) {
			return nil, fmt.Errorf("loss_mask %s: trajectory %d has no token spans (%d for %d tokens)", rule, i, len(tr.Span), len(tr.Tokens))
		}
		turns := 0
		for _, e := range tr.TurnEnd {
			if e {
				turns++
			}
		}
		m := make([]bool, len(tr.Agent))
		turn, start, end := 1, -1, -1 // the current response's first and last tokens
		for k, on := range tr.Agent {
			if !on {
				continue
			}
			if start < 0 {
				start, end = k, k
				for end+1 < len(tr.Agent) && !tr.TurnEnd[end] && tr.Agent[end+1] {
					end++
				}
			}
			tok := MaskToken{Turn: turn, Turns: turns, Span: tr.Span[k], Pos: k - start, Len: end - start + 1}
			switch {
			case c.LossMaskFunc != nil:
				keep, err := c.LossMaskFunc(tok)
				if err != nil {
					return nil, fmt.Errorf("loss mask of trajectory %d (group %d, seed %d), turn %d, token %d: %w", i, tr.Group, tr.EnvSeed, turn, k-start, err)
				}
				m[k] = keep
			case rule == MaskAnswer:
				m[k] = tok.Span == rollout.SpanAnswer
			case rule == MaskThink:
				m[k] = tok.Span == rollout.SpanThink
			default:
				return nil, fmt.Errorf("loss_mask: unknown rule %q", rule)
			}
			if k == end {
				turn, start = turn+1, -1
			}
		}
		out[i] = m
	}
	return out, nil
}

// anyToken reports whether a mask covers some token.
func anyToken(mask [][]bool) bool {
	for _, m := range mask {
		for _, on := range m {
			if on {
				return true
			}
		}
	}
	return false
}
