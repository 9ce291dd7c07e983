package train

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
)

// batch is the trainable part of one step's rollouts: the kept
// trajectories with every per-token array the update needs, all aligned to
// the token being predicted (see model.Output).
type batch struct {
	trajs   []*rollout.Trajectory
	mask    [][]bool    // agent tokens
	oldLogp [][]float64 // rollout policy, computed by a forward pass after the rollout
	entropy [][]float64 // rollout policy's token entropy (for the metric)
	refLogp [][]float64 // frozen reference policy (KL only)
	values  [][]float64 // critic before the update (GAE only)
	adv     [][]float64
	ret     [][]float64
	// tokReward is each token's reward as the estimator saw it (turn or
	// trajectory rewards placed on agent tokens, KL penalty included).
	tokReward [][]float64
	rewards   []float64 // trajectory rewards (user reward applied)
	// actorMask is the tokens the policy loss covers (Config.LossMask):
	// mask itself by default.
	actorMask [][]bool
}

// pack concatenates the token sequences of trajs for one Forward.
func pack(trajs []*rollout.Trajectory) (tokens, lens []int) {
	for _, t := range trajs {
		tokens = append(tokens, t.Tokens...)
		lens = append(lens, len(t.Tokens))
	}
	return tokens, lens
}

// agentTargets is the Agent masks of trajs, packed as pack packs their
// tokens: the tokens whose log-probabilities and entropies the trainer
// reads (the loss, the KL, the entropy metrics and filters all cover the
// agent's tokens only), as Want.Targets.
func agentTargets(trajs []*rollout.Trajectory) []bool {
	var out []bool
	for _, t := range trajs {
		out = append(out, t.Agent...)
	}
	return out
}

// unpack splits a packed per-token array into per-trajectory float64 rows.
func unpack(x []float32, lens []int) [][]float64 {
	rows := make([][]float64, len(lens))
	o := 0
	for i, L := range lens {
		r := make([]float64, L)
		for j := range r {
			r[j] = float64(x[o+j])
		}
		rows[i], o = r, o+L
	}
	return rows
}

// packGrad flattens per-trajectory gradient rows into a packed float32
// array, the form Model.Backward takes. nil rows give nil.
func packGrad(rows [][]float64, total int) []float32 {
	if rows == nil {
		return nil
	}
	out := make([]float32, 0, total)
	for _, r := range rows {
		for _, v := range r {
			out = append(out, float32(v))
		}
	}
	return out
}

// maxForwardTokens bounds one Forward's packed length, so evaluating a large
// batch does not hold every activation at once.
const maxForwardTokens = 16384

// evaluate runs n over trajs in chunks of at most limit tokens and
// returns the per-trajectory log-probs, entropies and values it was asked
// for. No Backward follows: a prompt that trajectories share runs once
// (Want.NoGrad).
func evaluate(n *model.Model, trajs []*rollout.Trajectory, want model.Want, limit int) (logp, ent, val [][]float64, err error) {
	want.NoGrad = true
	for _, p := range forwardChunks(trajs, limit) {
		tokens, lens := pack(trajs[p[0]:p[1]])
		if want.LM {
			want.Targets = agentTargets(trajs[p[0]:p[1]])
		}
		out, err := n.Forward(tokens, lens, want)
		if err != nil {
			return nil, nil, nil, err
		}
		if want.LM {
			logp = append(logp, unpack(out.LogProb, lens)...)
			ent = append(ent, unpack(out.Entropy, lens)...)
		}
		if want.Value {
			val = append(val, unpack(out.Value, lens)...)
		}
	}
	return logp, ent, val, nil
}

// forwardChunks cuts trajs into the runs evaluate forwards together: as
// many whole trajectories as fit in limit tokens (a longer one alone), as
// [first, end) pairs.
func forwardChunks(trajs []*rollout.Trajectory, limit int) [][2]int {
	var out [][2]int
	for lo := 0; lo < len(trajs); {
		hi, size := lo, 0
		for hi < len(trajs) && (hi == lo || size+len(trajs[hi].Tokens) <= limit) {
			size += len(trajs[hi].Tokens)
			hi++
		}
		out = append(out, [2]int{lo, hi})
		lo = hi
	}
	return out
}

// placeRewards puts a trajectory's reward on its agent tokens: the whole
// reward on the last turn's last token (placement last), or each turn's
// reward on that turn's last token (placement turn). A user reward replaces
// the sum of turn rewards; under turn placement its difference from that
// sum goes to the last turn.
func placeRewards(placement string, t *rollout.Trajectory, reward float64) ([]float64, error) {
	turnRewards := t.TurnRewards()
	var sum float64
	for _, r := range turnRewards {
		sum += r
	}
	if n := len(turnRewards); n > 0 {
		turnRewards[n-1] += reward - sum
	}
	return algo.PlaceRewards(placement, t.TurnEnd, turnRewards)
}

// checkFinite returns an error naming the first NaN or Inf of rows.
func checkFinite(step int, what string, rows [][]float64) error {
	for i, r := range rows {
		for j, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("step %d: %s of trajectory %d, token %d is %v", step, what, i, j, v)
			}
		}
	}
	return nil
}

// subset is the batch of b's trajectories idx, in that order, with every
// per-token array (advantages included: they stay the whole batch's).
func (b *batch) subset(idx []int) *batch {
	s := &batch{}
	for _, i := range idx {
		s.trajs = append(s.trajs, b.trajs[i])
		s.rewards = append(s.rewards, b.rewards[i])
		s.mask = append(s.mask, b.mask[i])
		s.actorMask = append(s.actorMask, b.actorMask[i])
	}
	for _, r := range []struct{ dst, src *[][]float64 }{
		{&s.oldLogp, &b.oldLogp}, {&s.entropy, &b.entropy}, {&s.refLogp, &b.refLogp},
		{&s.values, &b.values}, {&s.adv, &b.adv}, {&s.ret, &b.ret}, {&s.tokReward, &b.tokReward},
	} {
		if *r.src == nil {
			continue
		}
		for _, i := range idx {
			*r.dst = append(*r.dst, (*r.src)[i])
		}
	}
	return s
}
