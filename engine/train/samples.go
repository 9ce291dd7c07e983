package train

import (
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/rollout"
)

// valSamples is how many validation episodes each validation keeps as
// samples: the first ones, on the same held-out seeds every time.
const valSamples = 2

// sampleThisStep says whether a training step keeps a sample: the first
// step, every validation step and the last, so a run keeps a handful.
func (t *Trainer) sampleThisStep(step int) bool {
	c := &t.cfg
	return step == 1 || step == c.Steps || (c.ValEvery > 0 && step%c.ValEvery == 0)
}

// keepTrainSample records the first kept trajectory of b with the
// per-token rewards, values, advantages and returns its update used.
func (t *Trainer) keepTrainSample(step int, b *batch) {
	if len(b.trajs) == 0 || !t.sampleThisStep(step) {
		return
	}
	tr := b.trajs[0]
	s := t.sample(step, metrics.SplitTrain, tr, b.rewards[0])
	turn := 0
	for j, agent := range tr.Agent {
		if !agent {
			continue
		}
		tok := metrics.SampleToken{Text: t.decode(tr.Tokens[j : j+1]), Turn: turn,
			Reward: b.tokReward[0][j], Advantage: b.adv[0][j]}
		if b.values != nil { // a critic
			tok.Value = b.values[0][j]
		}
		if b.ret != nil { // GAE's returns; critic-free estimators have none
			tok.Return = b.ret[0][j]
		}
		s.Tokens = append(s.Tokens, tok)
		if tr.TurnEnd[j] {
			turn++
		}
	}
	t.keepSample(s)
}

// keepValSamples records the first valSamples episodes of a validation.
func (t *Trainer) keepValSamples(step int, trajs []*rollout.Trajectory, rewards []float64) {
	for i := 0; i < len(trajs) && i < valSamples; i++ {
		t.keepSample(t.sample(step, metrics.SplitVal, trajs[i], rewards[i]))
	}
}

func (t *Trainer) sample(step int, split string, tr *rollout.Trajectory, reward float64) metrics.Sample {
	s := metrics.Sample{Step: step, Split: split, Seed: tr.EnvSeed, Reward: reward,
		Success: tr.Success, Text: t.decode(tr.Tokens)}
	for _, turn := range tr.Turns {
		s.Turns = append(s.Turns, metrics.SampleTurn{Response: turn.Response, Actions: turn.Executed, Reward: turn.Reward})
	}
	return s
}

func (t *Trainer) keepSample(s metrics.Sample) {
	t.History.Samples = append(t.History.Samples, s)
	t.appendJSONL("samples.jsonl", s)
}

// decode is the text of tokens the policy produced or read; they come
// from its own vocabulary, so an error cannot happen short of a bug, and
// the text says so rather than failing the run.
func (t *Trainer) decode(ids []int) string {
	s, err := t.Tok.Decode(ids)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return s
}
